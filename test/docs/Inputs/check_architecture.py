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
