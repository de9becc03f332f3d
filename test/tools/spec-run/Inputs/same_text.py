"""Compares the text part (before the statistics) of two spec-run outputs:
streamed and not streamed, they must print the same text.

  same_text.py STREAMED.txt PLAIN.txt
"""
import sys


def text(path):
    with open(path, "rb") as f:
        out = f.read()
    end = out.find(b"\n\nspeculative:")
    if end < 0:
        end = out.find(b"\n\nno speculation:")
    if end < 0:
        sys.exit(f"error: {path} has no statistics")
    return out[:end]


streamed, plain = text(sys.argv[1]), text(sys.argv[2])
if streamed != plain:
    sys.exit(f"error: the streamed text differs:\n{streamed!r}\n{plain!r}")
print(f"same text ({len(plain)} bytes)")
