#!/usr/bin/env python3
"""A draft with another tokenizer against a draft of the target's.

Compiles the example target with the example draft (bytes, like the
target) and with the BPE draft (models/draft_bpe.onnx, 381 merges; specc
--cross-tokenizer) at each gamma, runs the same held-out prompts through
both with `spec-run --compare --json` (speculative and target-only in one
process, so each ratio is measured under one load) and reports tokens per
target forward, the cross-tokenizer draft's as a fraction of the
same-tokenizer draft's (issue 49's target: at least 80%), the speedups
over the target alone, and the share of the cross-tokenizer rounds spent
translating (spelling, tokenizing again, token healing; target: under 5%).
With --sampling, both pairs sample at --temperature (prompt i with seed
i); the outputs then differ from the target alone's by design.

    python3 bench/cross_tokenizer.py [--build build] [--prompts 20]
        [--gammas 2,3,4,5] [--max-new-tokens 128] [--sampling]
        [--temperature 1.0] [--json out.json]

Not a test: nothing here asserts on time. Figures quoted in docs come from
this script, with the command line that produced them.
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from speculative_speedup import MODELS, find_tools, run  # noqa: E402
from weight_precision import held_out_windows  # noqa: E402


def measure(spec_run, artifact, prompts, max_new_tokens):
    """Summed over the prompts (prompt i sampled with seed i): new tokens,
    target forwards, seconds of both modes, translation seconds; and
    whether every output was the target's."""
    totals = {"tokens": 0, "forwards": 0, "spec_seconds": 0.0,
              "base_tokens": 0, "base_seconds": 0.0, "translate": 0.0,
              "identical": True}
    for seed, ids in enumerate(prompts):
        out = json.loads(run([
            spec_run, artifact, "--prompt-ids=" + ",".join(map(str, ids)),
            f"--max-new-tokens={max_new_tokens}", f"--seed={seed}",
            "--compare", "--json"]))
        spec, base = out["speculative"], out["no_speculation"]
        totals["identical"] &= out["identical"]
        totals["tokens"] += spec["new_tokens"]
        totals["forwards"] += spec["target_forwards"]
        totals["spec_seconds"] += spec["seconds"]
        totals["translate"] += spec["translate_seconds"]
        totals["base_tokens"] += base["new_tokens"]
        totals["base_seconds"] += base["seconds"]
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(
        os.path.dirname(MODELS), "build"))
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--prompt-bytes", type=int, default=64)
    parser.add_argument("--gammas", default="2,3,4,5")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--sampling", action="store_true",
                        help="sample (lossless) instead of greedy")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    specc, spec_run = find_tools(args.build)
    prompts = [list(map(int, w)) for w in
               held_out_windows(args.prompts, args.prompt_bytes)]
    drafts = {
        "same tokenizer": [f"--draft={MODELS}/draft.onnx"],
        "cross-tokenizer": [
            f"--draft={MODELS}/draft_bpe.onnx", "--cross-tokenizer",
            f"--draft-tokenizer={MODELS}/draft_bpe.tokenizer.json"]}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for gamma in map(int, args.gammas.split(",")):
            row = {"gamma": gamma}
            for name, flags in drafts.items():
                artifact = os.path.join(tmp, f"{len(results)}-{name[:5]}.spec")
                sampling = ["--sampling", f"--temperature={args.temperature}"]
                run([specc, f"{MODELS}/target.onnx", *flags,
                     *(sampling if args.sampling else []),
                     f"--gamma={gamma}", "-o", artifact])
                t = measure(spec_run, artifact, prompts, args.max_new_tokens)
                row[name] = {
                    "identical": t["identical"],
                    "tokens_per_target_forward": t["tokens"] / t["forwards"],
                    "speedup": (t["tokens"] / t["spec_seconds"]) /
                               (t["base_tokens"] / t["base_seconds"]),
                    "translate_share": t["translate"] / t["spec_seconds"]}
                print(f"  gamma {gamma}, {name}: done", file=sys.stderr)
            results.append(row)
    mode = (f"sampled at temperature {args.temperature:g}" if args.sampling
            else "greedy")
    print(f"{args.prompts} held-out prompts of {args.prompt_bytes} bytes x "
          f"{args.max_new_tokens} new tokens, {mode}")
    print(f"{'gamma':>5} {'same: tok/fwd':>13} {'cross: tok/fwd':>14} "
          f"{'cross/same':>10} {'same: speedup':>13} {'cross: speedup':>14} "
          f"{'translating':>11} {'same text':>9}")
    for r in results:
        same, cross = r["same tokenizer"], r["cross-tokenizer"]
        print(f"{r['gamma']:>5} {same['tokens_per_target_forward']:>13.2f} "
              f"{cross['tokens_per_target_forward']:>14.2f} "
              f"{cross['tokens_per_target_forward'] / same['tokens_per_target_forward']:>9.0%} "
              f"{same['speedup']:>12.2f}x {cross['speedup']:>13.2f}x "
              f"{cross['translate_share']:>10.1%} "
              f"{same_text(same, cross, args.sampling):>9}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"prompts": args.prompts, "results": results}, f, indent=2)
    if args.sampling:
        return 0
    return 0 if all(r[d]["identical"] for r in results for d in drafts) else 1


def same_text(same, cross, sampling):
    """Whether both drafts' outputs were the target alone's (greedy; sampled,
    they are other draws from the same distribution)."""
    if sampling:
        return "-"
    return "yes" if same["identical"] and cross["identical"] else "NO"


if __name__ == "__main__":
    sys.exit(main())
