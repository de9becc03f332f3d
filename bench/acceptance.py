#!/usr/bin/env python3
"""Acceptance of the compiled decoders vs the training-time reference.

models/train.py measured, in torch, how many tokens per target forward the
draft, the Medusa heads and the MTP module give under greedy speculative
decoding on 20 held-out prompts of 64 bytes, 128 new tokens each
(models/metrics.json, models/README.md). This script rebuilds exactly those
prompts (the same corpus split and seed, from models/train.py), compiles the
three decoders with `specc -o`, runs every prompt with `spec-run --json`
and prints the compiled system's tokens per target forward and acceptance
per position next to the reference.

    /usr/bin/python3 bench/acceptance.py [--build build] [--json out.json]

Needs numpy and torch (models/train.py imports them), and the corpus the
models were trained on (this machine's Python standard library).
"""

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, MODELS)
from speculative_speedup import find_tools, run  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--prompts", type=int, default=20,
                        help="how many of the 20 reference prompts to run")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if not 1 <= args.prompts <= 20:
        sys.exit("error: --prompts must be between 1 and 20")
    specc, spec_run = find_tools(args.build)
    try:
        import train  # models/train.py: the corpus split and prompt choice
    except ImportError as error:
        sys.exit(f"error: models/train.py needs {error.name}; run with "
                 "Debian's python3 with python3-torch installed")
    with open(os.path.join(MODELS, "metrics.json")) as f:
        metrics = json.load(f)
    reference = metrics["acceptance"]
    prompts = train.reference_prompts(metrics)[0][:args.prompts]
    new_tokens = reference["new_tokens"]

    draft5 = [d for d in reference["draft"] if d["gamma"] == 5][0]
    heads = [f"--mtp-head={MODELS}/medusa_head_{i}.onnx" for i in (1, 2, 3)]
    decoders = [
        ("draft (gamma 5)", [f"--draft={MODELS}/draft.onnx", "--gamma=5"],
         draft5["mean_tokens_per_step"], None),
        ("Medusa (3 heads)", heads, reference["medusa"]["mean_tokens_per_step"],
         reference["medusa"]["per_position_acceptance"]),
        ("MTP module", [f"--mtp-head={MODELS}/mtp_module.onnx"],
         1 + reference["mtp"]["per_position_acceptance"][0],
         reference["mtp"]["per_position_acceptance"][:1]),
        # The heads retrained on the target's own text (models/distill.py).
        ("Medusa distilled",
         [f"--mtp-head={MODELS}/medusa_distilled_head_{i}.onnx"
          for i in (1, 2, 3)],
         metrics["distilled"]["medusa_after"]["mean_tokens_per_step"],
         metrics["distilled"]["medusa_after"]["per_position_acceptance"]),
        # The module chained with itself; the reference ran depth 2 only.
        ("MTP chain, depth 2", [f"--mtp-head={MODELS}/mtp_module.onnx",
                                "--mtp-depth=2"],
         reference["mtp"]["mean_tokens_per_step"],
         reference["mtp"]["per_position_acceptance"]),
        ("MTP chain, depth 3", [f"--mtp-head={MODELS}/mtp_module.onnx",
                                "--mtp-depth=3"], None, None),
        # Distilled at depth 1 (models/distill.py; --mtp-depths 2 would
        # train the chained depth too): chained, its own states are new to
        # it. The reference ran depth 2.
        ("MTP distilled",
         [f"--mtp-head={MODELS}/mtp_distilled_module.onnx"],
         1 + metrics["distilled"]["mtp_after"]["per_position_acceptance"][0],
         metrics["distilled"]["mtp_after"]["per_position_acceptance"][:1]),
        ("MTP distilled, depth 2",
         [f"--mtp-head={MODELS}/mtp_distilled_module.onnx", "--mtp-depth=2"],
         metrics["distilled"]["mtp_after"]["mean_tokens_per_step"],
         metrics["distilled"]["mtp_after"]["per_position_acceptance"]),
        ("MTP distilled, depth 3",
         [f"--mtp-head={MODELS}/mtp_distilled_module.onnx", "--mtp-depth=3"],
         None, None),
    ]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags, reference_per_forward, reference_positions in decoders:
            artifact = os.path.join(tmp, f"decoder{len(results)}.spec")
            run([specc, f"{MODELS}/target.onnx", *flags, "-o", artifact])
            tokens = forwards = 0
            rounds = 0
            accepted = None
            for prompt in prompts:
                out = json.loads(run(
                    [spec_run, artifact, "--json",
                     "--prompt-ids=" + ",".join(map(str, prompt)),
                     f"--max-new-tokens={new_tokens}"]))["speculative"]
                tokens += out["new_tokens"]
                forwards += out["target_forwards"]
                # Rounds are the forwards after the prefill.
                n = out["target_forwards"] - 1
                per_position = out["accepted_per_position"]
                if accepted is None:
                    accepted = [0.0] * len(per_position)
                for i, fraction in enumerate(per_position):
                    accepted[i] += fraction * n
                rounds += n
            # Conditional acceptance per position, as the reference reports
            # it: accepted at i among rounds that reached i.
            conditional = []
            reached = rounds
            for count in accepted:
                conditional.append(count / reached if reached else 0.0)
                reached = count
            results.append({
                "decoder": name,
                "tokens_per_target_forward": tokens / forwards,
                "reference_tokens_per_target_forward": reference_per_forward,
                "acceptance_per_position": conditional,
                "reference_acceptance_per_position": reference_positions,
            })
            print(f"  {name} done", file=sys.stderr)

    print(f"{len(prompts)} held-out prompts x {new_tokens} new tokens, greedy "
          "(the prompts of models/metrics.json)")
    print(f"{'decoder':<22} {'tok/fwd':>8} {'reference':>9}  "
          "acceptance per position (reference)")
    for r in results:
        positions = r["acceptance_per_position"]
        ref = r["reference_acceptance_per_position"]
        cells = " ".join(
            f"{a:.2f}" + (f" ({ref[i]:.2f})" if ref and i < len(ref) else "")
            for i, a in enumerate(positions))
        ref_per_forward = r["reference_tokens_per_target_forward"]
        ref_cell = f"{ref_per_forward:.2f}" if ref_per_forward else "-"
        print(f"{r['decoder']:<22} {r['tokens_per_target_forward']:>8.2f} "
              f"{ref_cell:>9}  {cells}")
    print("tok/fwd: new tokens per target forward, the prompt's included; "
          "acceptance: accepted at a position among the rounds that reached it")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"prompts": len(prompts), "new_tokens": new_tokens,
                       "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
