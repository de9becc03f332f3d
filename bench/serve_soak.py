#!/usr/bin/env python3
"""A bounded soak of spec-serve: many clients for minutes, some of which
go away mid-stream, and the server's memory before and after.

  python3 bench/serve_soak.py [--build build] [--artifact A.spec] [--batch]
                              [--minutes 10] [--concurrency 32] [--queue 16]
                              [--disconnect 0.2] [--warmup-seconds 30]
                              [--json out.json]

Starts spec-serve (--queue as given, so that a full queue answers 429;
with --batch, batched rounds, for an artifact compiled with --max-batch) and
runs closed-loop clients: streamed and whole completions of random prompts
and lengths (a client answered 429 waits as Retry-After says); a
--disconnect fraction of the streamed ones closes the
connection after a few chunks. After a warm-up at the same load it records
the server's resident memory, soaks for --minutes, lets the server go
idle, and records it again. It fails (exit 1) on any response other than
200 or the queue's 429, on a server that does not return to no active
slots and an empty queue, or on resident memory more than 5% above the
warm-up's. Not part of the test suite (it runs for minutes).
"""

import argparse
import http.client
import json
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_load  # noqa: E402  (Server, the prompts, the example artifact)


def resident_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def request(port, rng, disconnect):
    """One completion; returns its outcome: 'ok', 'disconnected', '429' or
    'failed: ...'."""
    stream = rng.random() < 0.7
    body = {"prompt": rng.choice(serve_load.PROMPTS),
            "max_tokens": rng.randint(1, 192), "stream": stream}
    if rng.random() < 0.3:
        body["seed"] = rng.randint(0, 1 << 30)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        c.request("POST", "/v1/completions", body=json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status == 429:
            # As clients do: wait as long as Retry-After says (spread a
            # little, so that they do not all come back at once).
            r.read()
            time.sleep(float(r.getheader("Retry-After", "1")) * rng.uniform(0.5, 1.0))
            return "429"
        if r.status != 200:
            return "failed: HTTP %d %s" % (r.status, r.read()[:200])
        if not stream:
            json.loads(r.read())
            return "ok"
        leave_after = rng.randint(1, 8) if rng.random() < disconnect else None
        chunks = 0
        for line in r:
            if line.startswith(b"data: [DONE]"):
                return "ok"
            if line.startswith(b"data: "):
                chunks += 1
                if leave_after is not None and chunks >= leave_after:
                    c.sock.shutdown(socket.SHUT_RDWR)
                    return "disconnected"
        return "failed: the stream ended without [DONE]"
    except (OSError, ValueError, http.client.HTTPException) as e:
        return "failed: %r" % e
    finally:
        c.close()


def load(port, concurrency, seconds, disconnect, seed):
    outcomes, lock = {}, threading.Lock()
    stop_at = time.time() + seconds

    def client(index):
        rng = random.Random(seed * 1000 + index)
        while time.time() < stop_at:
            outcome = request(port, rng, disconnect)
            key = "failed" if outcome.startswith("failed") else outcome
            with lock:
                outcomes[key] = outcomes.get(key, 0) + 1
                if key == "failed" and outcomes[key] <= 5:
                    print("  " + outcome, flush=True)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def wait_idle(server, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        values = server.counters()
        if values.get("specula_active_slots", 1) == 0 and values.get("specula_queue_depth", 1) == 0:
            return True
        time.sleep(0.2)
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(serve_load.ROOT, "build"))
    parser.add_argument("--artifact")
    parser.add_argument("--batch", action="store_true",
                        help="spec-serve --batch (an artifact compiled with --max-batch)")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--queue", type=int, default=16)
    parser.add_argument("--disconnect", type=float, default=0.2)
    parser.add_argument("--warmup-seconds", type=float, default=30)
    parser.add_argument("--json")
    args = parser.parse_args()
    serve_load.BIN = os.path.join(args.build, "bin")
    artifact = args.artifact or serve_load.example_artifact(args.build)
    server = serve_load.Server(artifact, ["--queue", str(args.queue)] +
                               (["--batch"] if args.batch else []))
    pid = server.process.pid
    started = time.time()
    warmup = load(server.port, args.concurrency, args.warmup_seconds, args.disconnect, 1)
    idle_after_warmup = wait_idle(server)
    rss_warm = resident_bytes(pid)
    print("warm-up %.0f s: %s; resident %.1f MiB" % (
        args.warmup_seconds, warmup, rss_warm / 2**20), flush=True)
    soak = load(server.port, args.concurrency, args.minutes * 60, args.disconnect, 2)
    idle_after_soak = wait_idle(server)
    rss_after = resident_bytes(pid)
    metrics = server.counters()
    server.stop()
    growth = rss_after / rss_warm - 1
    cancelled = metrics.get('specula_sequences_total{finish="cancelled"}', 0)
    print("soak %.1f min at %d clients: %s" % (args.minutes, args.concurrency, soak))
    print("sequences cancelled (server side): %d; idle after: %s" % (cancelled, idle_after_soak))
    print("resident after warm-up %.1f MiB, after the soak %.1f MiB (%+.1f%%)" % (
        rss_warm / 2**20, rss_after / 2**20, 100 * growth))
    print("exit code of spec-serve after SIGTERM: %d" % server.process.returncode)
    failed = (soak.get("failed", 0) + warmup.get("failed", 0) > 0 or not idle_after_warmup
              or not idle_after_soak or growth > 0.05 or server.process.returncode != 0)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"warmup": warmup, "soak": soak, "rss_warm": rss_warm,
                       "rss_after": rss_after, "cancelled": cancelled,
                       "seconds": time.time() - started, "passed": not failed}, f, indent=2)
    print("PASSED" if not failed else "FAILED")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
