"""Edits a copy of an artifact the way an attacker or a careless tool would,
then makes the manifest's sizes and checksums match the files again, so that
only the runtime's other checks can catch what changed.

usage: tamper.py ARTIFACT [PATH=JSON ...] [--library FILE] [--truncate-weights N]

PATH is a dotted manifest path (decoder.context_capacity); JSON its new value.
--library replaces decoder.so by FILE (another artifact's); --truncate-weights
cuts weights.bin to N bytes.
"""

import argparse
import json
import os
import shutil


def fnv1a64(path):
    h = 0xCBF29CE484222325
    with open(path, "rb") as f:
        data = f.read()
    # A byte at a time: slow (about a second per MiB), so only files that
    # changed are summed again.
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "fnv1a64:%016x" % h


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact")
    parser.add_argument("edits", nargs="*")
    parser.add_argument("--library")
    parser.add_argument("--truncate-weights", type=int)
    args = parser.parse_args()

    manifest_path = os.path.join(args.artifact, "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    for edit in args.edits:
        path, value = edit.split("=", 1)
        node = manifest
        keys = path.split(".")
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = json.loads(value)
    changed = []
    if args.library:
        shutil.copyfile(args.library, os.path.join(args.artifact, "decoder.so"))
        changed.append("library")
    if args.truncate_weights is not None:
        os.truncate(os.path.join(args.artifact, "weights.bin"),
                    args.truncate_weights)
        changed.append("weights")
    for key in changed:
        entry = manifest["files"][key]
        path = os.path.join(args.artifact, entry["file"])
        entry["size"] = os.path.getsize(path)
        entry["checksum"] = fnv1a64(path)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2)


if __name__ == "__main__":
    main()
