// RUN: not spec-opt %s --spec-fold-shape-tensors='max-elements=0' 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: spec-opt %s --spec-fold-shape-tensors -split-input-file | FileCheck %s

// ZERO: spec-fold-shape-tensors: max-elements must be positive, got 0

// Otherwise the pass refuses nothing: it folds what it can compute as
// scalars and leaves the rest as it is. A concatenation with an input of
// dynamic size has no static element count, and stays.
// CHECK-LABEL: func.func @dynamic_input
// CHECK: tensor.concat
func.func @dynamic_input(%a: tensor<?xi64>, %b: tensor<2xi64>) -> tensor<?xi64> {
  %0 = tensor.concat dim(0) %a, %b : (tensor<?xi64>, tensor<2xi64>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}
