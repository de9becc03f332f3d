"""A client for spec-serve's tests: starts the server on a free port of
127.0.0.1, talks to it over HTTP (the standard library's http.client, as any
OpenAI-style client would) and prints what it saw, for FileCheck.

  serve_client.py SPEC_SERVE ARTIFACT --check NAME [--reference run.json]
                  [-- extra spec-serve options]
"""

import argparse
import concurrent.futures
import http.client
import json
import re
import signal
import subprocess
import sys
import time

TIMEOUT = 120  # seconds any one wait may take before the test fails


class Server:
    def __init__(self, binary, artifact, extra):
        self.process = subprocess.Popen(
            [binary, artifact, "--port", "0"] + extra,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not match:
            sys.exit("no port in spec-serve's first line: %r; stderr: %s" %
                     (line, self.process.stderr.read()))
        self.port = int(match.group(1))
        deadline = time.time() + TIMEOUT
        while self.get("/health")[0] != 200:
            if time.time() > deadline or self.process.poll() is not None:
                self.process.kill()
                sys.exit("spec-serve did not become ready")
            time.sleep(0.05)

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)

    def get(self, path):
        c = self.connection()
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode()
        except ConnectionError:
            return 0, ""
        finally:
            c.close()

    def post(self, body, raw=None):
        c = self.connection()
        c.request("POST", "/v1/completions",
                  body=raw if raw is not None else json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        return r.status, dict(r.getheaders()), text

    def complete(self, **body):
        status, _, text = self.post(body)
        assert status == 200, (status, text)
        return json.loads(text)

    def open_stream(self, **body):
        """The response of a streamed request, its events to be read."""
        c = self.connection()
        c.request("POST", "/v1/completions", body=json.dumps(dict(body, stream=True)),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200 and r.getheader("Content-Type").startswith(
            "text/event-stream"), (r.status, r.read())
        return c, r

    @staticmethod
    def events(response):
        """The `data:` payloads of a server-sent event stream, in order."""
        for line in response:
            line = line.decode().rstrip("\n")
            if line.startswith("data: "):
                yield line[len("data: "):]

    def stream(self, **body):
        c, r = self.open_stream(**body)
        chunks = list(self.events(r))
        c.close()
        assert chunks[-1] == "[DONE]", chunks[-1]
        return [json.loads(chunk) for chunk in chunks[:-1]]

    def metric(self, name):
        """The value of a series, e.g. 'specula_active_slots' or
        'specula_sequences_total{finish="cancelled"}'."""
        for line in self.get("/metrics")[1].splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def wait_for(self, what, condition):
        deadline = time.time() + TIMEOUT
        while not condition():
            if time.time() > deadline:
                sys.exit("timed out waiting for " + what)
            time.sleep(0.02)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=TIMEOUT)
        return self.process.returncode, err


def streamed_text(chunks):
    text = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
    finish = [c["choices"][0]["finish_reason"] for c in chunks
              if c["choices"] and c["choices"][0]["finish_reason"]]
    return text, finish


PROMPTS = ["class Parser:", "def __init__(self, name):", "import os\n",
           "for i in range(", "return self.", "    def run(self):",
           "if __name__ == ", "x = [", "while True:", "try:\n    ",
           "print(", "with open(", "self.name = ", "from . import",
           "# The ", "elif "]


PROMPT = "def __init__(self, name):"
STOPS = ["__ =", "class__\n"]


def check_api(server, reference):
    status, models = server.get("/v1/models")
    model = json.loads(models)["data"][0]
    print("models: %d %s %s" % (status, model["id"], model["object"]))

    whole = server.complete(prompt=PROMPT, max_tokens=48)
    choice = whole["choices"][0]
    print("whole: finish %s, usage %s, same as spec-run: %s" % (
        choice["finish_reason"], json.dumps(whole["usage"], sort_keys=True),
        choice["text"] == reference["speculative"]["text"]))

    chunks = server.stream(prompt=PROMPT, max_tokens=48,
                           stream_options={"include_usage": True})
    text, finish = streamed_text(chunks)
    print("streamed: several chunks %s, finish %s, usage %s, same as whole: %s" % (
        len(chunks) > 3, finish, json.dumps(chunks[-1]["usage"], sort_keys=True),
        text == choice["text"]))

    ids = [256] + list(PROMPT.encode())
    by_ids = server.complete(prompt=ids, max_tokens=48)
    print("token ids: same as text: %s" %
          (by_ids["choices"][0]["text"] == choice["text"]))

    # The text up to the first stop string, which the response leaves out.
    cut = min(i for i in (choice["text"].find(stop) for stop in STOPS) if i >= 0)
    stopped = server.complete(prompt=PROMPT, max_tokens=48, stop=STOPS)
    print("stop strings: finish %s, cut before the first: %s, tokens %d" % (
        stopped["choices"][0]["finish_reason"],
        stopped["choices"][0]["text"] == choice["text"][:cut],
        stopped["usage"]["completion_tokens"]))
    streamed_stop, finish = streamed_text(
        server.stream(prompt=PROMPT, max_tokens=48, stop=STOPS))
    print("streamed stop strings: finish %s, same: %s" % (
        finish, streamed_stop == stopped["choices"][0]["text"]))


def check_concurrent(server, seeded=False):
    """Every request answered alone, then all at once: the same tokens
    (seeded: request i with seed i)."""
    def body(i):
        return dict(prompt=PROMPTS[i], max_tokens=32, **({"seed": i} if seeded else {}))
    alone = [server.complete(**body(i))["choices"][0]["text"]
             for i in range(len(PROMPTS))]
    with concurrent.futures.ThreadPoolExecutor(len(PROMPTS)) as pool:
        def one(i):
            if i % 2:
                return streamed_text(server.stream(**body(i)))[0]
            return server.complete(**body(i))["choices"][0]["text"]
        together = list(pool.map(one, range(len(PROMPTS))))
    same = sum(a == b for a, b in zip(alone, together))
    print("concurrent: %d of %d identical to alone" % (same, len(PROMPTS)))


def check_seeded(server, reference, seed):
    """A sampling artifact: a request with spec-run's seed gets the text of
    `reference` (a run of spec-run with that seed), streamed or not; other
    seeds draw other texts."""
    whole = server.complete(prompt=PROMPT, max_tokens=48, seed=seed)
    text = whole["choices"][0]["text"]
    print("seed %d: same as spec-run: %s" % (seed, text == reference["text"]))
    streamed, _ = streamed_text(
        server.stream(prompt=PROMPT, max_tokens=48, seed=seed))
    print("streamed: same as whole: %s" % (streamed == text))
    others = {server.complete(prompt=PROMPT, max_tokens=48, seed=s)
              ["choices"][0]["text"] for s in range(seed + 1, seed + 5)}
    print("four other seeds: another text: %s" % bool(others - {text}))
    unseeded = {server.complete(prompt=PROMPT, max_tokens=48)
                ["choices"][0]["text"] for _ in range(4)}
    print("four requests without a seed: several texts: %s" % (len(unseeded) > 1))


def check_refusals(server):
    cases = [
        ("bad json", None, "{\"prompt\": "),
        ("not an object", None, "[1, 2]"),
        ("wrong type", {"prompt": "x", "max_tokens": "many"}, None),
        ("no prompt", {"max_tokens": 4}, None),
        ("token outside", {"prompt": [256, 100000]}, None),
        ("too long", {"prompt": "x" * 600}, None),
        ("unknown model", {"prompt": "x", "model": "gpt-4"}, None),
        ("temperature", {"prompt": "x", "temperature": 0.7}, None),
        ("n", {"prompt": "x", "n": 2}, None),
        ("two prompts", {"prompt": ["a", "b"]}, None),
    ]
    for name, body, raw in cases:
        status, _, text = server.post(body, raw)
        error = json.loads(text)["error"]
        print("refused %s: %d %s: %s" % (name, status, error["type"], error["message"]))
    c = server.connection()
    c.request("GET", "/v2/nothing")
    r = c.getresponse()
    print("unknown route: %d %s" % (r.status, json.loads(r.read())["error"]["message"]))
    c.close()
    print("still serving: %s" % json.dumps(
        server.complete(prompt="x", max_tokens=2)["usage"], sort_keys=True))


def check_metrics(server):
    status, text = server.get("/metrics")
    for name in ["specula_http_responses_total{status=\"200\"}",
                 "specula_http_responses_total{status=\"400\"}",
                 "specula_active_slots", "specula_queue_depth",
                 "specula_generated_tokens_total",
                 "specula_target_forwards_total",
                 "specula_accepted_rounds_total{position=\"1\"}",
                 "specula_speculation_length_rounds_total{length=\"2\"}",
                 "specula_time_to_first_token_seconds_count",
                 "specula_inter_token_latency_seconds_count"]:
        value = server.metric(name)
        print("metric %s: %s" % (name, "positive" if value and value > 0
                                 else "zero" if value == 0 else "missing"))


def check_cancel(server):
    """A client that goes away mid-stream frees its slot."""
    c, r = server.open_stream(prompt="class Parser:", max_tokens=400)
    events = server.events(r)
    for _ in range(3):
        next(events)
    c.sock.close()
    c.close()
    cancelled = 'specula_sequences_total{finish="cancelled"}'
    server.wait_for("the cancellation", lambda: server.metric(cancelled) == 1)
    server.wait_for("the free slot", lambda: server.metric("specula_active_slots") == 0)
    print("after the disconnect: cancelled %d, active slots %d, fewer tokens than asked: %s" % (
        server.metric(cancelled), server.metric("specula_active_slots"),
        server.metric("specula_generated_tokens_total") < 400))


def check_queue(server):
    """With --queue 1: one running, one waiting, the next refused."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        running = pool.submit(server.complete, prompt="a", max_tokens=60)
        server.wait_for("the first slot", lambda: server.metric("specula_active_slots") == 1)
        waiting = pool.submit(server.complete, prompt="b", max_tokens=4)
        server.wait_for("the queue", lambda: server.metric("specula_queue_depth") == 1)
        status, headers, text = server.post({"prompt": "c", "max_tokens": 4})
        print("full queue: %d, Retry-After %s, %s" % (
            status, headers.get("Retry-After"), json.loads(text)["error"]["type"]))
        print("queued ones served: %s %s" % (
            running.result()["usage"]["completion_tokens"],
            waiting.result()["usage"]["completion_tokens"]))


def check_sigterm(server):
    """SIGTERM while a stream is in flight: the stream completes, exit 0."""
    c, r = server.open_stream(prompt="class Parser:", max_tokens=50,
                              stream_options={"include_usage": True})
    events = server.events(r)
    first = next(events)
    server.process.send_signal(signal.SIGTERM)
    rest = list(events)
    c.close()
    chunks = [json.loads(e) for e in [first] + rest[:-1]]
    code, err = server.process.communicate(timeout=TIMEOUT)
    print("stream across SIGTERM: ends with %s, %d tokens; exit %d" % (
        rest[-1], chunks[-1]["usage"]["completion_tokens"], server.process.returncode))
    return err


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("artifact")
    parser.add_argument("--check", required=True)
    parser.add_argument("--reference")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--run", default="speculative",
                        help="which of the reference's runs to expect")
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    server = Server(args.binary, args.artifact, extra)
    try:
        run(server, args)
    finally:  # a failed check must not leave the server running
        if server.process.poll() is None:
            server.process.kill()


def run(server, args):
    if args.check == "api":
        check_api(server, json.load(open(args.reference)))
        check_concurrent(server)
        check_refusals(server)
        check_metrics(server)
    elif args.check == "cancel":
        check_cancel(server)
        check_queue(server)
    elif args.check == "batched":
        check_api(server, json.load(open(args.reference)))
        check_concurrent(server)
        status, text = server.get("/metrics")
        print("slots: %s" % re.search(r"^specula_slots (\S+)", text, re.M).group(1))
    elif args.check == "seeded":
        check_seeded(server, json.load(open(args.reference))[args.run], args.seed)
        check_concurrent(server, seeded=True)
    elif args.check == "batched-cancel":
        check_cancel(server)
    if args.check == "sigterm":
        sys.stderr.write(check_sigterm(server))
    else:
        code, err = server.stop()
        print("exit %d" % code)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
