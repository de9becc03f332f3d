# lit configuration for Specula's tests: lit tests in the folders that mirror
# the source tree, and the GoogleTest unit tests under unit/.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Specula"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".onnxtxt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.specula_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "unit", "Inputs",
                   "fuzz"]

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

config.substitutions.append(("%specula_src_root", config.specula_src_root))
config.substitutions.append(("%specula_obj_root", config.specula_obj_root))
config.substitutions.append(("%specula_libs", config.specula_libs_dir))
# Example decoders compiled once per build (test/CMakeLists.txt).
config.substitutions.append(
    ("%test_artifacts", os.path.join(config.specula_obj_root, "test", "artifacts")))

# Our tools first, then LLVM's FileCheck/not/count and the stock mlir-opt that
# the plugin tests load our plugin into.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.specula_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["spec-opt", "spec-translate", "spec-run", "spec-serve", "spec-tokenize"],
    [config.specula_tools_dir])
config.substitutions.append(
    ("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")))
config.environment["ORT_NODE_PATH"] = config.ort_node_path
config.substitutions.append(("%tokenizers_js", config.tokenizers_node_modules))
# Debian's interpreter, which has python3-onnx and python3-torch.
config.substitutions.append(("%python", "/usr/bin/python3"))

# The acceptance benchmark rebuilds the training-time prompts with
# models/train.py, which needs torch (.ci/setup installs python3-torch) and
# the corpus the models were trained on (this machine's Python 3.11 library).
import subprocess
if os.path.isdir("/usr/lib/python3.11") and subprocess.run(
        ["/usr/bin/python3", "-c", "import numpy, torch"],
        capture_output=True).returncode == 0:
    config.available_features.add("torch")
# bench/forward_cost.py --plot draws with matplotlib (not installed by CI).
if subprocess.run(["/usr/bin/python3", "-c", "import matplotlib"],
                  capture_output=True).returncode == 0:
    config.available_features.add("matplotlib")

# bench/op_profile.py samples spec-run with Linux perf (Debian's linux-perf,
# not installed by CI; sampling must be allowed).
import tempfile
with tempfile.TemporaryDirectory() as scratch:
    try:
        if subprocess.run(["perf", "record", "-e", "cpu-clock", "-o",
                           os.path.join(scratch, "probe.data"), "--", "true"],
                          capture_output=True).returncode == 0:
            config.available_features.add("perf")
    except OSError:
        pass

# A sanitizer build's shared objects need the sanitizer runtime in the
# process: they cannot be loaded into Debian's uninstrumented mlir-opt.
if config.specula_sanitizers:
    config.available_features.add("sanitizers")

# The CUDA toolkit's assembler validates the PTX spec-to-cuda emits; tests
# that need it are reported unsupported (by name) where it is missing.
ptxas = os.environ.get("SPECULA_PTXAS", "/usr/local/cuda/bin/ptxas")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
# specc --device cuda links the kernels' math functions from the toolkit's
# libdevice; without it CUDA artifacts of the example models cannot be built.
toolkit = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
if os.path.exists(os.path.join(toolkit, "nvvm/libdevice/libdevice.10.bc")):
    config.available_features.add("cuda-toolkit")
config.substitutions.append(
    ("%fake_cuda_dir", os.path.join(config.specula_obj_root, "test", "fake-cuda")))
# A real CUDA driver on this machine (the no-driver test needs its absence).
if subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True,
                  text=True).stdout.find("libcuda.so.1") >= 0:
    config.available_features.add("libcuda")
# The toolkit's stub driver: every call fails with CUDA_ERROR_STUB_LIBRARY.
stub = "/usr/local/cuda/lib64/stubs/libcuda.so"
if os.path.exists(stub):
    config.available_features.add("cuda-stub")
    config.substitutions.append(("%cuda_stub", stub))
