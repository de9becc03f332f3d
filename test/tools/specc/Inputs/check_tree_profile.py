"""Checks a tree decoder's `spec-run --json` output against its --profile:
both carry the rounds by final node, whose counts by node depth give the
accepted positions spec-run reports."""

import json
import sys

run = json.load(open(sys.argv[1]))["speculative"]
profile = json.load(open(sys.argv[2]))
tree = profile["tree"]
rounds = tree["rounds_by_final_node"]
print(f"rounds by final node: {len(rounds)} rows")
print("same rounds in --json and --profile:",
      rounds == run["rounds_by_final_node"])


def depth(row):
    d = 0
    while row:
        row = tree["parents"][row - 1]
        d += 1
    return d


deepest = max(depth(row) for row in range(len(rounds)))
total = sum(rounds)
accepted = [sum(n for row, n in enumerate(rounds) if depth(row) > i) / total
            for i in range(deepest)]
print("lengths agree with accepted_per_position:",
      all(abs(a - b) < 1e-5
          for a, b in zip(accepted, run["accepted_per_position"]))
      and len(accepted) == len(run["accepted_per_position"]))
print("verify_cost measured:", profile.get("verify_cost", -1) >= 0)
