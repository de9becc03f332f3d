//===- Passes.td - passes both devices' code generation shares -*- tablegen -*-===//

#ifndef SPECULA_PASSES_COMMON_PASSES_TD
#define SPECULA_PASSES_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpecFoldShapeTensors : Pass<"spec-fold-shape-tensors"> {
  let summary = "Turn the graph's small integer shape tensors into scalars";
  let description = [{
    ONNX graphs compute the shapes they reshape and expand to as small
    integer tensors (Shape, Gather, Unsqueeze, Concat); imported, each
    becomes a `tensor.concat` of one-element tensors, most of them a
    `tensor.reshape` of a 0-d tensor, read back with `tensor.extract`.
    Bufferized, every forward allocates a buffer per shape and fills it
    with one strided copy per element. This pass rewrites a `tensor.concat`
    of rank-1 integer or index tensors with at most `max-elements` elements
    into `tensor.from_elements` of their elements, and a `tensor.extract` at
    constant indices of a `tensor.reshape` between static shapes into an
    extract of the reshape's source at the same linear index; and an
    elementwise `linalg.generic` on integer tensors of at most
    `max-elements` elements whose operands are `from_elements`, fills or
    constants (Expand's `Where(Equal(shape, -1), 1, shape)`, a size divided
    by the head count) into its body once per element on the scalars.
    Extracts of `from_elements` and of constants fold. What remains of a
    shape is the scalars it was computed from: host arithmetic, where as
    linalg ops they would be GPU kernels whose results the host reads back.
    Float tensors, larger concatenations or generics, concatenations of
    inputs of dynamic size, generics with reductions or reading computed
    tensors, and extracts out of bounds are left alone.

    Example: `spec-opt --spec-fold-shape-tensors='max-elements=8'`
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", "16",
           "Largest concatenation (in elements) turned into scalars">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}
def SpecFuseElementwise : Pass<"spec-fuse-elementwise"> {
  let summary = "Fuse elementwise linalg producers into their consumers when "
                "no element is computed twice";
  let description = [{
    Upstream's `linalg-fuse-elementwise-ops` with a stricter rule. Upstream
    fuses a single-use elementwise producer into any `linalg.generic`
    consumer, also one with loops the fused operand does not depend on; the
    producer's body then runs in every iteration of those loops. In the
    importer's attention that fused the rotary embedding of the queries into
    the product with the keys: three multiplies and an add per score instead
    of per query element, for every cached position. This pass fuses only
    when the consumer's indexing map of the fused operand uses every loop of
    the consumer (each producer element is computed once); otherwise the
    producer stays a separate op. Reshape propagation and constant folding
    follow the same rule. A generic that yields one constant everywhere
    (the importer's shape arithmetic, such as a rotary embedding's half
    width) becomes that constant, so the slices it sizes become static.

    A `tensor.concat` (of at most `max-concat-inputs` inputs) that only a
    `linalg.generic` reads, along one of its parallel loops that every
    operand indexes by itself or not at all, is fused piecewise: one copy
    of the generic per input of the concatenation, on that input and on
    slices of the other operands and of the output, each inserted into the
    output. Nothing is concatenated: bufferized, the pieces read their
    inputs in place and write their slices of one buffer. The importer's
    rotary embedding, `x * cos + concat(-x2, x1) * sin`, then reads both
    halves of `x` where they are and negates in its first piece. Every
    element is computed by the same body as before, so results are
    bit-identical.

    With `fold-transposes` (spec-to-cuda's choice; off by default, the
    CPU's vectorized loops prefer the copy), a `linalg.transpose` read by
    elementwise generics is read through: each of them reads the
    transpose's input with the permuted indexing map, and a slice of a
    transpose becomes the transpose of the slice of its input, so that the
    rotary embedding's halves of the transposed queries and keys are read
    from the projections where they are. On the GPU each transpose was a
    copy kernel.

    Example: `spec-opt --spec-fuse-elementwise='max-concat-inputs=2
    fold-transposes=true'`
  }];
  let options = [
    Option<"maxConcatInputs", "max-concat-inputs", "int64_t", "4",
           "Concatenations of at most this many inputs are fused piecewise "
           "into their consumer (0: none)">,
    Option<"foldTransposes", "fold-transposes", "bool", "false",
           "Elementwise generics read transposes' inputs through permuted "
           "indexing maps (slices of transposes become transposes of "
           "slices)">
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}
def SpecCloneSharedFills : Pass<"spec-clone-shared-fills"> {
  let summary = "Give each op that accumulates into a shared fill a fill of "
                "its own";
  let description = [{
    CSE merges identical `linalg.fill`s of `tensor.empty`s: the importer's
    zero (or -inf) accumulators of every contraction and reduction of one
    shape become one fill. One-Shot Bufferize then gives each op that writes
    into it a new buffer and a copy of the shared one: 41 copies per forward
    of the example target, each a kernel launch on the GPU and a strided
    copy on the CPU. This pass clones a `linalg.fill` on tensors that has
    more than one use for each use as a destination (a destination-style
    op's init), right before that op; reads keep the original, which is
    erased when nothing reads it. Each fill then bufferizes in place, and
    the device schedules fold it into the op that accumulates into it.
    Fills used once, fills only read and fills on buffers are left alone.
    Run it after the last CSE before bufferization.

    Example: `spec-opt --spec-clone-shared-fills`
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}
def SpecOrderGlobals : Pass<"spec-order-globals", "::mlir::ModuleOp"> {
  let summary = "Name and order bufferization's constant globals by first "
                "use, so compilation is reproducible";
  let description = [{
    `one-shot-bufferize` with function boundaries turns each constant tensor
    into a private constant `memref.global` named `__constant_<shape>[_N]`,
    numbered and placed in the order it visits functions, and MLIR 22 takes
    that order from a map keyed by operation addresses: two runs of the same
    pipeline on the same input can give the globals different names and
    places, hence different LLVM modules and weights-file layouts.

    This pass renames every private constant `memref.global` to
    `__constant_<i>`, where i is the order of its first `memref.get_global`
    in the module (walk order), and moves them, in that order, to the start
    of the module (unused ones after them, by name). Only the names and the
    order of the globals change. Run it right after bufferization;
    `spec-graph-to-llvm` does.

    Refused, naming the global and the user: a global referenced by anything
    but `memref.get_global` (renaming it would break that reference).
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}
def SpecLowerChecks : Pass<"spec-lower-checks", "::mlir::ModuleOp"> {
  let summary = "Report failed run-time checks to the caller instead of "
                "aborting";
  let description = [{
    The importer checks at run time what only the inputs decide (a Slice
    step of 0 computed in the graph), as `cf.assert %ok, "message"`.
    Upstream's lowering of `cf.assert` prints and aborts, which would take
    the caller's process down. This pass turns each one into a call of
    `specrt_check(i1 ok, ptr message)` with the message in a constant
    global: the runtime (`libspecrt`, and `GraphExecutor` for JIT-compiled
    graphs) keeps the first failed message of a run, the code goes on (the
    importer keeps it in bounds), and the run ends with that message as its
    error.

    Refused: a check inside a GPU kernel, which cannot call the host.

    Example: `spec-opt --spec-lower-checks`
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}
def SpecExternalizeWeights
    : Pass<"spec-externalize-weights", "::mlir::ModuleOp"> {
  let summary = "Move large constants of LLVM-dialect code into a weights "
                "file the runtime maps";
  let description = [{
    Runs on a module in the LLVM dialect (after `spec-graph-to-llvm`). Every
    constant `llvm.mlir.global` whose dense initializer (`dense_resource` or
    a non-splat `dense`) holds at least `min-bytes` bytes is written into the
    file `path`, at an offset aligned to 64 bytes (or the global's own larger
    alignment), and removed from the module. Each `llvm.mlir.addressof` of it
    becomes an address computed from the weights base:

      %base = llvm.load @spec_weights_base {invariant} : !llvm.ptr
      %w = llvm.getelementptr inbounds %base[OFFSET] : (!llvm.ptr) -> !llvm.ptr, i8

    `@spec_weights_base` is an exported pointer global (null until set). The
    runtime maps the weights file and stores its address there before calling
    any entry point, so weights are never compiled into code: code generation
    time does not grow with model size, and one shared object can run with
    other weights of the same layout.

    Splat constants and small ones stay in code (with `splats`, splats and
    booleans move too, written out element by element, a byte per boolean:
    `spec-to-cuda` moves every constant, since kernels cannot read the
    host's globals). Without `path` the pass fails, as it does when the file
    cannot be written or a constant's data is missing (an elided resource).

    Example: `spec-opt --spec-externalize-weights='path=weights.bin min-bytes=256'`
  }];
  let options = [
    Option<"path", "path", "std::string", "\"\"",
           "The weights file to write (required)">,
    Option<"minBytes", "min-bytes", "int64_t", "1024",
           "Constants smaller than this stay in code">,
    Option<"splats", "splats", "bool", "false",
           "Also move splat and boolean constants (expanded): code on a "
           "device cannot read the host's globals">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def SpecQuantizeWeights : Pass<"spec-quantize-weights", "::mlir::ModuleOp"> {
  let summary = "Store the weight matrices of contractions in 16 or 8 bits, "
                "widened to f32 in the contraction";
  let description = [{
    Decode reads every weight once per forward, so its time is the weights'
    bytes over the memory bandwidth: stored in 16 bits they are half the
    bytes, in 8 bits a quarter. For each `linalg.generic` contraction whose
    second operand all rows share (`out[..., m, n] += a[..., m, k] *
    w[..., k, n]`, as the ONNX importer builds MatMul and Gemm) and whose
    `w` is an `arith.constant` of f32 with at least `min-elements`
    elements, the pass replaces `w` by the same constant in `precision`
    and widens it in the contraction's body, so the code reads narrow
    weights and multiplies and accumulates in f32 in the same order: a
    row's result still does not depend on the row count.

    - `f16`, `bf16`: each weight rounded to nearest even, widened with
      `arith.extf`.
    - `int8`: symmetric, one f32 scale per output column `n` (its largest
      magnitude / 127), the weights rounded to nearest and widened with
      `arith.sitofp`; the column's scale multiplies the sum after the
      reduction (an elementwise `linalg.generic` on the result, in place),
      so only 2-D weights of contractions that accumulate into a
      `linalg.fill` of zero are converted.

    Each constant is converted once (every function that reads it reads
    the one converted copy); a constant that other ops also read (a tied
    embedding table) stays f32 for them.

    Kept in f32: constants below `min-elements` (per-layer vectors, biases
    and norms are not contraction weights at all), operands that are not
    constants, and with `output-head=false`, the output head: a contraction
    whose result its function returns, directly or through reshapes and
    casts. The pass reports what it converted and what it kept in a remark
    on the module. It fails on a constant whose data is missing (an elided
    resource) and on an unknown precision or role.

    With `roles`, only functions whose `spec.role` is one of them are
    converted (`specc --draft-weights`: the draft in one precision, the
    target in another); the remark names them.

    Example: `spec-opt --spec-quantize-weights='precision=int8 min-elements=1024 output-head=false roles=draft'`
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"\"",
           "The weights' storage type: f16, bf16 or int8 (required)">,
    Option<"minElements", "min-elements", "int64_t", "4096",
           "Smaller weight matrices stay f32">,
    Option<"outputHead", "output-head", "bool", "true",
           "Also convert the output head (a contraction whose result its "
           "function returns)">,
    ListOption<"roles", "roles", "std::string",
               "Only the functions of these models' roles (target, draft, "
               "medusa_head, mtp_module; a function's spec.role): one "
               "precision for the draft, another for the target; default: "
               "every function">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect"];
}

#endif // SPECULA_PASSES_COMMON_PASSES_TD
