#!/usr/bin/env python3
"""The GPU check: runs CUDA artifacts on the GPU and writes a JSON report.

For each decoder (draft, Medusa heads, MTP module) it runs the prompts of
test/unit/passes/ExactGreedyTest.cpp with `spec-run --device cuda --compare
--json` (speculative and target-only in one process) and reports:

  * exact greedy on the device: prompts whose speculative tokens equal the
    target-only tokens (every one must);
  * tokens per target forward, tokens/s of both modes and the speedup;
  * CUDA vs CPU token agreement, when --cpu-tokens gives the CPU's tokens
    for the same prompts (a figure, not a requirement: floating point
    differs between devices): prompts identical, and the mean fraction of
    each continuation equal before the first difference;
  * the device's copy bandwidth (torch, if installed), for reference.

    device_check.py --spec-run build/bin/spec-run \\
        --artifact draft=D.spec --artifact medusa=M.spec ... \\
        [--cpu-tokens tokens.json] [--budget-seconds 120] --report out.json

With --record-cpu-tokens it runs CPU artifacts instead and writes their
tokens (the --cpu-tokens file of a later GPU run). Not a test of timing:
figures are measurements.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def prompts():
    """The 20 prompts of the exact-greedy test, read from its source."""
    source = open(os.path.join(ROOT, "test/unit/passes/ExactGreedyTest.cpp")).read()
    body = source[source.index("kPrompts[] = {"):]
    body = body[:body.index("};")]
    literals = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return [bytes(s, "ascii").decode("unicode_escape") for s in literals]


def spec_run(spec_run_path, artifact, prompt, tokens, extra):
    command = [spec_run_path, artifact, f"--prompt={prompt}",
               f"--max-new-tokens={tokens}", "--json", *extra]
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=300)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(command[:2])} ran over 300 s")
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:2])} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def copy_bandwidth():
    """Bytes read and written per second by a device-to-device copy."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    n = 1 << 30  # 1 GiB each way
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    start = time.perf_counter()
    repeats = 10
    for _ in range(repeats):
        dst.copy_(src)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {"bytes_per_second": 2 * n * repeats / seconds,
            "device": torch.cuda.get_device_name()}


def agreement(cpu, gpu):
    """(identical, fraction of the CPU continuation equal before the first
    difference)."""
    same = 0
    for a, b in zip(cpu, gpu):
        if a != b:
            break
        same += 1
    return cpu == gpu, same / max(1, len(cpu))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec-run", required=True)
    parser.add_argument("--artifact", action="append", default=[],
                        help="NAME=PATH of an artifact (repeat)")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--budget-seconds", type=float, default=150,
                        help="per decoder: stop taking prompts after this")
    parser.add_argument("--cpu-tokens", help="the CPU's tokens, to compare")
    parser.add_argument("--record-cpu-tokens",
                        help="run CPU artifacts and write their tokens here")
    parser.add_argument("--report", help="the JSON report to write")
    args = parser.parse_args()

    artifacts = [a.split("=", 1) for a in args.artifact]
    all_prompts = prompts()

    if args.record_cpu_tokens:
        recorded = {}
        for name, path in artifacts:
            recorded[name] = [
                spec_run(args.spec_run, path, p, args.max_new_tokens,
                         ["--no-speculation"])["no_speculation"]["text"]
                for p in all_prompts]
        json.dump({"max_new_tokens": args.max_new_tokens, "tokens": recorded},
                  open(args.record_cpu_tokens, "w"))
        print(f"recorded CPU tokens of {len(artifacts)} decoders x "
              f"{len(all_prompts)} prompts")
        return 0

    cpu_tokens = json.load(open(args.cpu_tokens))["tokens"] if args.cpu_tokens else {}
    report = {"max_new_tokens": args.max_new_tokens, "decoders": {}}
    exact = True
    for name, path in artifacts:
        start = time.perf_counter()
        entry = {"prompts": 0, "identical": 0, "errors": []}
        totals = {"speculative": [0, 0, 0.0], "no_speculation": [0, 0, 0.0]}
        agree = []
        for i, prompt in enumerate(all_prompts):
            if time.perf_counter() - start > args.budget_seconds:
                break
            try:
                out = spec_run(args.spec_run, path, prompt, args.max_new_tokens,
                               ["--device=cuda", "--compare"])
            except RuntimeError as error:
                entry["errors"].append(str(error))
                exact = False
                break
            entry["prompts"] += 1
            entry["identical"] += bool(out["identical"])
            exact &= bool(out["identical"])
            for mode, total in totals.items():
                total[0] += out[mode]["new_tokens"]
                total[1] += out[mode]["target_forwards"]
                total[2] += out[mode]["seconds"]
            if name in cpu_tokens:
                agree.append(agreement(cpu_tokens[name][i],
                                       out["no_speculation"]["text"]))
            print(f"{name}: prompt {i + 1}: identical={out['identical']} "
                  f"{out['speculative']['target_forwards']} forwards, "
                  f"{out['speculative']['seconds']:.3f} s vs "
                  f"{out['no_speculation']['seconds']:.3f} s", flush=True)
        spec, base = totals["speculative"], totals["no_speculation"]
        if spec[1] and spec[2] and base[2]:
            entry["tokens_per_target_forward"] = spec[0] / spec[1]
            entry["speculative_tokens_per_second"] = spec[0] / spec[2]
            entry["target_only_tokens_per_second"] = base[0] / base[2]
            entry["speedup"] = (spec[0] / spec[2]) / (base[0] / base[2])
        if agree:
            entry["cuda_vs_cpu_identical_prompts"] = sum(a for a, _ in agree)
            entry["cuda_vs_cpu_mean_agreeing_prefix"] = sum(f for _, f in agree) / len(agree)
        entry["seconds"] = time.perf_counter() - start
        report["decoders"][name] = entry
    report["copy_bandwidth"] = copy_bandwidth()
    report["exact_greedy"] = exact
    text = json.dumps(report, indent=2)
    print(text)
    if args.report:
        open(args.report, "w").write(text + "\n")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
