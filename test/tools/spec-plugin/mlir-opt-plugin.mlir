// Debian's stock mlir-opt (not spec-opt) loads Specula as a dialect and pass
// plugin, parses and verifies a spec decoder, prints it, and runs a pass.
// A sanitizer build's plugin needs the sanitizer runtime, which mlir-opt lacks.
// UNSUPPORTED: sanitizers

// RUN: %mlir_opt %s --load-dialect-plugin=%specula_libs/SpecPlugin.so | FileCheck %s
// RUN: %mlir_opt %s --load-dialect-plugin=%specula_libs/SpecPlugin.so --load-pass-plugin=%specula_libs/SpecPlugin.so --pass-pipeline="builtin.module(spec-choose-gamma{cost-ratio=0.1 acceptance-rate=0.8})" 2>&1 | FileCheck %s --check-prefix=PASS
// RUN: not %mlir_opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// RUN: echo 'spec.decoder @d target(@t) proposer(#spec.draft<@t, gamma = 0>) verify(#spec.greedy)' | not %mlir_opt --load-dialect-plugin=%specula_libs/SpecPlugin.so 2>&1 | FileCheck %s --check-prefix=VERIFY

// CHECK: func.func private @target(tensor<?xi64>, !spec.kv_cache<1x2x64x16xf32>) -> (tensor<?x8xf32>, !spec.kv_cache<1x2x64x16xf32>) attributes {spec.role = #spec.role<target>}
// CHECK: func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32> attributes {spec.role = #spec.role<draft>}
// CHECK: spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>) verify(#spec.greedy)
// CHECK: spec.cache.rollback %{{.*}} : !spec.kv_cache<1x2x64x16xf32>

// PASS: remark: gamma = 6: 3.95 expected tokens per target step, predicted speedup 2.47x
// PASS: spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 6>) verify(#spec.greedy)

// Without the plugin, the spec dialect is unknown to mlir-opt.
// NOPLUGIN: type created with unregistered dialect

// The plugin's verifiers run inside mlir-opt.
// VERIFY: error: gamma (tokens proposed per step) must be at least 1, got 0

func.func private @target(tensor<?xi64>, !spec.kv_cache<1x2x64x16xf32>)
    -> (tensor<?x8xf32>, !spec.kv_cache<1x2x64x16xf32>)
    attributes {spec.role = #spec.role<target>}
func.func private @draft(tensor<?xi64>) -> tensor<?x8xf32>
    attributes {spec.role = #spec.role<draft>}
spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 2>)
    verify(#spec.greedy)
func.func @rollback(%c: !spec.kv_cache<1x2x64x16xf32>) -> !spec.kv_cache<1x2x64x16xf32> {
  %r = spec.cache.rollback %c : !spec.kv_cache<1x2x64x16xf32>
  return %r : !spec.kv_cache<1x2x64x16xf32>
}
