// RUN: spec-opt %s --spec-slot-target -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-slot-target=slots=0 -split-input-file 2>&1 | FileCheck %s --check-prefix=ZERO

// ZERO: spec-slot-target: slots must be at least 1, got 0

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
// expected-error @below {{decoder @decoder already has a batched target}}
spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy) {spec.slot_target = @target}

// -----

// The draft's twin is cloned from its body.
func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<draft>}
// expected-error @below {{decoder @decoder: no draft function body @draft}}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)
