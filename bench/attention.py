#!/usr/bin/env python3
"""What spec-fuse-attention buys: the example target's decode step and
verify forward with the importer's attention chain and with the fused loops,
at growing context lengths.

It compiles the example draft decoder (gamma 5, so verify forwards have 6
rows) twice, `specc --fuse-attention=true` and `=false`, and for each
context length runs `spec-run --compare --json` on a prompt of that many
bytes with both artifacts, alternately, --repeats times; it reports the
medians of the one-row step (target-only loop), of the 6-row verify round,
of the prefill, and the ratios unfused / fused; it checks that speculative
decoding gives the target's own tokens with each (exact greedy), and says
whether the two attentions chose the same tokens (floating point differs
between them, so they may not).

    /usr/bin/python3 bench/attention.py [--build build] [--contexts 32,128,256,448]
        [--max-new-tokens 48] [--repeats 3] [--json results.json]

Not a test: nothing here asserts on time.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")
# Python source, like the models' training corpus.
CORPUS = "/usr/lib/python3.11/argparse.py"


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{result.stderr}")
    return result.stdout


def measure(spec_run, artifact, prompt_file, new_tokens):
    out = json.loads(run([spec_run, artifact, "--prompt-file", prompt_file,
                          "--max-new-tokens", str(new_tokens), "--compare",
                          "--json", "--warmup", "1"]))
    spec, alone = out["speculative"], out["no_speculation"]
    return {
        "step_ms": 1e3 * alone["verify_seconds"]
        / max(alone["target_forwards"] - 1, 1),
        "verify_ms": 1e3 * spec["verify_seconds"]
        / max(spec["target_forwards"] - 1, 1),
        "prefill_ms": 1e3 * (alone["seconds"] - alone["verify_seconds"]),
        "tokens": alone["token_ids"],
        "same_text": spec["token_ids"] == alone["token_ids"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--contexts", default="32,128,256,448",
                        help="prompt lengths in bytes (comma-separated)")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    contexts = [int(c) for c in args.contexts.split(",")]
    if any(c < 1 or c + args.max_new_tokens > 500 for c in contexts):
        sys.exit("error: each context must be at least 1 and leave room for "
                 "--max-new-tokens in the target's 512 positions")
    if args.repeats < 1:
        sys.exit("error: --repeats must be at least 1")
    specc = os.path.join(args.build, "bin", "specc")
    spec_run = os.path.join(args.build, "bin", "spec-run")
    for tool in (specc, spec_run):
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found; run `ninja -C {args.build} "
                     "specc spec-run` first")
    text = open(CORPUS, "rb").read()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        artifacts = {}
        for fused in (True, False):
            artifacts[fused] = os.path.join(work, f"fused-{fused}.spec")
            run([specc, os.path.join(MODELS, "target.onnx"), "--draft",
                 os.path.join(MODELS, "draft.onnx"), "--gamma", "5",
                 f"--fuse-attention={'true' if fused else 'false'}", "-o",
                 artifacts[fused]])
        print(f"example target, gamma 5 (verify forwards of 6 rows), "
              f"{args.max_new_tokens} new tokens, medians of "
              f"{args.repeats} runs; ms per forward")
        print(f"{'context':>7} {'step(1) chain':>13} {'fused':>7} "
              f"{'ratio':>6} {'verify(6) chain':>15} {'fused':>7} "
              f"{'ratio':>6} {'prefill ratio':>13} exact agree")
        for context in contexts:
            prompt = os.path.join(work, f"prompt-{context}.txt")
            with open(prompt, "wb") as f:
                f.write(text[:context])
            runs = {True: [], False: []}
            for _ in range(args.repeats):
                for fused in (True, False):
                    runs[fused].append(measure(spec_run, artifacts[fused],
                                               prompt, args.max_new_tokens))
            median = {fused: {key: statistics.median(r[key] for r in rs)
                              for key in ("step_ms", "verify_ms",
                                          "prefill_ms")}
                      for fused, rs in runs.items()}
            exact = all(r["same_text"] for rs in runs.values() for r in rs)
            agree = runs[True][0]["tokens"] == runs[False][0]["tokens"]
            row = {"context": context, "fused": median[True],
                   "chain": median[False], "exact": exact,
                   "fused_equals_chain": agree}
            rows.append(row)
            chain, fast = median[False], median[True]
            print(f"{context:>7} {chain['step_ms']:>13.3f} "
                  f"{fast['step_ms']:>7.3f} "
                  f"{chain['step_ms'] / fast['step_ms']:>6.2f} "
                  f"{chain['verify_ms']:>15.3f} {fast['verify_ms']:>7.3f} "
                  f"{chain['verify_ms'] / fast['verify_ms']:>6.2f} "
                  f"{chain['prefill_ms'] / fast['prefill_ms']:>13.2f} "
                  f"{'yes' if exact else 'NO':>5} "
                  f"{'yes' if agree else 'no'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=2)
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
