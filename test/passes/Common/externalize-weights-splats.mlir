// RUN: spec-opt %s --spec-externalize-weights='path=%t.bin min-bytes=1 splats=true' | FileCheck %s
// RUN: od -An -v -tx1 %t.bin | FileCheck %s --check-prefix=FILE
// RUN: spec-opt %s --spec-externalize-weights='path=%t.default.bin min-bytes=1' | FileCheck %s --check-prefix=DEFAULT

// With splats=true (what spec-to-cuda asks for: kernels cannot read the
// host's globals) splats, booleans (a byte each) and index arrays (8 bytes
// an element) move too, expanded: no constant stays in code.
// CHECK-NOT: llvm.mlir.global private constant
// CHECK: llvm.getelementptr inbounds %{{.*}}[0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.getelementptr inbounds %{{.*}}[64] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.getelementptr inbounds %{{.*}}[128] : (!llvm.ptr) -> !llvm.ptr, i8

// The splat's 16 floats (1.0 is 00 00 80 3f), the booleans at 64, the index
// array at 128.
// FILE-COUNT-4: 00 00 80 3f 00 00 80 3f 00 00 80 3f 00 00 80 3f
// FILE-NEXT: 01 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00
// FILE-NEXT: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
// FILE-NEXT: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
// FILE-NEXT: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
// FILE-NEXT: 03 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00
// FILE-NOT: {{.}}

// Without it the splat stays in code; the booleans and the index array move.
// DEFAULT: llvm.mlir.global private constant @splat
// DEFAULT-NOT: llvm.mlir.global private constant

module {
  llvm.mlir.global private constant @splat(dense<1.0> : tensor<16xf32>) {addr_space = 0 : i32} : !llvm.array<16 x f32>
  llvm.mlir.global private constant @flags(dense<[true, false, true]> : tensor<3xi1>) {addr_space = 0 : i32} : !llvm.array<3 x i1>
  llvm.mlir.global private constant @shape(dense<[3, 4]> : tensor<2xindex>) {addr_space = 0 : i32} : !llvm.array<2 x i64>
  llvm.func @weights() -> !llvm.struct<(ptr, ptr, ptr)> {
    %p = llvm.mlir.addressof @splat : !llvm.ptr
    %f = llvm.mlir.addressof @flags : !llvm.ptr
    %s = llvm.mlir.addressof @shape : !llvm.ptr
    %0 = llvm.mlir.poison : !llvm.struct<(ptr, ptr, ptr)>
    %1 = llvm.insertvalue %p, %0[0] : !llvm.struct<(ptr, ptr, ptr)>
    %2 = llvm.insertvalue %f, %1[1] : !llvm.struct<(ptr, ptr, ptr)>
    %3 = llvm.insertvalue %s, %2[2] : !llvm.struct<(ptr, ptr, ptr)>
    llvm.return %3 : !llvm.struct<(ptr, ptr, ptr)>
  }
}
