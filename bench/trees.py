#!/usr/bin/env python3
"""Medusa heads or a draft proposing trees of candidates: tokens per target
forward and speed against the tree's size.

Compiles the example target with its three Medusa heads (or, with --draft,
its draft model) once per tree (`specc --tree <medusa_choices>`, the chain
of top-1 proposals first; with --draft, the gamma = 5 chain first), runs
every prompt with `spec-run --compare --json` and prints, per tree, the
candidates it verifies per round, new tokens per target forward, whether the
text equals target-only decoding, and the speedup within each `--compare`
run, with a text plot of tokens per forward against tree size.

    python3 bench/trees.py [--build build] [--prompts 8]
        [--max-new-tokens 128] [--reference] [--trees 1,6,16]
        [--sampling TEMPERATURE] [--auto] [--distilled] [--draft]
        [--json out.json]

--reference runs the 20 held-out prompts the torch reference was measured on
(models/metrics.json; needs torch, like bench/acceptance.py) instead of the
Python-source openings of bench/speculative_speedup.py.

--sampling compiles the decoders with `--sampling --temperature T` and runs
each prompt with seed 0: the trees then verify draws from the target (the
text differs from target-only sampling, which draws differently, so the
same-text column says "n/a").

--auto also lets the cost model choose: it compiles `--tree probe` (each
head's 10 most likely tokens under the most likely path), profiles it on the
prompts (`spec-run --compare --profile`, the rounds by final node summed and
the verify cost per row averaged over them), and compiles `--tree auto` from
that profile twice: with the measured verify cost ("auto") and with rows
free ("auto, rows free": what a memory-bound target, such as one on a GPU,
would choose). The profile comes from the prompts it is then measured on.

--distilled runs the self-distilled heads (models/medusa_distilled_head_*.onnx)
instead of the heads trained on the text.

--draft runs the draft model (models/draft.onnx) instead: the draft proposes
the tree depth by depth, one forward per depth over the candidates that have
children, and --trees picks from the draft's trees (up to 5 deep). --auto's
probe is then 5 deep, and the cost model also counts the draft's forward per
depth (its cost measured by the profile).

Not a test: nothing here asserts on time.
"""

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from speculative_speedup import PROMPTS, find_tools, run  # noqa: E402

# Trees in Medusa's medusa_choices form, by number of candidates: the top-1
# chain, then more of the likeliest tokens of head 1 and their likeliest
# continuations.
TREES = {
    3: [[0], [0, 0], [0, 0, 0]],
    6: [[0], [1], [0, 0], [0, 1], [1, 0], [0, 0, 0]],
    10: [[0], [1], [2], [0, 0], [0, 1], [1, 0], [2, 0], [0, 0, 0],
         [0, 0, 1], [0, 1, 0]],
    16: [[0], [1], [2], [3], [0, 0], [0, 1], [0, 2], [1, 0], [1, 1],
         [2, 0], [3, 0], [0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 1, 0],
         [1, 0, 0]],
    24: [[0], [1], [2], [3], [4], [0, 0], [0, 1], [0, 2], [0, 3], [1, 0],
         [1, 1], [2, 0], [2, 1], [3, 0], [4, 0], [0, 0, 0], [0, 0, 1],
         [0, 0, 2], [0, 1, 0], [0, 1, 1], [1, 0, 0], [1, 0, 1], [1, 1, 0],
         [2, 0, 0]],
}

# A draft's trees: the gamma = 5 chain with the second (and third) most
# likely tokens beside it, and their likeliest continuations.
DRAFT_TREES = {
    8: [[0], [1], [0, 0], [0, 1], [0, 0, 0], [0, 0, 1], [0, 0, 0, 0],
        [0, 0, 0, 0, 0]],
    12: [[0], [1], [2], [0, 0], [0, 1], [1, 0], [0, 0, 0], [0, 0, 1],
         [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0, 0], [0, 0, 0, 0, 1]],
    20: [[0], [1], [2], [0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0],
         [0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [1, 0, 0],
         [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 0, 0],
         [0, 0, 0, 0, 1], [0, 0, 0, 1, 0]],
}


def reference_prompts():
    """The 20 held-out prompts of models/metrics.json, as token ids."""
    sys.path.insert(0, MODELS)
    try:
        import train
    except ImportError as error:
        sys.exit(f"error: --reference needs {error.name} (models/train.py)")
    with open(os.path.join(MODELS, "metrics.json")) as f:
        metrics = json.load(f)
    return [["--prompt-ids=" + ",".join(map(str, p))]
            for p in train.reference_prompts(metrics)[0]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--prompts", type=int, default=len(PROMPTS))
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--reference", action="store_true")
    parser.add_argument("--trees",
                        help="tree sizes to run, from "
                             + ", ".join(map(str, TREES)) + " (--draft: "
                             + ", ".join(map(str, DRAFT_TREES))
                             + "; default: all)")
    parser.add_argument("--sampling", type=float, metavar="TEMPERATURE",
                        help="verify by sampling at this temperature")
    parser.add_argument("--auto", action="store_true",
                        help="also the trees --tree auto picks from a "
                             "profile of --tree probe")
    parser.add_argument("--distilled", action="store_true",
                        help="the self-distilled Medusa heads")
    parser.add_argument("--draft", action="store_true",
                        help="the draft model's trees instead of Medusa "
                             "heads'")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.sampling is not None and not args.sampling > 0:
        sys.exit("error: --sampling takes a temperature above 0")
    sampling = ([] if args.sampling is None else
                ["--sampling", f"--temperature={args.sampling}"])
    if args.draft and args.distilled:
        sys.exit("error: --distilled picks Medusa heads; drop --draft")
    trees = DRAFT_TREES if args.draft else TREES
    try:
        sizes = ([int(size) for size in args.trees.split(",")] if args.trees
                 else list(trees))
    except ValueError:
        sizes = []
    if not sizes or any(size not in trees for size in sizes):
        sys.exit("error: --trees takes sizes from "
                 + ", ".join(map(str, trees)))
    prompts = (reference_prompts() if args.reference
               else [[f"--prompt={p}"] for p in PROMPTS])
    if not 1 <= args.prompts <= len(prompts):
        sys.exit(f"error: --prompts must be between 1 and {len(prompts)}")
    prompts = prompts[:args.prompts]
    specc, spec_run = find_tools(args.build)
    kind = "medusa_distilled_head" if args.distilled else "medusa_head"
    proposer = ([f"--draft={MODELS}/draft.onnx"] if args.draft else
                [f"--mtp-head={MODELS}/{kind}_{i}.onnx" for i in (1, 2, 3)])

    def measure(artifact, label):
        """Runs every prompt on `artifact`; its row of the table."""
        tokens = forwards = 0
        seconds = {"speculative": 0.0, "no_speculation": 0.0}
        identical = True
        for prompt in prompts:
            out = json.loads(run([spec_run, artifact, *prompt,
                                  f"--max-new-tokens={args.max_new_tokens}",
                                  "--compare", "--json"]))
            if not sampling:
                identical &= out["identical"]
            tokens += out["speculative"]["new_tokens"]
            forwards += out["speculative"]["target_forwards"]
            for mode in seconds:
                seconds[mode] += out[mode]["seconds"]
        with open(os.path.join(artifact, "manifest.json")) as f:
            decoder = json.load(f)["decoder"]
        print(f"  {label} done", file=sys.stderr)
        return {
            "tree": label,
            "chain": "tree" not in decoder,
            "candidates": len(decoder["tree"]["parents"]) if "tree" in decoder
                          else decoder["proposals"],
            "identical": None if sampling else identical,
            "tokens_per_target_forward": tokens / forwards,
            "speedup": seconds["no_speculation"] / seconds["speculative"],
        }

    def profile_probe(tmp):
        """The probe tree's profile, merged over the prompts."""
        probe = os.path.join(tmp, "probe.spec")
        run([specc, f"{MODELS}/target.onnx", *proposer, "--tree=probe",
             *(["--gamma=5"] if args.draft else []), *sampling, "-o", probe])
        merged, weighted = None, {"verify_cost": 0.0,
                                  "per_token_acceptance": 0.0}
        if args.draft:
            weighted["cost_ratio"] = 0.0
        for i, prompt in enumerate(prompts):
            path = os.path.join(tmp, f"probe{i}.json")
            run([spec_run, probe, *prompt,
                 f"--max-new-tokens={args.max_new_tokens}", "--compare",
                 "--json", "--profile", path])
            with open(path) as f:
                profile = json.load(f)
            rounds = sum(profile["tree"]["rounds_by_final_node"])
            for key in weighted:
                weighted[key] += profile[key] * rounds
            if merged is None:
                merged = profile
            else:
                merged["tree"]["rounds_by_final_node"] = [
                    a + b for a, b in zip(
                        merged["tree"]["rounds_by_final_node"],
                        profile["tree"]["rounds_by_final_node"])]
        rounds = sum(merged["tree"]["rounds_by_final_node"])
        for key in weighted:
            merged[key] = weighted[key] / max(rounds, 1)
        print("  probe profiled", file=sys.stderr)
        return merged

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.draft:
            artifact = os.path.join(tmp, "chain.spec")
            run([specc, f"{MODELS}/target.onnx", *proposer, "--gamma=5",
                 *sampling, "-o", artifact])
            results.append(measure(artifact, "chain"))
        for size in sizes:
            artifact = os.path.join(tmp, f"tree{size}.spec")
            run([specc, f"{MODELS}/target.onnx", *proposer,
                 "--tree=" + json.dumps(trees[size]), *sampling,
                 "-o", artifact])
            results.append(measure(artifact, str(size)))
        if args.auto:
            profile = profile_probe(tmp)
            for label, cost in (("auto", profile["verify_cost"]),
                                ("auto, rows free", 0.0)):
                path = os.path.join(tmp, "profile.json")
                with open(path, "w") as f:
                    json.dump({**profile, "verify_cost": cost}, f)
                artifact = os.path.join(tmp, "auto.spec")
                run(["rm", "-rf", artifact])
                run([specc, f"{MODELS}/target.onnx", *proposer, "--tree=auto",
                     f"--profile={path}", *sampling, "-o", artifact])
                results.append(measure(artifact, label))
                results[-1]["verify_cost"] = cost
                if args.draft:
                    results[-1]["draft_cost"] = profile["cost_ratio"]

    print(f"{len(prompts)} {'held-out ' if args.reference else ''}prompts x "
          f"{args.max_new_tokens} new tokens, "
          + (f"sampling at temperature {args.sampling}" if sampling
             else "greedy")
          + (", self-distilled" if args.distilled else "")
          + (", draft" if args.draft else ", Medusa heads (3)"))
    print(f"{'tree':>15} {'candidates':>10} {'same text':>9} {'tok/fwd':>8} "
          f"{'speedup':>8}  tokens per target forward")
    for r in results:
        bar = "#" * round(r["tokens_per_target_forward"] * 10)
        same = {None: "n/a", True: "yes", False: "NO"}[r["identical"]]
        print(f"{r['tree']:>15} {r['candidates']:>10} {same:>9} "
              f"{r['tokens_per_target_forward']:>8.2f} "
              f"{r['speedup']:>7.2f}x  {bar}")
    print("candidates: tokens each round verifies after the last one; "
          + ("'chain' is gamma = 5 without a tree" if args.draft
             else "3 is the chain of top-1 proposals"))
    for r in results:
        if "verify_cost" in r:
            print(f"{r['tree']}: {'a chain' if r['chain'] else 'a tree'} "
                  f"of {r['candidates']}; verify cost {r['verify_cost']:.3f} "
                  f"target steps per extra row"
                  + (f", draft cost {r['draft_cost']:.3f} per depth"
                     if "draft_cost" in r else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"prompts": len(prompts),
                       "proposer": "draft" if args.draft else "medusa",
                       "distilled_heads": args.distilled,
                       "max_new_tokens": args.max_new_tokens,
                       "reference_prompts": args.reference,
                       "sampling_temperature": args.sampling,
                       "results": results}, f, indent=2)
    return 0 if all(r["identical"] is not False for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
