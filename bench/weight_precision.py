#!/usr/bin/env python3
"""Weight precision (`specc --weights f16|bf16|int8`): what narrow weight
matrices cost in quality and gain in speed.

Quality, on the example target: its next-token distributions over
--windows windows of --window tokens of the held-out files of its training
corpus (models/train.py's validation split), computed by `spec-run-graph
--weights P` (the compiler's own code at each precision) and compared with
f32's: the share of tokens whose top-1 token agrees with f32's, the mean
KL(f32 || P) in nats, and each precision's next-token accuracy on the text.

Acceptance, on the example draft decoder with both models, the draft
alone (`specc --draft-weights`) or the target alone at the precision
(--acceptance-models): tokens per target forward over the speculative
benchmark's prompts, whether the speculative text equals the target-only
text at the same precision (exact greedy), and how many prompts' texts
equal f32's.

Speed, on bench/make_large_model.py's bandwidth-bound target (made into
--large if it is not there): the draft decoder (gamma 5) compiled at each
precision (compile seconds), then `spec-run --compare --json --threads 1`
on one prompt, --repeats times going round the precisions: the one-row
step (the target-only loop) and verify(6) (the speculative loop; the
random weights accept nothing, so each round verifies 6 rows and commits
one token), medians; the step's weight bytes per second as a fraction of
this machine's copy bandwidth (a 256 MiB numpy copy).

    /usr/bin/python3 bench/weight_precision.py [--build build]
        [--precisions f16,bf16,int8] [--windows 8] [--window 256]
        [--prompts 8] [--acceptance-tokens 128]
        [--acceptance-models both,draft,target] [--large build/large]
        [--repeats 3] [--max-new-tokens 32] [--skip-speed] [--json out.json]

Needs numpy, onnx and torch (Debian's python3-numpy, python3-onnx,
python3-torch). Not a test: nothing here asserts on time or quality.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from statistics import median

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from forward_cost import copy_bandwidth, per_round, weight_bytes  # noqa: E402
from speculative_speedup import PROMPTS  # noqa: E402


# Bytes per weight by precision.
BYTES = {"f32": 4, "f16": 2, "bf16": 2, "int8": 1}


def run(command, stdin=None):
    result = subprocess.run(command, capture_output=True, text=True,
                            input=stdin)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{result.stderr}")
    return result


def held_out_windows(count, length):
    """`count` windows of `length` tokens, BOS first, spread over the
    held-out split of the example models' corpus."""
    sys.path.insert(0, MODELS)
    import train  # models/train.py: the corpus and its split
    _, val, _ = train.load_corpus()
    step = (len(val) - length) // count
    return [np.concatenate([[train.BOS], val[i * step:i * step + length - 1]])
            for i in range(count)]


def write_inputs(folder, ids, layers=4, kv_heads=2, head_dim=32):
    """The example target's inputs for a prefill of `ids` (.pb files)."""
    from onnx import numpy_helper
    n = len(ids)
    tensors = [ids.reshape(1, n).astype(np.int64),
               np.arange(n, dtype=np.int64).reshape(1, n)]
    tensors += [np.zeros((1, kv_heads, 0, head_dim), np.float32)] * (2 * layers)
    paths = []
    for i, tensor in enumerate(tensors):
        path = os.path.join(folder, f"input_{i}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(tensor).SerializeToString())
        paths.append(path)
    return paths


def logits_by_precision(tool, precisions, windows, tmp):
    """{precision: [logits of each window]} from spec-run-graph."""
    import onnx
    from onnx import numpy_helper
    lines, outputs = [], []
    for w, ids in enumerate(windows):
        folder = os.path.join(tmp, f"window{w}")
        os.makedirs(folder)
        inputs = write_inputs(folder, ids)
        lines.append(" ".join(f"-i {p}" for p in inputs))
        outputs.append(folder)
    result = {}
    for precision in precisions:
        stdin = "".join(f"{line} --output-dir {out}/{precision}\n"
                        for line, out in zip(lines, outputs))
        for out in outputs:
            os.makedirs(os.path.join(out, precision))
        run([tool, os.path.join(MODELS, "target.onnx"),
             f"--weights={precision}", "--runs-from-stdin"], stdin)
        result[precision] = [numpy_helper.to_array(onnx.load_tensor(
            os.path.join(out, precision, "output_0.pb")))[0]
            for out in outputs]
    return result


def log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def quality(tool, precisions, windows, tmp):
    logits = logits_by_precision(tool, ["f32"] + precisions, windows, tmp)
    targets = np.concatenate([ids[1:] for ids in windows])
    reference = np.concatenate([l[:-1] for l in logits["f32"]])
    log_p = log_softmax(reference.astype(np.float64))
    rows = [{"precision": "f32", "top1_agreement": 1.0, "mean_kl": 0.0,
             "accuracy": float((reference.argmax(-1) == targets).mean())}]
    for precision in precisions:
        other = np.concatenate([l[:-1] for l in logits[precision]])
        log_q = log_softmax(other.astype(np.float64))
        kl = (np.exp(log_p) * (log_p - log_q)).sum(-1)
        rows.append({
            "precision": precision,
            "top1_agreement": float((other.argmax(-1) ==
                                     reference.argmax(-1)).mean()),
            "mean_kl": float(kl.mean()),
            "accuracy": float((other.argmax(-1) == targets).mean())})
    return rows, len(targets)


# Which models a row's precision applies to: specc's flags for it.
QUANTIZED = {
    "both": lambda p: [f"--weights={p}"],
    "draft": lambda p: ["--weights=f32", f"--draft-weights={p}"],
    "target": lambda p: [f"--weights={p}", "--draft-weights=f32"],
}


def acceptance(specc, spec_run, precisions, tmp, prompts, max_new_tokens,
               models):
    """Tokens per target forward of the example draft decoder with the
    target, the draft or both at each precision; exactness against the
    target alone; and how many prompts give f32's text (all, when the
    target is f32)."""
    rows, texts = [], {}
    configs = [("f32", "both")] + [(p, m) for p in precisions for m in models]
    for precision, quantized in configs:
        artifact = os.path.join(tmp, f"example-{precision}-{quantized}.spec")
        run([specc, os.path.join(MODELS, "target.onnx"),
             f"--draft={os.path.join(MODELS, 'draft.onnx')}",
             *QUANTIZED[quantized](precision), "-o", artifact])
        tokens = forwards = 0
        exact = True
        key = (precision, quantized)
        texts[key] = []
        for prompt in prompts:
            out = json.loads(run([
                spec_run, artifact, f"--prompt={prompt}",
                f"--max-new-tokens={max_new_tokens}", "--compare",
                "--json"]).stdout)
            speculative = out["speculative"]
            tokens += speculative["new_tokens"]
            forwards += speculative["target_forwards"]
            exact &= (speculative["token_ids"] ==
                      out["no_speculation"]["token_ids"])
            texts[key].append(speculative["token_ids"])
        rows.append({"precision": precision, "quantized": quantized,
                     "tokens_per_forward": tokens / forwards,
                     "exact": exact,
                     "same_text_as_f32": sum(
                         a == b for a, b in zip(texts[key],
                                                texts[("f32", "both")]))})
    return rows


def speed(specc, spec_run, precisions, args, tmp):
    target = os.path.join(args.large, "target.onnx")
    draft = os.path.join(args.large, "draft.onnx")
    if not os.path.isfile(target):
        run([sys.executable, os.path.join(ROOT, "bench", "make_large_model.py"),
             f"--out={args.large}"])
    artifacts, compile_seconds = {}, {}
    for precision in ["f32"] + precisions:
        artifacts[precision] = os.path.join(tmp, f"large-{precision}.spec")
        start = time.perf_counter()
        run([specc, target, f"--draft={draft}", "--gamma=5",
             f"--weights={precision}", "-o", artifacts[precision]])
        compile_seconds[precision] = time.perf_counter() - start
    samples = {p: [] for p in artifacts}
    for repeat in range(args.repeats):
        for precision, artifact in artifacts.items():
            out = json.loads(run([
                spec_run, artifact, "--prompt=import os",
                f"--max-new-tokens={args.max_new_tokens}", "--compare",
                "--threads=1", "--warmup=1", "--json"]).stdout)
            samples[precision].append((per_round(out["no_speculation"]),
                                       per_round(out["speculative"])))
        print(f"  speed: run {repeat + 1} of {args.repeats} done",
              file=sys.stderr)
    bandwidth = copy_bandwidth(256 << 20, 5)
    draft_bytes = weight_bytes(draft)
    rows = []
    for precision, artifact in artifacts.items():
        step = median(s[0] for s in samples[precision])
        verify = median(s[1] for s in samples[precision])
        size = os.path.getsize(os.path.join(artifact, "weights.bin"))
        # The step reads the target's weights: the file less the draft's
        # (narrowed too).
        target_bytes = size - draft_bytes * BYTES[precision] / 4
        rows.append({"precision": precision,
                     "compile_seconds": compile_seconds[precision],
                     "step_seconds": step, "verify6_seconds": verify,
                     "target_weight_bytes": target_bytes,
                     "bandwidth_fraction": target_bytes / step / bandwidth})
    f32 = rows[0]
    for row in rows:
        row["step_vs_f32"] = row["step_seconds"] / f32["step_seconds"]
        row["verify6_vs_f32"] = row["verify6_seconds"] / f32["verify6_seconds"]
    return rows, bandwidth


def print_tables(results):
    print("| precision | top-1 agreement with f32 | mean KL(f32 ‖ P), nats "
          "| next-token accuracy |")
    print("|---|---:|---:|---:|")
    for r in results["quality"]:
        print(f"| {r['precision']} | {100 * r['top1_agreement']:.2f}% | "
              f"{r['mean_kl']:.2e} | {100 * r['accuracy']:.2f}% |")
    print(f"({results['quality_tokens']} held-out tokens)\n")
    print("| precision | of | tokens per target forward | exact greedy | "
          "prompts with f32's text |")
    print("|---|---|---:|:---:|---:|")
    for r in results["acceptance"]:
        print(f"| {r['precision']} | {r['quantized']} | "
              f"{r['tokens_per_forward']:.2f} | "
              f"{'yes' if r['exact'] else 'NO'} | "
              f"{r['same_text_as_f32']} of {results['prompts']} |")
    if "speed" not in results:
        return
    print("\n| precision | compile | step(1) | vs f32 | verify(6) | vs f32 "
          "| weight MiB per step | of copy bandwidth |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results["speed"]:
        print(f"| {r['precision']} | {r['compile_seconds']:.1f} s | "
              f"{1e3 * r['step_seconds']:.2f} ms | {r['step_vs_f32']:.2f} | "
              f"{1e3 * r['verify6_seconds']:.2f} ms | "
              f"{r['verify6_vs_f32']:.2f} | "
              f"{r['target_weight_bytes'] / 2**20:.0f} | "
              f"{100 * r['bandwidth_fraction']:.0f}% |")
    print(f"(copy bandwidth {results['copy_bandwidth'] / 1e9:.1f} GB/s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--precisions", default="f16,bf16,int8")
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--large", default=os.path.join(ROOT, "build",
                                                        "large"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=len(PROMPTS),
                        help="acceptance: how many of the speculative "
                        "benchmark's prompts")
    parser.add_argument("--acceptance-tokens", type=int, default=128,
                        help="acceptance: new tokens per prompt")
    parser.add_argument("--acceptance-models", default="both,draft,target",
                        help="acceptance: which models each precision "
                        "applies to (both, draft, target)")
    parser.add_argument("--skip-speed", action="store_true",
                        help="quality and acceptance only")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    precisions = args.precisions.split(",")
    if not all(p in ("f16", "bf16", "int8") for p in precisions):
        sys.exit(f"error: --precisions takes f16, bf16 and int8, got "
                 f"'{args.precisions}'")
    models = args.acceptance_models.split(",")
    if not models or not set(models) <= set(QUANTIZED):
        sys.exit(f"error: --acceptance-models takes both, draft and target, "
                 f"got '{args.acceptance_models}'")
    if not 1 <= args.windows <= 256 or not 2 <= args.window <= 512:
        sys.exit("error: --windows must be 1..256 and --window 2..512 "
                 "(the example target's context)")
    if not 1 <= args.prompts <= len(PROMPTS):
        sys.exit(f"error: --prompts must be between 1 and {len(PROMPTS)}")
    if not 1 <= args.repeats <= 100:
        sys.exit("error: --repeats must be between 1 and 100")
    tools = {name: os.path.join(args.build, "bin", name)
             for name in ("specc", "spec-run", "spec-run-graph")}
    for tool in tools.values():
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found; run `ninja -C {args.build} "
                     "specc spec-run spec-run-graph` first")

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        windows = held_out_windows(args.windows, args.window)
        results["quality"], results["quality_tokens"] = quality(
            tools["spec-run-graph"], precisions, windows, tmp)
        results["prompts"] = args.prompts
        results["acceptance"] = acceptance(
            tools["specc"], tools["spec-run"], precisions, tmp,
            PROMPTS[:args.prompts], args.acceptance_tokens, models)
        if not args.skip_speed:
            results["speed"], results["copy_bandwidth"] = speed(
                tools["specc"], tools["spec-run"], precisions, args, tmp)
    print_tables(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
