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
  * the device's copy bandwidth (1 GiB device-to-device copies through
    the CUDA driver), for reference;
  * with --large, a large target's one-row decode step's weight bytes per
    second as a fraction of that bandwidth, and verify(k)/step(1) for
    k = 2..--max-rows (medians of --large-repeats; see large_model).

    device_check.py --spec-run build/bin/spec-run \\
        --artifact draft=D.spec --artifact medusa=M.spec ... \\
        [--cpu-tokens tokens.json] [--budget-seconds 120] \\
        [--large L.spec --large-weight-bytes N] --report out.json

With --record-cpu-tokens it runs CPU artifacts instead and writes their
tokens (the --cpu-tokens file of a later GPU run). Not a test of timing:
figures are measurements.
"""

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import time
from statistics import median

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


def copy_bandwidth(n=1 << 30, repeats=10):
    """Bytes read and written per second by device-to-device copies of n
    bytes (best of 3 timings of `repeats` copies), through the CUDA driver
    as the runtime loads it; None where there is no driver or device."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    device, context = ctypes.c_int(), ctypes.c_void_p()
    src, dst = ctypes.c_uint64(), ctypes.c_uint64()
    name = ctypes.create_string_buffer(256)

    def check(result, call):
        if result != 0:
            raise RuntimeError(f"{call} failed: CUresult {result}")

    try:
        check(cuda.cuInit(0), "cuInit")
        check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
        check(cuda.cuDeviceGetName(name, len(name), device), "cuDeviceGetName")
        check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device),
              "cuDevicePrimaryCtxRetain")
        check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        check(cuda.cuMemAlloc_v2(ctypes.byref(src), ctypes.c_size_t(n)),
              "cuMemAlloc")
        check(cuda.cuMemAlloc_v2(ctypes.byref(dst), ctypes.c_size_t(n)),
              "cuMemAlloc")
        copy = cuda.cuMemcpyDtoD_v2
        copy.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t]
        for _ in range(3):
            check(copy(dst, src, n), "cuMemcpyDtoD")
        check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(repeats):
                check(copy(dst, src, n), "cuMemcpyDtoD")
            check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
            best = min(best, time.perf_counter() - start)
    except RuntimeError as error:
        return {"error": str(error)}
    finally:
        for pointer in (src, dst):
            if pointer.value:
                cuda.cuMemFree_v2(pointer)
        if context.value:
            cuda.cuDevicePrimaryCtxRelease_v2(device)
    return {"bytes_per_second": 2 * n * repeats / best,
            "device": name.value.decode()}


def per_round(mode):
    """Seconds per decode-loop round (the prefill is not a round)."""
    rounds = mode["target_forwards"] - 1
    return mode["verify_seconds"] / rounds if rounds > 0 else None


def large_model(spec_run_path, artifact, device, weight_bytes, max_rows,
                repeats, bandwidth):
    """The bandwidth figures of a large target: the one-row decode step's
    weight bytes per second (against the device's copy bandwidth) and the
    cost of a k-row forward against a one-row one.

    A k-row forward is timed as the prefill of a prompt of k rows (BOS and
    k - 1 bytes, one new token): the calls for k and for one row do the
    same work besides the forward, so their ratio is verify(k)/step(1) at
    an empty cache (a verify forward later in a generation also reads its
    cache). The decode step is timed in a 32-token target-only generation,
    next to the speculative one (the draft's verify forwards of gamma + 1
    rows at a longer past: the same ratio, measured in the decode loop)."""
    text = "import os\nimport sys\n\n\ndef main(argv):\n" * 2
    samples = {rows: [] for rows in range(1, max_rows + 1)}
    for repeat in range(repeats):  # round all widths in turn: a slow spell
        for rows in samples:       # of the machine falls on every width
            out = spec_run(spec_run_path, artifact, text[:rows - 1], 1,
                           [f"--device={device}", "--no-speculation",
                            "--warmup=2"])
            samples[rows].append(out["no_speculation"]["seconds"])
        print(f"large: forwards of 1..{max_rows} rows, run {repeat + 1} of "
              f"{repeats}", flush=True)
    forwards = [{"rows": rows, "seconds": median(times)}
                for rows, times in samples.items()]
    for entry in forwards:
        entry["ratio"] = entry["seconds"] / forwards[0]["seconds"]
    print("large: verify(k)/step(1) " + ", ".join(
        f"{f['rows']}: {f['ratio']:.2f}" for f in forwards[1:]), flush=True)
    out = spec_run(spec_run_path, artifact, text, 32,
                   [f"--device={device}", "--compare", "--warmup=1"])
    step = per_round(out["no_speculation"])
    verify = per_round(out["speculative"])
    report = {"weight_bytes": weight_bytes, "forwards": forwards,
              "step_seconds": step, "proposals": out["proposals"],
              "verify_seconds_in_decode": verify,
              "verify_over_step_in_decode": verify / step if verify and step
              else None}
    if step:
        report["step_weight_bytes_per_second"] = weight_bytes / step
        if bandwidth and "bytes_per_second" in bandwidth:
            report["step_fraction_of_copy_bandwidth"] = (
                weight_bytes / step / bandwidth["bytes_per_second"])
    print(f"large: one-row step {step * 1e3:.2f} ms, weights read at "
          f"{weight_bytes / step / 1e9:.0f} GB/s" if step else
          "large: no decode rounds ran", flush=True)
    return report


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
    parser.add_argument("--large", help="a large target's CUDA artifact "
                        "(test/gpu/prepare-prebuilt.sh --large): measure "
                        "its bandwidth figures")
    parser.add_argument("--large-weight-bytes", type=int,
                        help="the large target's weight bytes")
    parser.add_argument("--large-repeats", type=int, default=3,
                        help="timings of each width (their median counts)")
    parser.add_argument("--device", default="cuda",
                        help="the device to run on (cpu: a dry run of the "
                        "check on CPU artifacts)")
    parser.add_argument("--max-rows", type=int, default=8,
                        help="the widest forward of the large target timed")
    args = parser.parse_args()

    artifacts = [a.split("=", 1) for a in args.artifact]
    if args.large and not args.large_weight_bytes:
        parser.error("--large needs --large-weight-bytes")
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
                               [f"--device={args.device}", "--compare"])
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
    if args.large:
        try:
            report["large"] = large_model(
                args.spec_run, args.large, args.device,
                args.large_weight_bytes, args.max_rows, args.large_repeats,
                report["copy_bandwidth"])
        except RuntimeError as error:
            report["large"] = {"error": str(error)}
    report["exact_greedy"] = exact
    text = json.dumps(report, indent=2)
    print(text)
    if args.report:
        open(args.report, "w").write(text + "\n")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
