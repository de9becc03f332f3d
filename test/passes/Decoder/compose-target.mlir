// RUN: spec-opt %s --spec-compose-target | FileCheck %s
// RUN: spec-opt %s --spec-compose-target='target=target decoder-name=alone sampling=true temperature=0.7 top-k=4 top-p=0.5' | FileCheck %s --check-prefix=OPTIONS

// The target alone: a decoder that proposes nothing (specc without --draft
// or --mtp-head). Other functions (a draft) are left alone.

func.func private @target(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<draft>}

// CHECK: spec.decoder @decoder target(@target) proposer(#spec.none) verify(#spec.greedy)
// OPTIONS: spec.decoder @alone target(@target) proposer(#spec.none) verify(#spec.rejection<temperature = 0.7, top_k = 4, top_p = 0.5>)
