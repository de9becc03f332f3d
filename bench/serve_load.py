#!/usr/bin/env python3
"""Load on spec-serve: closed-loop clients on loopback.

  python3 bench/serve_load.py [--build build] [--artifact A.spec] [--concurrency 1,2,4,8]
                              [--seconds 10] [--max-tokens 128] [--modes off,fixed]
                              [--json out.json] [--plot out.png]

For each mode (off: spec-serve --no-speculation; fixed: the artifact's own
speculation length; batched: spec-serve --batch, the artifact's batched
rounds, each round's speculation length (0 or the draft's) chosen from
measured costs; batched-never and batched-always: --batch with
--speculation never or always) it starts spec-serve on a free port and, for each
concurrency C, runs C clients that each send streamed completions one after
another (a closed loop) for --seconds, then waits for the ones in flight.
It reports aggregate tokens/s, time to first token and time per output
token after the first (p50/p99 over requests), the gaps between streamed
chunks (p99), and tokens per target forward (from /metrics). Without
--artifact it compiles the example draft decoder (specc's gamma) with
batched rounds over 8 slots (specc --max-batch 8).
"""

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")  # --build changes it
PROMPTS = ["def __init__(self, name):", "class Parser:", "import os\n",
           "for i in range(", "return self.", "    def run(self):",
           "if __name__ == ", "with open("]


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


class Server:
    def __init__(self, artifact, extra):
        self.process = subprocess.Popen(
            [os.path.join(BIN, "spec-serve"), artifact, "--port", "0"] + extra,
            stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().strip()
        found = re.search(r":(\d+)$", line)
        if not found:
            sys.exit("serve_load.py: spec-serve did not start (%r)" % line)
        self.port = int(found.group(1))
        while self.get("/health")[0] != 200:
            if self.process.poll() is not None:  # it could not open the artifact
                sys.exit("serve_load.py: spec-serve exited with %d before it was "
                         "ready" % self.process.returncode)
            time.sleep(0.05)

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode()
        except OSError:
            return 0, ""
        finally:
            c.close()

    def counters(self):
        values = {}
        for line in self.get("/metrics")[1].splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=60)


def one_request(port, prompt, max_tokens):
    """Streams one completion; returns (tokens, ttft, tpot, chunk gaps)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    start = time.perf_counter()
    c.request("POST", "/v1/completions", body=json.dumps({
        "prompt": prompt, "max_tokens": max_tokens, "stream": True,
        "stream_options": {"include_usage": True}}),
        headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.status
    times, tokens = [], 0
    for line in r:
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        elif chunk["choices"] and chunk["choices"][0]["text"]:
            times.append(time.perf_counter())
    c.close()
    if not times:
        return tokens, float("nan"), float("nan"), []
    ttft = times[0] - start
    tpot = (times[-1] - times[0]) / (tokens - 1) if tokens > 1 else 0.0
    return tokens, ttft, tpot, [b - a for a, b in zip(times, times[1:])]


def run_point(server, concurrency, seconds, max_tokens):
    before = server.counters()
    results, lock = [], threading.Lock()
    stop_at = time.perf_counter() + seconds

    def client(index):
        n = index
        while time.perf_counter() < stop_at:
            result = one_request(server.port, PROMPTS[n % len(PROMPTS)], max_tokens)
            with lock:
                results.append(result)
            n += concurrency

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    after = server.counters()
    delta = lambda name: after.get(name, 0) - before.get(name, 0)
    tokens = sum(r[0] for r in results)
    gaps = [g for r in results for g in r[3]]
    return {
        "concurrency": concurrency, "requests": len(results),
        "tokens_per_second": tokens / wall,
        "ttft_p50": percentile([r[1] for r in results], 50),
        "ttft_p99": percentile([r[1] for r in results], 99),
        "tpot_p50": percentile([r[2] for r in results], 50),
        "tpot_p99": percentile([r[2] for r in results], 99),
        "chunk_gap_p99": percentile(gaps, 99),
        "tokens_per_target_forward":
            delta("specula_generated_tokens_total") /
            max(1.0, delta("specula_target_forwards_total")),
    }


def plot(results, path):
    try:
        import matplotlib
    except ImportError:
        sys.exit("--plot needs matplotlib (Debian: python3-matplotlib); "
                 "the figures are in the table and --json")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for mode, points in results.items():
        xs = [p["concurrency"] for p in points]
        left.plot(xs, [p["tokens_per_second"] for p in points], marker="o", label=mode)
        right.plot(xs, [p["tpot_p99"] * 1e3 for p in points], marker="o", label=mode)
    for axis, label in ((left, "aggregate tokens/s"), (right, "p99 time per output token (ms)")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("concurrent clients")
        axis.set_ylabel(label)
        axis.legend()
    fig.tight_layout()
    fig.savefig(path)


def example_artifact(build):
    """The example draft decoder (gamma from the cost model) with batched
    rounds over 8 slots, compiled."""
    artifact = os.path.join(build, "bench", "serve-draft.spec")
    os.makedirs(os.path.dirname(artifact), exist_ok=True)
    subprocess.run([os.path.join(BIN, "specc"), os.path.join(ROOT, "models", "target.onnx"),
                    "--draft", os.path.join(ROOT, "models", "draft.onnx"),
                    "--acceptance-rate", "0.8", "--max-batch", "8", "-o", artifact],
                   check=True, stderr=subprocess.DEVNULL)
    return artifact


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--artifact")
    parser.add_argument("--concurrency", default="1,2,4,8,16,32")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--modes", default="off,fixed")
    parser.add_argument("--json")
    parser.add_argument("--plot")
    args = parser.parse_args()
    global BIN
    BIN = os.path.join(args.build, "bin")
    artifact = args.artifact or example_artifact(args.build)
    results = {}
    for mode in args.modes.split(","):
        extra = {"off": ["--no-speculation"], "fixed": [], "batched": ["--batch"],
                 "batched-never": ["--batch", "--speculation", "never"],
                 "batched-always": ["--batch", "--speculation", "always"]}[mode]
        server = Server(artifact, extra)
        results[mode] = []
        for concurrency in [int(c) for c in args.concurrency.split(",")]:
            point = run_point(server, concurrency, args.seconds, args.max_tokens)
            results[mode].append(point)
            print("%-14s c=%-3d %7.0f tokens/s  ttft p50 %6.1f ms p99 %6.1f ms  "
                  "tpot p50 %6.3f ms p99 %6.3f ms  %.2f tokens/forward  (%d requests)" % (
                      mode, concurrency, point["tokens_per_second"],
                      point["ttft_p50"] * 1e3, point["ttft_p99"] * 1e3,
                      point["tpot_p50"] * 1e3, point["tpot_p99"] * 1e3,
                      point["tokens_per_target_forward"], point["requests"]), flush=True)
        server.stop()
    for mode, label in (("fixed", "speculation"), ("batched", "batched"),
                        ("batched-never", "batched-never"),
                        ("batched-always", "batched-always")):
        if "off" in results and mode in results:
            for off, other in zip(results["off"], results[mode]):
                print("c=%-3d %s/off throughput %.2fx" % (
                    off["concurrency"], label,
                    other["tokens_per_second"] / off["tokens_per_second"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
