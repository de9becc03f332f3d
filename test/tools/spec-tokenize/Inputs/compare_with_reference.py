#!/usr/bin/env python3
"""Encodes and decodes files with spec-tokenize and with Hugging Face's
JavaScript tokenizers (reference.mjs) and requires identical ids and
identical decoded text for every file.

  compare_with_reference.py SPEC_TOKENIZE TOKENIZERS_PACKAGE_DIR TOKENIZER_DIR PATH...

A PATH that is a folder stands for the regular files directly in it.
"""
import json
import os
import subprocess
import sys


def run(command):
    result = subprocess.run(command, capture_output=True)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command[:3])}... failed:\n"
                 + result.stderr.decode(errors="replace"))
    return [json.loads(line) for line in result.stdout.decode().split("\n") if line]


def main():
    spec_tokenize, package_dir, tokenizer_dir, *paths = sys.argv[1:]
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p)
                            if os.path.isfile(os.path.join(p, f)))
        else:
            files.append(p)
    name = os.path.basename(os.path.dirname(os.path.normpath(tokenizer_dir)))
    reference = run(["node", os.path.join(os.path.dirname(__file__), "reference.mjs"),
                     package_dir, tokenizer_dir, *files])
    command = [spec_tokenize, os.path.join(tokenizer_dir, "tokenizer.json"),
               "--json", "--round-trip"]
    for f in files:
        command += ["--file", f]
    ours = run(command)
    assert len(ours) == len(reference) == len(files)
    same = tokens = 0
    for f, want, got in zip(files, reference, ours):
        tokens += len(want["ids"])
        if got["ids"] != want["ids"]:
            i = next((k for k, (a, b) in enumerate(zip(got["ids"], want["ids"])) if a != b),
                     min(len(got["ids"]), len(want["ids"])))
            print(f"{name}: {f}: ids differ at token {i} of {len(want['ids'])}:\n"
                  f"  reference:     {want['ids'][max(0, i - 3):i + 5]}\n"
                  f"  spec-tokenize: {got['ids'][max(0, i - 3):i + 5]} "
                  f"{got['pieces'][max(0, i - 3):i + 5]}")
        elif got["text"] != want["text"]:
            i = next((k for k, (a, b) in enumerate(zip(got["text"], want["text"])) if a != b),
                     min(len(got["text"]), len(want["text"])))
            print(f"{name}: {f}: decoded text differs at character {i}:\n"
                  f"  reference:     {want['text'][max(0, i - 20):i + 20]!r}\n"
                  f"  spec-tokenize: {got['text'][max(0, i - 20):i + 20]!r}")
        else:
            same += 1
    print(f"{name}: {same} of {len(files)} files identical to the reference "
          f"(ids and decoded text, {tokens} tokens)")
    return 0 if same == len(files) else 1


if __name__ == "__main__":
    sys.exit(main())
