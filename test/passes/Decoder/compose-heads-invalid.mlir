// RUN: spec-opt %s --spec-compose-heads -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-compose-heads='depth=3' -split-input-file 2>&1 | FileCheck %s --check-prefix=DEPTH
// RUN: not spec-opt %s --spec-compose-heads='heads=head2,head1' -split-input-file 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not spec-opt %s --spec-compose-heads='sampling=true temperature=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=TEMPERATURE
// RUN: not spec-opt %s --spec-compose-heads='tree-parents=0,0 tree-ranks=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=TREE
// RUN: not spec-opt %s --spec-compose-heads='depth=-1' -split-input-file 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not spec-opt %s --spec-compose-heads='target=missing' -split-input-file 2>&1 | FileCheck %s --check-prefix=MISSING

// Medusa heads cannot run again at the next depth.
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @head2(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>}
spec.decoder @decoder2 target(@target) proposer(#spec.mtp<[@head1]>) verify(#spec.greedy)
// DEPTH: error: depth 3 needs 3 heads but 2 are given; only a DeepSeek-style MTP module can run again at the next depth, and @head2 is not one
// ORDER: error: 'spec.decoder' op head 1 @head2 has depth 2; heads must be listed in depth order 1..2
// TEMPERATURE: error: temperature must be positive and finite, got 0.0 (use #spec.greedy for temperature 0)
// TREE: error: spec-compose-heads: 
// NEGATIVE: error: spec-compose-heads: depth must not be negative, got -1
// MISSING: error: no function @missing for the target

// -----

// expected-error @below {{no function has role 'medusa_head' or 'mtp_module' (set spec.role, or name the heads with the 'heads' option)}}
module {
  func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
      attributes {spec.role = #spec.role<target>}
}

// -----

// expected-error @below {{no function has role 'target' (set spec.role, or name it with the 'target' option)}}
module {
  func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
      attributes {spec.role = #spec.role<medusa_head, depth = 1>}
}

// -----

// Heads of two kinds: the decoder, reported where the target is, does not
// verify.
// expected-error @below {{'spec.decoder' op head 2 @module2 is a 'mtp_module' but head 1 is a 'medusa_head'; one decoder uses one kind of head}}
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
func.func private @module2(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<mtp_module, depth = 2>}

// -----

// The decoder's name is taken.
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @head1(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>}
// expected-error @below {{a symbol named @decoder exists already; choose another decoder name}}
func.func private @decoder()
