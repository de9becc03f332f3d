"""Checks spec-run --json output: every run generated exactly EXPECTED new
tokens and stopped because the context was full, and with --compare both
runs produced the same text.

usage: check_full_context.py RESULT.json EXPECTED
"""

import json
import sys

result = json.load(open(sys.argv[1]))
expected = int(sys.argv[2])
runs = [result[k] for k in ("speculative", "no_speculation") if k in result]
problems = []
for name, run in zip(("speculative", "no_speculation"), runs):
    if run["new_tokens"] != expected or run["stop_reason"] != "context_full":
        problems.append("%s: %d new tokens, stop reason %s; expected %d, "
                        "context_full" % (name, run["new_tokens"],
                                          run["stop_reason"], expected))
if "identical" in result and not result["identical"]:
    problems.append("the speculative and target-only texts differ")
if problems:
    sys.exit("\n".join(problems))
