# lit configuration for the GoogleTest unit tests: every executable named
# *Tests under build/test/unit runs, one lit test per GoogleTest test.

import os

import lit.formats

config.name = "Specula-Unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.specula_obj_root, "test", "unit")
config.test_exec_root = config.test_source_root
