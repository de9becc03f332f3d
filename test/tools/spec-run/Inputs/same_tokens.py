"""Checks that spec-run --json files generated the same token ids.

  same_tokens.py RUN.json...

Every run (speculative or not) in every file must have the same
`token_ids`; prints "N runs, T tokens each: identical", or what differs and
exits 1.
"""
import json
import sys

runs = []
for path in sys.argv[1:]:
    report = json.load(open(path))
    for mode in ("speculative", "no_speculation"):
        if mode in report:
            runs.append(("%s (%s)" % (path, mode), report[mode]["token_ids"]))
first_name, first = runs[0]
for name, tokens in runs[1:]:
    if tokens != first:
        at = next((i for i, (a, b) in enumerate(zip(first, tokens)) if a != b),
                  min(len(first), len(tokens)))
        print("%s and %s differ at token %d" % (first_name, name, at))
        sys.exit(1)
print("%d runs, %d tokens each: identical" % (len(runs), len(first)))
