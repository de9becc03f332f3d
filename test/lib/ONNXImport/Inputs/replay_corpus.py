"""Runs spec-translate --import-onnx on every file of a fuzz corpus and fails
if one ends with a signal or reports an importer bug.

usage: replay_corpus.py SPEC_TRANSLATE CORPUS_DIR
"""

import os
import subprocess
import sys

tool, corpus = sys.argv[1], sys.argv[2]
imported = refused = 0
problems = []
for name in sorted(os.listdir(corpus)):
    path = os.path.join(corpus, name)
    run = subprocess.run([tool, "--import-onnx", path, "-o", os.devnull],
                         capture_output=True, text=True, errors="replace")
    if run.returncode == 0:
        imported += 1
    elif run.returncode == 1 and "importer bug" not in run.stderr:
        refused += 1
    else:
        problems.append("%s: exit %d\n%s" % (name, run.returncode,
                                             run.stderr[-2000:]))
if problems:
    sys.exit("\n".join(problems))
print("replayed %d inputs: %d imported, %d refused"
      % (imported + refused, imported, refused))
