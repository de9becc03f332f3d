"""Checks `spec-run` on an artifact that carries a tokenizer.json against
spec-tokenize on that same tokenizer.json: a run from the prompt's text and a
run from BOS + spec-tokenize's ids of it generate the same tokens (so
spec-run tokenized the prompt as spec-tokenize does), the text is what
spec-tokenize decodes (prompt and new tokens decoded together, special tokens
skipped, less the prompt's own text), and speculative decoding gave the
tokens of the target alone.

  check_tokenized_run.py SPEC_RUN SPEC_TOKENIZE ARTIFACT PROMPT NEW_TOKENS
"""
import json
import os
import subprocess
import sys


def output(command):
    return subprocess.run(command, check=True, capture_output=True).stdout.decode("utf-8")


def main():
    spec_run, spec_tokenize, artifact, prompt, new_tokens = sys.argv[1:]
    tokenizer = os.path.join(artifact, "tokenizer.json")
    with open(os.path.join(artifact, "manifest.json"), encoding="utf-8") as f:
        bos = json.load(f)["model"]["bos_token_id"]
    ids = [bos] + json.loads(output([spec_tokenize, tokenizer, "--text", prompt, "--ids"]))
    common = ["--max-new-tokens", new_tokens, "--compare", "--json"]
    from_text = json.loads(output([spec_run, artifact, "--prompt", prompt, *common]))
    from_ids = json.loads(output([spec_run, artifact, "--prompt-ids",
                                  ",".join(map(str, ids)), *common]))
    tokens = from_text["speculative"]["token_ids"]

    def decode(token_ids):
        return json.loads(output([spec_tokenize, tokenizer, "--decode",
                                  ",".join(map(str, token_ids)), "--skip-special",
                                  "--json"]))["text"]

    whole, start = decode(ids + tokens), decode(ids)
    problems = []
    if tokens != from_ids["speculative"]["token_ids"]:
        problems.append("the run from the prompt's text and the run from "
                        f"spec-tokenize's ids {ids} differ")
    if start != prompt or from_text["speculative"]["text"] != whole[len(start):]:
        problems.append(f"the run's text {from_text['speculative']['text']!r} is not "
                        f"the decoded continuation {whole[len(start):]!r}")
    if not from_text["identical"] or tokens != from_text["no_speculation"]["token_ids"]:
        problems.append("speculative decoding differs from the target alone")
    for p in problems:
        print("error:", p)
    if not problems:
        print(f"prompt: {len(ids)} tokens with BOS; {len(tokens)} new tokens; "
              "the text decodes; speculative = target-only")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
