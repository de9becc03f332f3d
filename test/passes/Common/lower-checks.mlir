// RUN: spec-opt %s --spec-lower-checks | FileCheck %s

// Each cf.assert becomes a call of the runtime's specrt_check with the
// condition and the message (one NUL-terminated global per distinct
// message); the code goes on after a failed check.
// CHECK-DAG: llvm.mlir.global internal constant @spec_check_message("node 'Slice#0' (Slice, opset 17): steps must not be 0\00")
// CHECK-DAG: llvm.mlir.global internal constant @spec_check_message_0("another check\00")
// CHECK-DAG: func.func private @specrt_check(i1, !llvm.ptr)
// CHECK-LABEL: func.func @slice(
// CHECK-SAME: %[[STEP:[^:]*]]: index
// CHECK: %[[OK:.*]] = arith.cmpi ne, %[[STEP]], %{{.*}} : index
// CHECK-NEXT: %[[MESSAGE:.*]] = llvm.mlir.addressof @spec_check_message : !llvm.ptr
// CHECK-NEXT: call @specrt_check(%[[OK]], %[[MESSAGE]]) : (i1, !llvm.ptr) -> ()
// CHECK-NEXT: %[[AGAIN:.*]] = llvm.mlir.addressof @spec_check_message : !llvm.ptr
// CHECK-NEXT: call @specrt_check(%[[OK]], %[[AGAIN]])
// CHECK-NEXT: %[[OTHER:.*]] = llvm.mlir.addressof @spec_check_message_0 : !llvm.ptr
// CHECK-NEXT: call @specrt_check(%[[OK]], %[[OTHER]])
// CHECK-NOT: cf.assert
// CHECK: return %[[STEP]]
func.func @slice(%step: index) -> index {
  %c0 = arith.constant 0 : index
  %ok = arith.cmpi ne, %step, %c0 : index
  cf.assert %ok, "node 'Slice#0' (Slice, opset 17): steps must not be 0"
  cf.assert %ok, "node 'Slice#0' (Slice, opset 17): steps must not be 0"
  cf.assert %ok, "another check"
  return %step : index
}
