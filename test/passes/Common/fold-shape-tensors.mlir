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

// -----

// ONNX Expand's target shape, `Where(Equal(shape, -1), 1, shape)`, as the
// importer writes it: elementwise generics on a shape built from scalars, a
// fill of ones and a constant. They become the scalar ops per element, and
// the shape's elements fold into them. A 0-d size divided by a constant and
// an iota (linalg.index) fold the same way.
// CHECK-LABEL: func.func @expand_shape
// CHECK-SAME: (%[[A:.*]]: i64, %[[B:.*]]: i64)
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[MINUS1:.*]] = arith.constant -1 : i64
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: %[[EQ:.*]] = arith.cmpi eq, %[[A]], %[[MINUS1]] : i64
// CHECK: %[[SEL:.*]] = arith.select %[[EQ]], %[[ONE]], %[[A]] : i64
// CHECK: %[[DIV:.*]] = arith.divsi %[[B]], %[[TWO]] : i64
// CHECK: return %[[SEL]], %[[ONE]], %[[DIV]]
// SMALL-LABEL: func.func @expand_shape
// SMALL-COUNT-3: linalg.generic
func.func @expand_shape(%a: i64, %b: i64) -> (i64, i64, i64) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1_i64 = arith.constant 1 : i64
  %minus1 = arith.constant dense<-1> : tensor<4xi64>
  %two = arith.constant dense<2> : tensor<i64>
  %shape = tensor.from_elements %a, %c1_i64, %c1_i64, %c1_i64 : tensor<4xi64>
  %empty = tensor.empty() : tensor<4xi64>
  %ones = linalg.fill ins(%c1_i64 : i64) outs(%empty : tensor<4xi64>) -> tensor<4xi64>
  %empty_i1 = tensor.empty() : tensor<4xi1>
  %eq = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%shape, %minus1 : tensor<4xi64>, tensor<4xi64>) outs(%empty_i1 : tensor<4xi1>) {
  ^bb0(%x: i64, %y: i64, %out: i1):
    %r = arith.cmpi eq, %x, %y : i64
    linalg.yield %r : i1
  } -> tensor<4xi1>
  %where = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%eq, %ones, %shape : tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) outs(%empty : tensor<4xi64>) {
  ^bb0(%c: i1, %x: i64, %y: i64, %out: i64):
    %r = arith.select %c, %x, %y : i64
    linalg.yield %r : i64
  } -> tensor<4xi64>
  %size = tensor.from_elements %b : tensor<i64>
  %empty_0d = tensor.empty() : tensor<i64>
  %half = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%size, %two : tensor<i64>, tensor<i64>) outs(%empty_0d : tensor<i64>) {
  ^bb0(%x: i64, %y: i64, %out: i64):
    %r = arith.divsi %x, %y : i64
    linalg.yield %r : i64
  } -> tensor<i64>
  %e0 = tensor.extract %where[%c0] : tensor<4xi64>
  %e2 = tensor.extract %where[%c2] : tensor<4xi64>
  %h = tensor.extract %half[] : tensor<i64>
  return %e0, %e2, %h : i64, i64, i64
}

// -----

// An iota over a 2x3 shape, broadcast along its rows: the element [1, 2] is
// linalg.index 1 at the sixth point, 2.
// CHECK-LABEL: func.func @iota
// CHECK-NOT: linalg.generic
// CHECK: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: return %[[TWO]]
func.func @iota() -> i64 {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %empty = tensor.empty() : tensor<2x3xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%empty : tensor<2x3xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 1 : index
    %r = arith.index_cast %i : index to i64
    linalg.yield %r : i64
  } -> tensor<2x3xi64>
  %e = tensor.extract %iota[%c1, %c2] : tensor<2x3xi64>
  return %e : i64
}

// -----

// Left alone: a generic reading a tensor computed elsewhere (an argument),
// one on floats, one with a reduction, one writing a transposed result.
// CHECK-LABEL: func.func @generics_left_alone
// CHECK-COUNT-4: linalg.generic
func.func @generics_left_alone(%t: tensor<4xi64>, %a: i64, %f: f32) -> (tensor<4xi64>, tensor<2xf32>, tensor<i64>, tensor<2x2xi64>) {
  %shape = tensor.from_elements %a, %a, %a, %a : tensor<4xi64>
  %empty = tensor.empty() : tensor<4xi64>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t, %shape : tensor<4xi64>, tensor<4xi64>) outs(%empty : tensor<4xi64>) {
  ^bb0(%x: i64, %y: i64, %out: i64):
    %r = arith.addi %x, %y : i64
    linalg.yield %r : i64
  } -> tensor<4xi64>
  %floats = tensor.from_elements %f, %f : tensor<2xf32>
  %empty_f = tensor.empty() : tensor<2xf32>
  %neg = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%floats : tensor<2xf32>) outs(%empty_f : tensor<2xf32>) {
  ^bb0(%x: f32, %out: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %zero = tensor.from_elements %a : tensor<i64>
  %total = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%shape : tensor<4xi64>) outs(%zero : tensor<i64>) {
  ^bb0(%x: i64, %out: i64):
    %r = arith.addi %x, %out : i64
    linalg.yield %r : i64
  } -> tensor<i64>
  %square = tensor.from_elements %a, %a, %a, %a : tensor<2x2xi64>
  %empty_2 = tensor.empty() : tensor<2x2xi64>
  %transposed = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]} ins(%square : tensor<2x2xi64>) outs(%empty_2 : tensor<2x2xi64>) {
  ^bb0(%x: i64, %out: i64):
    linalg.yield %x : i64
  } -> tensor<2x2xi64>
  return %sum, %neg, %total, %transposed : tensor<4xi64>, tensor<2xf32>, tensor<i64>, tensor<2x2xi64>
}
