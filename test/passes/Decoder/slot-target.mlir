// RUN: spec-opt %s --spec-slot-target | FileCheck %s
// RUN: spec-opt %s --spec-slot-target=slots=3 | FileCheck %s --check-prefix=SLOTS

// Each decoder's target gets a batched twin, named on the decoder, for
// spec-kv-cache-inplace to give a cache of slots; the decoder's loops keep
// the target. A name already taken gets a suffix.

func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @target_slots(tensor<?xi64>)

spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy)

// CHECK: func.func private @target(tensor<?x?xi64>) -> tensor<?x?x8xf32> attributes {spec.role = #spec.role<target>}
// CHECK-NEXT: func.func private @[[CLONE:target_slots_[0-9]+]](tensor<?x?xi64>) -> tensor<?x?x8xf32> attributes {spec.role = #spec.role<target>, spec.slots = 8 : i64}
// CHECK: spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy) {spec.slot_target = @[[CLONE]]}
// SLOTS: spec.slots = 3 : i64
