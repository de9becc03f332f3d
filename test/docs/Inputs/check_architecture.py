"""Checks docs/architecture.md against the tree: every folder its layout
table names exists, every `spec-...` name it mentions is a registered pass
or pipeline (from `spec-opt --help`) or a tool in tools/, and every
registered pass and pipeline is mentioned.

  check_architecture.py SOURCE_ROOT SPEC_OPT_HELP
"""

import os
import re
import sys

root, help_file = sys.argv[1], sys.argv[2]
text = open(os.path.join(root, "docs", "architecture.md")).read()
table = text[text.index("## Where things live"):]
table = table[:table.index("\n\n", table.index("| folder |"))]
folders = [m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", table, re.M)]
missing = [f for f in folders if not os.path.exists(os.path.join(root, f))]
print("folders: %d named, missing: %s" % (len(folders), missing or "none"))

registered = set(re.findall(r"^\s+--(spec-[a-z0-9-]+)", open(help_file).read(), re.M))
tools = set(os.listdir(os.path.join(root, "tools")))
named = set(re.findall(r"`(spec-[a-z0-9-]+)", text))
unknown = sorted(n for n in named if n not in registered and n not in tools)
print("names: %d, neither a pass nor a tool: %s" % (len(named), unknown or "none"))
unnamed = sorted(registered - named)
print("registered passes and pipelines not described: %s" % (unnamed or "none"))

# Each layer of passes/ (a folder with its Passes.td) is in the table, and
# each pass it declares is implemented in that folder and tested in
# test/passes/<layer>/: what it does, and what it refuses (an -invalid test,
# or its test says why there is none).
problems = []
layers = sorted(d for d in os.listdir(os.path.join(root, "passes"))
                if os.path.exists(os.path.join(root, "passes", d, "Passes.td")))
count = 0
for layer in layers:
    if "passes/%s/" % layer not in folders:
        problems.append("passes/%s/ not in the table" % layer)
    folder = os.path.join(root, "passes", layer)
    sources = "".join(open(os.path.join(folder, f)).read()
                      for f in os.listdir(folder) if f.endswith(".cpp"))
    tests = os.path.join(root, "test", "passes", layer)
    test_files = os.listdir(tests) if os.path.isdir(tests) else []
    td = open(os.path.join(folder, "Passes.td")).read()
    for name, arg in re.findall(r"^def (\w+)\s*:\s*Pass<\"spec-([a-z0-9-]+)\"", td, re.M):
        count += 1
        if "GEN_PASS_DEF_" + name.upper() not in sources:
            problems.append("%s: no GEN_PASS_DEF in passes/%s/" % (arg, layer))
        own = [f for f in test_files if f == arg + ".mlir" or f.startswith(arg + "-")]
        if not own:
            problems.append("%s: no test in test/passes/%s/" % (arg, layer))
            continue
        said = any(re.search(r"refuses nothing|no -invalid test",
                             open(os.path.join(tests, f)).read()) for f in own)
        if arg + "-invalid.mlir" not in own and not said:
            problems.append("%s: neither %s-invalid.mlir nor a word on why" % (arg, arg))
print("layers: %s, %d passes: %s" % (", ".join(layers), count,
                                     "; ".join(problems) or "each in its folder, tested"))
