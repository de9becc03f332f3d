// RUN: spec-opt %s --spec-order-globals | FileCheck %s
// RUN: spec-opt %s --spec-order-globals --spec-order-globals | FileCheck %s

// Constant globals are named and placed by their first read in program
// order, whatever names and places bufferization gave them; other globals
// and symbols keep theirs.

// CHECK:      memref.global "private" constant @__constant_0 : memref<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK-NEXT: memref.global "private" constant @__constant_1 : memref<1xi64> = dense<7>
// CHECK-NEXT: memref.global "private" constant @__constant_3 : memref<1xi64> = dense<9>
// CHECK-NEXT: memref.global "private" constant @__constant_4 : memref<3xf32> = dense<0.000000e+00>
// CHECK-NEXT: func.func private @__constant_2()
// CHECK-NEXT: memref.global "private" @state : memref<1xi64> = dense<0>
// CHECK-NEXT: memref.global constant @exported : memref<1xi64> = dense<1>

func.func private @__constant_2()
memref.global "private" @state : memref<1xi64> = dense<0>
memref.global constant @exported : memref<1xi64> = dense<1>
memref.global "private" constant @__constant_3xf32_unused : memref<3xf32> = dense<0.0>
memref.global "private" constant @__constant_1xi64_9 : memref<1xi64> = dense<9>
memref.global "private" constant @__constant_1xi64 : memref<1xi64> = dense<7>
memref.global "private" constant @__constant_2xf32_5 : memref<2xf32> = dense<[1.0, 2.0]>

// CHECK-LABEL: func.func @first
// CHECK-NEXT: memref.get_global @__constant_0 : memref<2xf32>
// CHECK-NEXT: memref.get_global @__constant_1 : memref<1xi64>
// CHECK-NEXT: memref.get_global @state
// CHECK-NEXT: memref.get_global @exported
func.func @first() -> (memref<2xf32>, memref<1xi64>, memref<1xi64>, memref<1xi64>) {
  %0 = memref.get_global @__constant_2xf32_5 : memref<2xf32>
  %1 = memref.get_global @__constant_1xi64 : memref<1xi64>
  %2 = memref.get_global @state : memref<1xi64>
  %3 = memref.get_global @exported : memref<1xi64>
  return %0, %1, %2, %3 : memref<2xf32>, memref<1xi64>, memref<1xi64>, memref<1xi64>
}

// The name __constant_2 is taken by a function: it is skipped.
// CHECK-LABEL: func.func @second
// CHECK-NEXT: memref.get_global @__constant_1 : memref<1xi64>
// CHECK-NEXT: memref.get_global @__constant_3 : memref<1xi64>
func.func @second() -> (memref<1xi64>, memref<1xi64>) {
  %0 = memref.get_global @__constant_1xi64 : memref<1xi64>
  %1 = memref.get_global @__constant_1xi64_9 : memref<1xi64>
  return %0, %1 : memref<1xi64>, memref<1xi64>
}
