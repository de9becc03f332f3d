// RUN: spec-opt %s --spec-externalize-weights='path=%t.bin min-bytes=16' | FileCheck %s
// RUN: od -An -v -tx1 %t.bin | FileCheck %s --check-prefix=FILE
// RUN: spec-opt %s --spec-externalize-weights='path=%t.all.bin min-bytes=1' | FileCheck %s --check-prefix=ALL
// RUN: wc -c < %t.all.bin | FileCheck %s --check-prefix=ALLSIZE

// Constants of at least min-bytes bytes move into the weights file at 64-byte
// aligned offsets (the resource first, then the dense array); code reaches
// them through @spec_weights_base, which the runtime sets to the mapped
// file. Small and splat constants stay.

// CHECK: llvm.mlir.global external @spec_weights_base() {{.*}} : !llvm.ptr {
// CHECK-NEXT: %[[ZERO:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.return %[[ZERO]] : !llvm.ptr
// CHECK-NOT: @resource
// CHECK-NOT: @dense
// CHECK: llvm.mlir.global private constant @small(dense<[1, 2]> : tensor<2xi32>)
// CHECK: llvm.mlir.global private constant @splat(dense<1.000000e+00> : tensor<16xf32>)
// CHECK-LABEL: llvm.func @weights()
// CHECK: %[[A:.*]] = llvm.mlir.addressof @spec_weights_base : !llvm.ptr
// CHECK: %[[BASE:.*]] = llvm.load %[[A]] invariant {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[R:.*]] = llvm.getelementptr inbounds %[[BASE]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[B:.*]] = llvm.mlir.addressof @spec_weights_base : !llvm.ptr
// CHECK: %[[BASE2:.*]] = llvm.load %[[B]] invariant {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[D:.*]] = llvm.getelementptr inbounds %[[BASE2]][64] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[S:.*]] = llvm.mlir.addressof @small : !llvm.ptr
// CHECK: %[[P:.*]] = llvm.mlir.addressof @splat : !llvm.ptr
// CHECK: llvm.insertvalue %[[R]], %{{.*}}[0]
// CHECK: llvm.insertvalue %[[D]], %{{.*}}[1]
// CHECK: llvm.insertvalue %[[S]], %{{.*}}[2]
// CHECK: llvm.insertvalue %[[P]], %{{.*}}[3]

// The file: the resource's 16 bytes, zeros up to offset 64, the array.
// FILE: 01 00 00 00 02 00 00 00 03 00 00 00 04 00 00 00
// FILE-NEXT: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
// FILE-NEXT: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
// FILE-NEXT: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
// FILE-NEXT: 05 00 00 00 00 00 00 00 06 00 00 00 00 00 00 00
// FILE-NEXT: 07 00 00 00 00 00 00 00 08 00 00 00 00 00 00 00
// FILE-NOT: {{.}}

// With min-bytes=1 the small array moves too (at offset 128); splats never.
// ALL-NOT: @small
// ALL: llvm.mlir.global private constant @splat
// ALL: llvm.getelementptr inbounds %{{.*}}[128] : (!llvm.ptr) -> !llvm.ptr, i8
// ALLSIZE: 136

module {
  llvm.mlir.global private constant @resource(dense_resource<blob> : tensor<4xi32>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<4 x i32>
  llvm.mlir.global private constant @dense(dense<[5, 6, 7, 8]> : tensor<4xi64>) {addr_space = 0 : i32} : !llvm.array<4 x i64>
  llvm.mlir.global private constant @small(dense<[1, 2]> : tensor<2xi32>) {addr_space = 0 : i32} : !llvm.array<2 x i32>
  llvm.mlir.global private constant @splat(dense<1.0> : tensor<16xf32>) {addr_space = 0 : i32} : !llvm.array<16 x f32>
  llvm.func @weights() -> !llvm.struct<(ptr, ptr, ptr, ptr)> {
    %r = llvm.mlir.addressof @resource : !llvm.ptr
    %d = llvm.mlir.addressof @dense : !llvm.ptr
    %s = llvm.mlir.addressof @small : !llvm.ptr
    %p = llvm.mlir.addressof @splat : !llvm.ptr
    %0 = llvm.mlir.poison : !llvm.struct<(ptr, ptr, ptr, ptr)>
    %1 = llvm.insertvalue %r, %0[0] : !llvm.struct<(ptr, ptr, ptr, ptr)>
    %2 = llvm.insertvalue %d, %1[1] : !llvm.struct<(ptr, ptr, ptr, ptr)>
    %3 = llvm.insertvalue %s, %2[2] : !llvm.struct<(ptr, ptr, ptr, ptr)>
    %4 = llvm.insertvalue %p, %3[3] : !llvm.struct<(ptr, ptr, ptr, ptr)>
    llvm.return %4 : !llvm.struct<(ptr, ptr, ptr, ptr)>
  }
}

{-#
  dialect_resources: {
    builtin: {
      blob: "0x0400000001000000020000000300000004000000"
    }
  }
#-}
