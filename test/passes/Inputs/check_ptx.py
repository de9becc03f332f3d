#!/usr/bin/env python3
"""Extracts the PTX of every gpu.binary in a printed MLIR module (what
spec-to-cuda produces with gpu-module-to-binary{format=isa}) and assembles
each with ptxas for the given architecture. Exits non-zero on the first
kernel ptxas rejects, naming it; prints how many passed."""
import argparse
import re
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser()
parser.add_argument("module")
parser.add_argument("--ptxas", required=True)
parser.add_argument("--arch", required=True)
parser.add_argument("--expect-version", help="the .version every PTX declares")
args = parser.parse_args()

text = open(args.module, encoding="utf-8").read()
binaries = re.findall(r'gpu\.binary @(\w+) .*?assembly = "((?:[^"\\]|\\.)*)"', text)
if not binaries:
    sys.exit(f"error: no gpu.binary with PTX in {args.module}")


def unescape(s):
    # MLIR prints non-printable bytes, quotes and backslashes as \XX (hex).
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), s)


with tempfile.TemporaryDirectory() as tmp:
    for name, escaped in binaries:
        ptx = unescape(escaped)
        version = re.search(r"^\.version (\S+)", ptx, re.M)
        if args.expect_version and (not version or version.group(1) != args.expect_version):
            sys.exit(f"error: {name}: PTX .version {version and version.group(1)}, "
                     f"expected {args.expect_version}")
        path = f"{tmp}/{name}.ptx"
        open(path, "w").write(ptx)
        done = subprocess.run([args.ptxas, f"-arch={args.arch}", path, "-o", f"{tmp}/{name}.cubin"],
                              capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"error: ptxas -arch={args.arch} rejects {name}:\n{done.stderr}")
print(f"{len(binaries)} kernel modules pass ptxas -arch={args.arch}")
