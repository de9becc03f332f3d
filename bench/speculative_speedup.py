#!/usr/bin/env python3
"""Speculative vs target-only decoding on the bundled example models.

Compiles the draft, Medusa and MTP-module decoders into artifacts with
`specc -o decoder.spec`, runs each prompt with `spec-run --compare --json`
(both modes in one process, one after the other, so the ratio is measured
under the same load) and reports, per decoder, tokens per target forward,
the measured acceptance next to the reference figure from
models/metrics.json, and the speedup in tokens/s over the decoder's
`_target_only` loop (the unmodified target, same kernels: for Medusa the
target the heads were fused into).

    python3 bench/speculative_speedup.py [--build build] [--prompts 5]
        [--max-new-tokens 128] [--repeats 1] [--json results.json]

--repeats N runs every prompt N times, going round the prompts in turn,
and takes each mode's fastest run per prompt: the work is the same every
time, so the fastest run is the one a slow spell of a shared machine
missed (with one run the speedups here vary by about 10% between runs).

Not a test: nothing here asserts on time. Figures quoted in docs come from
this script, with the command line that produced them.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")

# Python-source openings in the style of the models' corpus (the Python
# standard library); fixed so that runs are comparable.
PROMPTS = [
    "import os",
    "class Parser:",
    "def __init__(self, name):",
    "    for key, value in",
    "from collections import",
    "    if not isinstance(",
    "    raise ValueError(",
    "    return self.",
]


def decoders(reference, distilled):
    """(name, specc arguments, reference tokens per target forward)."""
    draft = [d for d in reference["draft"] if d["gamma"] == 5][0]
    medusa = reference["medusa"]["mean_tokens_per_step"]
    mtp = 1 + reference["mtp"]["per_position_acceptance"][0]
    heads = [f"--mtp-head={MODELS}/medusa_head_{i}.onnx" for i in (1, 2, 3)]
    return [
        ("draft (gamma 5)", [f"--draft={MODELS}/draft.onnx", "--gamma=5"],
         draft["mean_tokens_per_step"]),
        ("Medusa (3 heads)", heads, medusa),
        ("Medusa distilled", [f"--mtp-head={MODELS}/medusa_distilled_head_{i}"
                              ".onnx" for i in (1, 2, 3)],
         distilled["medusa_after"]["mean_tokens_per_step"]),
        ("MTP module", [f"--mtp-head={MODELS}/mtp_module.onnx"], mtp),
        ("MTP chain, depth 2", [f"--mtp-head={MODELS}/mtp_module.onnx",
                                "--mtp-depth=2"],
         reference["mtp"]["mean_tokens_per_step"]),
        ("MTP chain, depth 3", [f"--mtp-head={MODELS}/mtp_module.onnx",
                                "--mtp-depth=3"], None),
    ]


def run(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{result.stderr}")
    return result.stdout


def find_tools(build):
    """The paths of specc and spec-run in the build folder `build`."""
    tools = [os.path.join(build, "bin", name) for name in ("specc", "spec-run")]
    for tool in tools:
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found; run `ninja -C {build} "
                     "specc spec-run` first")
    return tools


def parse_arguments(description, default_prompts, repeats=False):
    """The benchmarks' common command line, checked."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--prompts", type=int, default=default_prompts,
                        help=f"how many of the {len(PROMPTS)} prompts to run")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--json", help="also write the results here")
    if repeats:
        parser.add_argument("--repeats", type=int, default=1,
                            help="runs per prompt; the fastest counts")
    args = parser.parse_args()
    if not 1 <= args.prompts <= len(PROMPTS):
        sys.exit(f"error: --prompts must be between 1 and {len(PROMPTS)}")
    if repeats and args.repeats < 1:
        sys.exit("error: --repeats must be at least 1")
    return args


def main():
    args = parse_arguments(__doc__.split("\n")[0], default_prompts=5,
                           repeats=True)
    specc, spec_run = find_tools(args.build)
    with open(os.path.join(MODELS, "metrics.json")) as f:
        metrics = json.load(f)
    reference = metrics["acceptance"]

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags, reference_per_forward in decoders(
                reference, metrics["distilled"]):
            module = os.path.join(tmp, f"decoder{len(results)}.spec")
            run([specc, f"{MODELS}/target.onnx", *flags, "-o", module])
            prompts = PROMPTS[:args.prompts]
            # Per prompt and mode: new tokens, target forwards (the same
            # every run) and the fastest run's seconds.
            best = {(prompt, mode): None for prompt in prompts
                    for mode in ("speculative", "no_speculation")}
            identical = True
            for _ in range(args.repeats):
                for prompt in prompts:
                    out = json.loads(run([
                        spec_run, module, f"--prompt={prompt}",
                        f"--max-new-tokens={args.max_new_tokens}",
                        "--compare", "--json"]))
                    identical &= out["identical"]
                    for mode in ("speculative", "no_speculation"):
                        m = out[mode]
                        old = best[(prompt, mode)]
                        if old is None or m["seconds"] < old[2]:
                            best[(prompt, mode)] = (m["new_tokens"],
                                                    m["target_forwards"],
                                                    m["seconds"])
                    print(f"  {name}: {prompt!r} done", file=sys.stderr)
            totals = {mode: [sum(best[(p, mode)][i] for p in prompts)
                             for i in range(3)]
                      for mode in ("speculative", "no_speculation")}
            spec, base = totals["speculative"], totals["no_speculation"]
            results.append({
                "decoder": name,
                "identical": identical,
                "tokens_per_target_forward": spec[0] / spec[1],
                "reference_tokens_per_target_forward": reference_per_forward,
                "speculative_tokens_per_second": spec[0] / spec[2],
                "target_only_tokens_per_second": base[0] / base[2],
                "speedup": (spec[0] / spec[2]) / (base[0] / base[2]),
            })
    print(f"{args.prompts} prompts x {args.max_new_tokens} new tokens, greedy"
          + (f", fastest of {args.repeats} runs" if args.repeats > 1 else ""))
    print(f"{'decoder':<20} {'same text':>9} {'tok/fwd':>8} {'reference':>9} "
          f"{'spec tok/s':>10} {'target tok/s':>12} {'speedup':>8}")
    for r in results:
        reference_cell = (f"{r['reference_tokens_per_target_forward']:.2f}"
                          if r["reference_tokens_per_target_forward"] else "-")
        print(f"{r['decoder']:<20} {'yes' if r['identical'] else 'NO':>9} "
              f"{r['tokens_per_target_forward']:>8.2f} "
              f"{reference_cell:>9} "
              f"{r['speculative_tokens_per_second']:>10.1f} "
              f"{r['target_only_tokens_per_second']:>12.1f} "
              f"{r['speedup']:>7.2f}x")
    print("reference: torch, held-out prompts (models/metrics.json); "
          "tok/fwd: new tokens per target forward")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"prompts": args.prompts,
                       "max_new_tokens": args.max_new_tokens,
                       "repeats": args.repeats,
                       "results": results}, f, indent=2)
    return 0 if all(r["identical"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
