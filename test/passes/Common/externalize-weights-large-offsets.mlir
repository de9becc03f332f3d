// Offsets from 256 MiB on do not fit a constant GEP index (29 signed bits in
// MLIR's LLVM dialect, silently truncated): they become i64 values. The file
// goes to /dev/null (it would hold 256 MiB of alignment zeros).
// RUN: spec-opt %s --spec-externalize-weights='path=/dev/null min-bytes=1' | FileCheck %s

// CHECK-LABEL: llvm.func @weights()
// CHECK: llvm.getelementptr inbounds %{{.*}}[0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.getelementptr inbounds %{{.*}}[134217728] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[OFFSET:.*]] = llvm.mlir.constant(268435456 : i64) : i64
// CHECK: llvm.getelementptr inbounds %{{.*}}[%[[OFFSET]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8

module {
  llvm.mlir.global private constant @first(dense<[1, 2]> : tensor<2xi32>) {addr_space = 0 : i32} : !llvm.array<2 x i32>
  llvm.mlir.global private constant @at128MiB(dense<[3, 4]> : tensor<2xi32>) {addr_space = 0 : i32, alignment = 134217728 : i64} : !llvm.array<2 x i32>
  llvm.mlir.global private constant @at256MiB(dense<[5, 6]> : tensor<2xi32>) {addr_space = 0 : i32, alignment = 268435456 : i64} : !llvm.array<2 x i32>
  llvm.func @weights() -> !llvm.struct<(ptr, ptr, ptr)> {
    %a = llvm.mlir.addressof @first : !llvm.ptr
    %b = llvm.mlir.addressof @at128MiB : !llvm.ptr
    %c = llvm.mlir.addressof @at256MiB : !llvm.ptr
    %0 = llvm.mlir.poison : !llvm.struct<(ptr, ptr, ptr)>
    %1 = llvm.insertvalue %a, %0[0] : !llvm.struct<(ptr, ptr, ptr)>
    %2 = llvm.insertvalue %b, %1[1] : !llvm.struct<(ptr, ptr, ptr)>
    %3 = llvm.insertvalue %c, %2[2] : !llvm.struct<(ptr, ptr, ptr)>
    llvm.return %3 : !llvm.struct<(ptr, ptr, ptr)>
  }
}
