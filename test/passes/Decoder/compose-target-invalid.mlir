// RUN: spec-opt %s --spec-compose-target -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-compose-target='sampling=true top-p=0' -split-input-file 2>&1 | FileCheck %s --check-prefix=TOP-P
// RUN: not spec-opt %s --spec-compose-target='target=missing' -split-input-file 2>&1 | FileCheck %s --check-prefix=MISSING

// The decoder's name is taken.
func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
// expected-error @below {{a symbol named @decoder exists already; choose another decoder name}}
func.func private @decoder()
// TOP-P: error: top_p must lie in (0, 1], got 0.0
// MISSING: error: no function @missing for the target

// -----

// expected-error @below {{no function has role 'target' (set spec.role, or name it with the 'target' option)}}
module {
  func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32>
      attributes {spec.role = #spec.role<draft>}
}

// -----

// A target must take token ids first and return logits first.
// expected-error @below {{'spec.decoder' op target @target must take token ids (a tensor of signless integers) as its first argument, got 'tensor<?x4xf32>'}}
func.func private @target(tensor<?x4xf32>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
