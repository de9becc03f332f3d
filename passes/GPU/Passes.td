//===- Passes.td - GPU code generation ---------------------*- tablegen -*-===//

#ifndef SPECULA_PASSES_GPU_PASSES_TD
#define SPECULA_PASSES_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpecGPUAttention : Pass<"spec-gpu-attention", "::mlir::func::FuncOp"> {
  let summary = "Compute the importer's attention in two GPU kernels that "
                "read the cached keys and values in place";
  let description = [{
    The GPU's counterpart of `spec-fuse-attention`, on tensors. The
    importer's attention, `softmax(modify(q . k^T)) . v` with the keys and
    values expanded to every query head (grouped-query attention) and the
    keys transposed, bufferizes to a kernel per op: the expansions and the
    transpose copy the cached prefix, and softmax's maximum, exp, sum and
    divide each make a pass over the scores. On a decode step every one of
    them costs a launch, more than it computes.

    This pass matches the same chain as `spec-fuse-attention` and replaces
    it by two ops. The scores become a contraction that reads the cached key
    rows where they are (query head `h` reads kv head `h / repeat`, an
    affine `floordiv` in its indexing map), one thread per score once
    scheduled, its accumulators' fill sized by what it reads (one nest with
    it). Softmax and the product with the values become one
    `linalg.generic` over the output's elements `[1, heads, rows,
    head_dim]` whose body makes three passes over the positions: the row's
    maximum, the sum of `exp(x - max)`, and the sum of `exp(x - max) / sum`
    times the value row's element, read in place. `x` is the modifier's
    value (scaling, masks), its body run on its operands' elements where a
    pass reads a score, so it is no kernel of its own. Each pass clones the
    body of the op it replaces, in the same order over
    the positions, so every output is computed by the same arithmetic as
    before, bit for bit (and a row's values never depend on how many rows
    the forward has: batch invariance holds as it did).

    With `fold-transposes` (the default), a query that is a
    `linalg.transpose` is read through it (the transpose's input, with the
    permuted indexing map), and an output whose only use is a transpose is
    written in that transpose's layout: two copy kernels fewer per
    attention.

    The sizes the match assumes of dimensions computed in the graph (batch
    1, the reshapes' kv heads, repeat, positions and head size) are checked
    at run time with `cf.assert` (reported by `spec-lower-checks`), and a
    layer's keys read from the cache before its values were written into it
    are read after the write, in place (as `spec-fuse-attention` does). A
    chain that does not match is left as it is.

    Example: `spec-opt --spec-gpu-attention='fold-transposes=false'`
  }];
  let options = [
    Option<"foldTransposes", "fold-transposes", "bool", "true",
           "Read a transposed query through its transpose and write the "
           "output in the layout of a transpose that is its only use">
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}
def SpecGPUContractions
    : Pass<"spec-gpu-contractions", "::mlir::func::FuncOp"> {
  let summary = "GPU loops for contractions whose rows share an operand: "
                "each weight read once for a tile of rows, with vector loads, "
                "and deep reductions split among threads";
  let description = [{
    A decode step reads every weight once, so on a GPU its contractions are
    bound by memory bandwidth, and a verify forward of gamma + 1 rows should
    cost about what one row does. `spec-gpu-schedule` alone gives one thread
    per output: a six-row forward reads each weight six times, and a
    one-row product `[1, K] x [K, N]` runs N threads, each reading a column
    of K weights one after the other (2048 threads for a 2048-wide layer:
    a sixth of an H200's multiprocessors, with one load in flight each).

    This pass, on bufferized code before `spec-gpu-schedule`, rewrites every
    f32 contraction `out[outer..., rows, n] += a[outer..., rows, k] *
    w[outer..., k, n]` whose `w` does not depend on the rows (weight
    matrices; the keys and values of an attention head) into an
    `scf.parallel` nest that `spec-gpu-schedule` then maps: one thread per
    group of `vector-width` adjacent columns, per tile of up to `rows` rows,
    and per slice of the reduction. The thread loads each `vector-width`
    group of `w` once per `k` (one 128-bit load for 4 f32 when `w`'s rows
    are contiguous and 16-byte aligned) and multiplies it into the
    accumulators of all the tile's rows, which stay in registers. A tile of
    fewer rows than `rows` (the last one, or a forward with fewer rows) is
    computed as tiles of 6, 4, 2 and 1 rows, so that no thread computes rows
    that do not exist.

    When `w` has at least `split-min-bytes` bytes and a static reduction of
    more than `slice-depth` steps, the reduction is split into slices of
    `slice-depth` steps computed by different threads (K / slice-depth
    times more threads, and as many more loads in flight), each into its
    own partial sum, and a second loop nest adds each output's partial sums
    to it in slice order.

    Batch invariance (exact greedy speculation relies on it): each output is
    one fused multiply-add chain over its slice's `k` in ascending order,
    and the slices' sums are added in slice order; the slices depend only on
    `k`'s extent, never on the number of rows, and every row of every tile
    runs the same arithmetic. A row's values are therefore the same whether
    the forward has one row or nine.

    An output initialized by a `linalg.fill` just before the contraction
    (with only ops that touch no memory, or allocate, in between) starts its
    accumulators (or, split, its sum of partial sums) from the fill's value,
    and the fill is erased: the same arithmetic, one kernel launch fewer.
    Likewise an elementwise `linalg.generic` right after a contraction that
    is not split (a residual or bias add, an activation), which reads the
    output once at the same element and writes a buffer that no thread of
    the contraction reads: the contraction's threads apply its body to each
    accumulator lane and store its result, the product itself only where
    something else reads it (its buffer is erased otherwise).

    With `prologues`, an elementwise `linalg.generic` of at most four arith
    ops (RMSNorm's scaling `x / rms * gain`) that writes the rows input of
    contractions is computed by their threads where they read it, and
    erased: legal when every read of its output, until the output is
    overwritten, freed or its allocation's block ends, is such a
    contraction's rows input, when nothing writes the producer's inputs
    before the last of them, and when the producer is not another
    contraction's epilogue. Each thread computes the rows it reads with the
    producer's own ops, so the values are the same; the cost is that
    arithmetic per row and reduction step in every thread, which is why
    math functions (an exponential) are left to a kernel of their own.

    With `pairs`, a contraction right after another one (an initializing
    fill and ops that touch no memory between) whose epilogue reads the
    first one's product at the same element (SwiGLU's `silu(gate) * up`
    after the gate and up projections) is computed by the first one's
    threads in the same loop over the reduction: one load of each weight and
    of the rows per step, and the first products passed to the epilogue in
    registers (stored only where something else reads them). Legal when
    both are not split and have the same schedule, indexing maps, loop
    sizes and rows input, the first has no epilogue of its own, and neither
    writes a buffer the other reads.

    The loops are ordinary `scf` and `vector` ops: with
    `spec-to-cpu{gpu-schedule-threads}` they run on the CPU, which is how
    the exact-greedy and ONNX Runtime tests check them without a GPU.

    Left alone: contractions of other element types, with bodies other than
    one multiply and one add, or not bufferized.

    Refused: options out of range (rows a power of two in [1, 16];
    vector-width 1, 2 or 4; slice-depth at least 1; split-min-bytes not
    negative).
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "8",
           "Most rows a thread computes from one load of weights (a power "
           "of two, at most 16)">,
    Option<"vectorWidth", "vector-width", "int64_t", "4",
           "Adjacent columns per thread, loaded as one vector where the "
           "weights' rows are contiguous and aligned (1, 2 or 4)">,
    Option<"sliceDepth", "slice-depth", "int64_t", "32",
           "Reduction steps per thread when the reduction is split">,
    Option<"splitMinBytes", "split-min-bytes", "int64_t", "kDefaultGPUSplitMinBytes",
           "Split the reduction of contractions whose shared operand has at "
           "least this many bytes (0: every one with a static reduction "
           "longer than slice-depth)">,
    Option<"pairs", "pairs", "bool", "true",
           "Compute a contraction whose epilogue reads the previous one's "
           "product (SwiGLU's up projection after its gate) in the same "
           "threads and loop">,
    Option<"prologues", "prologues", "bool", "true",
           "Compute an elementwise producer of the rows input (a norm's "
           "scaling) where the contraction reads it">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}
def SpecGPUSchedule : Pass<"spec-gpu-schedule", "::mlir::func::FuncOp"> {
  let summary = "Map bufferized linalg ops and copies to GPU blocks and "
                "threads";
  let description = [{
    The schedule of `spec-to-cuda`, on bufferized code: every `memref.copy`
    becomes a `linalg.copy`, every linalg op an `scf.parallel` nest over its
    parallel dimensions around `scf.for` loops over its reductions (an op
    without parallel dimensions gets a one-iteration `scf.parallel`), and
    each outermost `scf.parallel` is tiled on its innermost dimension by
    `threads` (fewer, in whole warps, for a narrower static dimension) and
    mapped for `convert-parallel-loops-to-gpu`: the tiles of the three
    innermost dimensions to block x, y and z, the threads of a tile to
    thread x, every other dimension and every nested parallel loop to
    sequential loops inside the thread.

    One thread computes each output whole, its reduction included, in the
    order of the op's reduction loops: a row's values never depend on how
    many rows a forward has (batch invariance, so speculative greedy equals
    target-only greedy on the GPU too). Adjacent threads write adjacent
    outputs of the innermost dimension and, in a contraction with row-major
    weights, read adjacent weights: loads are coalesced.

    With `fuse` (the default), adjacent nests over the same iteration space
    become one nest, so one kernel, where each iteration of the second reads
    and writes only what the same iteration of the first wrote or read: a
    reduction's initializing fill and the reduction, an elementwise op and
    the next, the key and value cache writes of a layer, or writes only
    subviews of one buffer whose static ranges in some dimension do not
    overlap those of the other (a rotary embedding's two halves). A nest's
    dimensions of one iteration are dropped first, so that a `[rows, 1]`
    fill and the reduction over `rows` it initializes (its output indexed
    `[row, 0]`) are the same iteration space. Each launch costs
    more than a decode step's small kernels compute, and fusing changes no
    arithmetic: each output is computed by the same ops in the same order.
    Between fused nests may lie only ops without regions that allocate or
    touch no buffer the first nest touches (host code storing a reshape's
    shape), none of them writing what it reads; accesses other than `memref.load` and `memref.store` (the vector
    loads of `spec-gpu-contractions`) keep their nest apart from any nest
    that touches the same buffers.

    With `merge` (the default), after fusion, adjacent nests that may run
    at once become one nest, so one kernel, over the concatenation of their
    iterations (one dimension, row-major): an iteration runs the body of the
    nest its index falls in, with that nest's variables recovered from the
    offset. Such nests write no buffer that may alias one another touches,
    but for subviews of one buffer whose static ranges in some dimension do
    not overlap: a layer's query, key and value projections, which read
    the same normalized rows; its rotary embeddings of the queries and keys
    and its value cache write. The ops between them obey the rule for
    fusion. Merging too changes no arithmetic.

    The loops stay executable on the CPU (they are ordinary `scf` loops with
    mapping attributes until `convert-parallel-loops-to-gpu` runs).

    Refused: options out of range (threads must be a multiple of 32 in
    [32, 1024]); linalg ops on tensors (run it after bufferization).
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "128",
           "Threads per block (a multiple of 32, at most 1024)">,
    Option<"fuse", "fuse", "bool", "true",
           "Fuse adjacent nests over the same iteration space into one "
           "kernel where each iteration depends only on the same iteration">,
    Option<"merge", "merge", "bool", "true",
           "Merge adjacent nests that may run at once (no buffer one writes "
           "is touched by another) into one kernel over all their "
           "iterations">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect"];
}
def SpecGPUAsyncLaunches
    : Pass<"spec-gpu-async-launches", "::mlir::func::FuncOp"> {
  let summary = "Chain kernel launches on one stream; synchronize only "
                "before host code that touches what they touch";
  let description = [{
    A synchronous `gpu.launch_func` is lowered to a launch followed by a
    stream synchronization: a forward of a few hundred kernels waits for the
    GPU a few hundred times. This pass makes the launches of each block
    asynchronous, chained on one token (one stream, so they still run in
    order), and inserts a synchronous `gpu.wait` only before the first host
    operation that may touch memory a pending kernel touches: a load, store
    or other memory effect on a buffer (traced through views, casts and
    reshapes to its allocation, global, block argument or call result) that
    a pending launch received or may alias (a block argument may be any
    buffer; an allocation may be a block argument of the blocks inside the
    one that allocated it), a reshape whose shape buffer does, any
    operation with regions, a call, a terminator, or an operation whose
    effects are unknown. Constant globals never need one: kernels only read
    them. Allocation and deallocation do not synchronize: the runtime
    reuses a freed block only after the stream's next synchronization.

    Runs on host functions after `gpu-kernel-outlining`; `spec-to-cuda`
    runs it unless `async-launches=false`.

    Refused: a launch that is asynchronous already.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // SPECULA_PASSES_GPU_PASSES_TD
