//===- Passes.td - spec dialect passes ---------------------*- tablegen -*-===//

#ifndef SPECULA_PASSES_PASSES_TD
#define SPECULA_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpecChooseGamma : Pass<"spec-choose-gamma", "::mlir::ModuleOp"> {
  let summary = "Choose how many tokens a draft proposes per step";
  let description = [{
    For every `spec.decoder` with an external draft, picks the number of
    proposed tokens gamma in `[1, max-gamma]` that maximizes the expected
    speedup over running the target alone (Leviathan et al., 2023):

      E[tokens per target step] = (1 - a^(gamma+1)) / (1 - a)
      speedup(gamma)            = E / (gamma * c + 1)

    where `a` is the per-token acceptance rate and `c` the cost of one draft
    step relative to one target step. `a` comes from the `acceptance-rate`
    option or else the decoder's `acceptance_rate` attribute. `c` comes from
    the `cost-ratio` option or else from the graphs: decoding is bound by
    memory traffic, so a step costs the bytes of weights it reads, and `c` is
    the ratio of the draft's to the target's constant weight bytes (constants
    in each function and the functions it calls).

    The chosen gamma is written into the decoder's `#spec.draft` proposer and
    reported as a remark with its reasoning. When no gamma predicts a speedup
    above 1, the decoder is left unchanged and a warning says that the draft
    does not pay, with the numbers. Decoders with MTP heads are skipped: their
    gamma is the number of heads.

    Example: `spec-opt --spec-choose-gamma='acceptance-rate=0.8 max-gamma=6'`
  }];
  let options = [
    Option<"acceptanceRate", "acceptance-rate", "double", "-1.0",
           "Per-token acceptance rate in [0, 1]; default: the decoder's "
           "acceptance_rate attribute">,
    Option<"costRatio", "cost-ratio", "double", "-1.0",
           "Cost of one draft step relative to one target step (> 0); "
           "default: the ratio of their weight bytes">,
    Option<"maxGamma", "max-gamma", "int64_t", "8",
           "Largest gamma considered (>= 1)">
  ];
}

#endif // SPECULA_PASSES_PASSES_TD
