// RUN: spec-opt %s --spec-fold-shape-tensors --split-input-file | FileCheck %s
// RUN: spec-opt %s --spec-fold-shape-tensors='max-elements=3' --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: spec-opt %s --spec-fold-shape-tensors='max-elements=32' --split-input-file | FileCheck %s --check-prefix=LARGE

// An ONNX Reshape's target shape as the importer writes it: two sizes the
// graph computed (Unsqueeze of a scalar: a reshape of a 0-d tensor) and two
// constants, concatenated, then read back element by element. What is left
// are the scalars; the shape the reshape takes is built from them.
// CHECK-LABEL: func.func @reshape_target
// CHECK-SAME: (%[[X:.*]]: tensor<?xf32>, %[[A:.*]]: i64, %[[B:.*]]: i64)
// CHECK-NOT: tensor.concat
// CHECK-NOT: tensor.extract
// CHECK-DAG: %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[THIRTYTWO:.*]] = arith.constant 32 : i64
// CHECK: %[[SHAPE:.*]] = tensor.from_elements %[[A]], %[[B]], %[[FOUR]], %[[THIRTYTWO]] : tensor<4xi64>
// CHECK: %[[R:.*]] = tensor.reshape %[[X]](%[[SHAPE]])
// CHECK: return %[[R]], %[[A]], %[[B]], %[[FOUR]]
// SMALL-LABEL: func.func @reshape_target
// SMALL: tensor.concat
// LARGE-LABEL: func.func @reshape_target
// LARGE-NOT: tensor.concat
func.func @reshape_target(%x: tensor<?xf32>, %a: i64, %b: i64) -> (tensor<?x?x?x?xf32>, i64, i64, i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant dense<1> : tensor<1xindex>
  %four = arith.constant dense<4> : tensor<1xi64>
  %thirtytwo = arith.constant dense<32> : tensor<1xi64>
  %sa = tensor.from_elements %a : tensor<i64>
  %sb = tensor.from_elements %b : tensor<i64>
  %ua = tensor.reshape %sa(%one) : (tensor<i64>, tensor<1xindex>) -> tensor<1xi64>
  %ub = tensor.reshape %sb(%one) : (tensor<i64>, tensor<1xindex>) -> tensor<1xi64>
  %shape = tensor.concat dim(0) %ua, %ub, %four, %thirtytwo : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = tensor.reshape %x(%shape) : (tensor<?xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %e0 = tensor.extract %shape[%c0] : tensor<4xi64>
  %e1 = tensor.extract %shape[%c1] : tensor<4xi64>
  %e2 = tensor.extract %shape[%c2] : tensor<4xi64>
  return %r, %e0, %e1, %e2 : tensor<?x?x?x?xf32>, i64, i64, i64
}

// -----

// An element of a reshape between static shapes is the source's element at
// the same linear index: [1, 0] of a 2x3 view of 3x2 is linear 3, [1, 1].
// CHECK-LABEL: func.func @static_reshape
// CHECK-SAME: (%[[T:.*]]: tensor<3x2xi64>)
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[E:.*]] = tensor.extract %[[T]][%[[C1]], %[[C1]]] : tensor<3x2xi64>
// CHECK: return %[[E]]
func.func @static_reshape(%t: tensor<3x2xi64>) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %shape = arith.constant dense<[2, 3]> : tensor<2xindex>
  %r = tensor.reshape %t(%shape) : (tensor<3x2xi64>, tensor<2xindex>) -> tensor<2x3xi64>
  %e = tensor.extract %r[%c1, %c0] : tensor<2x3xi64>
  return %e : i64
}

// -----

// Left alone: data (float) concatenations, such as a rotary embedding's
// halves, concatenations of dynamic or more than max-elements elements,
// extracts at indices not known at compile time or of dynamic reshapes.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-3: tensor.concat
// CHECK: %[[R:.*]] = tensor.reshape
// CHECK: tensor.extract %[[R]][%{{.*}}] : tensor<3xi64>
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<3xi64>
// LARGE-LABEL: func.func @left_alone
// LARGE-COUNT-2: tensor.concat
// LARGE-NOT: tensor.concat
func.func @left_alone(%f: tensor<1x16xf32>, %g: tensor<1x16xf32>, %d: tensor<?xi64>, %big: tensor<20xi64>, %s: tensor<?xi64>, %t: tensor<3xi64>, %i: index) -> (tensor<1x32xf32>, tensor<?xi64>, tensor<21xi64>, i64, i64) {
  %c0 = arith.constant 0 : index
  %one = arith.constant dense<1> : tensor<1xi64>
  %halves = tensor.concat dim(1) %f, %g : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x32xf32>
  %dyn = tensor.concat dim(0) %d, %one : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %long = tensor.concat dim(0) %big, %one : (tensor<20xi64>, tensor<1xi64>) -> tensor<21xi64>
  %shape = arith.constant dense<[3]> : tensor<1xindex>
  %r = tensor.reshape %s(%shape) : (tensor<?xi64>, tensor<1xindex>) -> tensor<3xi64>
  %e0 = tensor.extract %r[%c0] : tensor<3xi64>
  %e1 = tensor.extract %t[%i] : tensor<3xi64>
  return %halves, %dyn, %long, %e0, %e1 : tensor<1x32xf32>, tensor<?xi64>, tensor<21xi64>, i64, i64
}

// -----

// Left alone, not crashed on: a concatenation whose static size comes only
// from its result type, and an extract out of bounds of an empty reshape.
// CHECK-LABEL: func.func @odd_sizes
// LARGE-LABEL: func.func @odd_sizes
// LARGE: tensor.concat
// CHECK: tensor.concat
// CHECK: %[[R:.*]] = tensor.reshape
// CHECK: tensor.extract %[[R]]
func.func @odd_sizes(%d: tensor<?xi64>, %z: tensor<0xi64>) -> (tensor<3xi64>, i64) {
  %c0 = arith.constant 0 : index
  %one = arith.constant dense<1> : tensor<1xi64>
  %c = tensor.concat dim(0) %d, %one : (tensor<?xi64>, tensor<1xi64>) -> tensor<3xi64>
  %shape = arith.constant dense<[0, 1]> : tensor<2xindex>
  %r = tensor.reshape %z(%shape) : (tensor<0xi64>, tensor<2xindex>) -> tensor<0x1xi64>
  %e = tensor.extract %r[%c0, %c0] : tensor<0x1xi64>
  return %c, %e : tensor<3xi64>, i64
}
