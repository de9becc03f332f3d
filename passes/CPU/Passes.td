//===- Passes.td - CPU code generation ---------------------*- tablegen -*-===//

#ifndef SPECULA_PASSES_CPU_PASSES_TD
#define SPECULA_PASSES_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpecFuseAttention : Pass<"spec-fuse-attention", "::mlir::func::FuncOp"> {
  let summary = "Fuse the importer's attention into one pass over the cached "
                "keys and values per query row, with online softmax";
  let description = [{
    The ONNX importer writes attention as a chain of tensor ops, each a full
    pass over heads x rows x positions: the keys expanded to every query
    head (grouped-query attention: `k[:, :, None].expand(...).reshape(...)`)
    and transposed, `q . k^T`, the scale and masks, softmax's max, exp, sum
    and divide, and the product with the values, expanded again. On every
    forward that copies the whole cached prefix several times.

    This pass matches the chain ending in `softmax(x) . v`, where `x` is
    `q . k^T` or an elementwise op of it and other tensors (scaling, the
    causal mask's select, an additive padding mask: its body is cloned), and
    the keys and values are `[1, heads, positions, head_dim]` rows or their
    grouped-query expansion; it replaces it by `scf.for` loops over heads and
    groups of `rows-per-group` query rows (the rows left over go one by
    one), each group making one pass over the positions that reads each key
    and value row in place once (`vector.transfer_read` of `head_dim`
    elements) and keeps, per row, a running maximum, sum and weighted sum of
    values (online softmax). Positions go in blocks of `positions-per-block`:
    one rescale of the running state and one vector `math.exp` of the
    block's weights per block. When `head_dim` and the block are multiples
    of 8, each position's products are folded into one 8-lane register and
    8 positions' registers reduced together by pairwise sums (as `vhaddps`
    does), so a block's scores come out in registers without a reduction
    per position. The modifier's body runs on a block's scores at once when
    its ops are elementwise: an input computed elementwise from the
    positions (torch's causal mask) is recomputed from them, an input
    contiguous in the positions is read as one vector. A query head `h`
    reads kv head `h / (heads / kv_heads)`. Keys read from the cache before
    a write of the values into it are read from the written cache (the
    write leaves them alone), so bufferization does not copy them.

    Each row's arithmetic depends only on its own scores, never on how many
    rows the forward has or which group it is in, so exact greedy
    verification still holds by construction (batch invariance): blocks
    start at multiples of the block size, a position past the end of the
    last block gets the score -inf, as a masked one does, and a zero weight
    leaves the running state exactly as it was; `q . k` is summed in a fixed
    order. The sizes the match assumes of
    dimensions computed in the graph (the reshapes' batch 1, kv heads,
    repeat, positions and head size) are checked at run time with
    `cf.assert` (reported by `spec-lower-checks`). A chain that does not
    match is left as it is.

    Example: `spec-opt --spec-fuse-attention`
  }];
  let options = [
    Option<"rowsPerGroup", "rows-per-group", "int64_t", "1",
           "Query rows that share each key and value load (1 to 16)">,
    Option<"positionsPerBlock", "positions-per-block", "int64_t", "16",
           "Cached positions per step of the online softmax (1 to 64): "
           "one rescale and one vector exp per block">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
}
def SpecBlockContractions
    : Pass<"spec-block-contractions", "::mlir::func::FuncOp"> {
  let summary = "Register-block contractions for the CPU: one load of a "
                "weight (or key, or value) vector serves every row of a tile";
  let description = [{
    A forward of `r` rows (1 for a decode step, gamma + 1 for a verify, the
    prompt for a prefill) multiplies its activations by each weight matrix,
    `out[rows..., n] += a[rows..., k] * w[k, n]`, and its queries by the
    keys and values of each attention head, `out[h, rows, n] += a[h, rows,
    k] * w[h, k, n]`. Computed row by row, every row streams all of `w`
    through the vector units and reloads and stores its output row for every
    `k`, so a six-row verify costs about six one-row steps. This pass, on
    tensors before bufferization, tiles every f32 contraction whose second
    operand `w` does not depend on the row loops (any `linalg` op with one
    multiply-accumulate reduction `k`, the output's innermost loop `n`
    indexing `w`, and at least one row loop indexing `a` and the output but
    not `w`) into `rows x columns` output tiles with a `depth`-long
    reduction loop innermost, vectorizes every tile with `linalg::vectorize`,
    turns the result into `vector.contract`, and hoists the tile's
    accumulators out of the reduction loop (`hoistLoopInvariantSubsets`).
    Lowered to outer products, each vector of `w` is loaded once per `k` for
    all the tile's rows, and the accumulators stay in registers. Loops that
    index both operands (batch, attention head) and outer row loops are
    tiled by one.

    Dynamic sizes (the rows of a forward; the cached positions, which are
    `n` of the product with the keys and `k` of the product with the
    values) are tiled, the partial last tile peeled off
    (`peelForLoopAndSimplifyBounds`) and tiled again: rows by `rows / 2`, and
    so on down to one row (with a tile of 6 between 8 and 4, so that a
    six-row verify, gamma = 5 proposals, is one tile: one pass over `w`
    rather than a four-row and a two-row tile); columns and reductions by 8,
    then by one. Every tile has static sizes and vectorizes without masks.
    Static remainders are peeled into tiles of their own. The column tiles
    are the outer loop and the row tiles (marked `spec.row_tiles`) run
    inside each: the row tiles of a forward read the same column tile of `w`
    one after the other, from cache, so `w` comes from memory once per
    forward whatever its row count (a six-row verify of a 407 MiB model:
    2.73 one-row steps with rows outside, 2.20 with columns outside, and
    about 1.05 as one six-row tile, bench/forward_cost.py).

    With `panels` (the default), a constant weight `[K, N]` whose columns
    are minor and whose only uses are the column tiles' slices is stored
    as the tiles read it: `[N / columns, K, columns]` panels, tile p
    reading panel p, and a `[K, r]` constant per remainder tile. A tile
    then streams contiguous memory instead of `columns` elements from each
    of K rows N apart, a new page every reduction step: the one-row step
    of a 107 M-parameter model went from 34.7 to 15.6 ms on this project's
    machine (bench/weight_stream.c shows the same 2.9x in isolation). A
    weight read otherwise (a tied embedding, a transposed weight, whose
    tiles are contiguous already) keeps its layout, so nothing is stored
    twice; functions that read the same weight share its packed constant.

    A row tile whose accumulators (rows x columns elements) exceed
    `max-tile-elements` then has its columns split into narrower tiles, a
    power of two wide: with the defaults an 8-row tile computes 32 columns
    at a time, the 6- to 1-row tiles 64. A one-row tile of 32 columns is
    two multiply-add chains, each waiting for the latency of the last; 64
    columns give it four, and cut the example target's one-row step by
    about 5% and the example draft's by 10% (alternated runs; a six-row
    tile of 64 columns keeps its 24 accumulators in registers).

    Batch invariance (what exact greedy speculation relies on): every output
    element is still one multiply-add chain over `k` in ascending order
    starting from the output's initial value, whatever the tile it falls in
    and however many rows the forward has; the tile shapes only change which
    elements are computed side by side. Lowering `vector.contract` to outer
    products (`convert-vector-to-llvm{vector-contract-lowering=outerproduct}`)
    keeps that order; the products are fused multiply-adds (`llvm.fmuladd`)
    in every tile alike.

    Left alone: contractions whose second operand depends on every output
    loop, and other element types.

    Example: `spec-opt --pass-pipeline='builtin.module(func.func(spec-block-contractions{rows=8 columns=64 depth=4 max-tile-elements=384}))'`
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "8",
           "Rows per tile (a power of two, at most 16); partial tiles are "
           "split into halves (and 6 rows)">,
    Option<"columns", "columns", "int64_t", "64",
           "Output columns per tile (a power of two, at most 128)">,
    Option<"depth", "depth", "int64_t", "4",
           "Reduction steps per iteration of the reduction loop (a power of "
           "two, at most 64); 4 has half the code of 8 and runs as fast "
           "(docs/performance.md, \"Compile time\")">,
    Option<"panels", "panels", "bool", "true",
           "Store the column tiles of constant weights as contiguous "
           "panels (a [K, N] weight as [N / columns, K, columns] and its "
           "remainder columns), so that a tile streams its weights instead "
           "of reading a few from each of K rows N apart">,
    Option<"maxTileElements", "max-tile-elements", "int64_t", "384",
           "Most accumulator elements (rows x columns) per tile: the column "
           "tile of a row tile with more is split into narrower powers of "
           "two (0: no limit)">,
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect",
                           "::specula::spec::SpecDialect"];
}
def SpecParallelizeColumns
    : Pass<"spec-parallelize-columns", "::mlir::func::FuncOp"> {
  let summary = "Run the column tiles of blocked contractions on several "
                "threads";
  let description = [{
    `spec-block-contractions` marks the loop over a contraction's full
    column tiles (`spec.column_tiles`): each iteration computes whole output
    columns, every element in the same order whatever the iteration runs on.
    After bufferization, this pass turns each marked loop that is worth it
    into an `scf.parallel`, which `convert-scf-to-openmp` shares among the
    threads of an OpenMP team. Results are bit-identical for any number of
    threads: work is split by output columns, never inside a reduction.

    A loop is worth it when it has at least two iterations and its
    contraction does at least `min-work` multiply-adds per row (a row goes
    through one of the row tiles, each with its own copy of the
    contraction: the work of the largest one counts, not their sum);
    smaller ones cost less than waking the threads (on the example models,
    whose largest projection is 128 x 512, OpenMP regions cost 18% of the
    target's tokens/s with one thread and 55% with two; on a 1024-wide
    model two threads give 1.85x, bench/README.md). Reductions over a run-time
    length (attention over the cached positions) and bodies that allocate
    or call stay sequential. Marked loops left sequential lose the marker.

    Refused: a marked loop that still carries values (it runs before
    bufferization).

    Example: `spec-opt --pass-pipeline='builtin.module(func.func(spec-parallelize-columns{min-work=65536}))'`
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", "kDefaultParallelMinWork",
           "Multiply-adds per row (columns x depth) below which a "
           "contraction's column tiles stay on one thread">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}
def SpecInterchangeContractions
    : Pass<"spec-interchange-contractions", "::mlir::func::FuncOp"> {
  let summary = "Put the reduction loop of matmul-like ops outside the "
                "innermost output loop, so that the innermost loop vectorizes";
  let description = [{
    The importer writes MatMul and the attention products as `linalg.generic`
    ops whose last loop is the reduction: `C[m, n] += A[m, k] * B[k, n]`
    iterates `(m, n, k)`, so the innermost loop strides through `B` column by
    column and accumulates one scalar. This pass swaps the reduction loop
    with the loop before it when that loop indexes the output's innermost
    (contiguous) dimension, giving `(m, k, n)`: the innermost loop reads `B`
    and updates `C` contiguously, which LLVM's loop vectorizer turns into
    vector loads and multiply-adds.

    Each output element still accumulates over `k` in ascending order, so
    results are bit-identical to the original order and do not depend on how
    many rows are computed together (batch invariance, which exact greedy
    speculation relies on). Ops with several reductions, or whose output is
    not indexed by the loop before the reduction, are left alone.

    Example: `spec-opt --pass-pipeline='builtin.module(func.func(spec-interchange-contractions))'`
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}
def SpecApproximateMath : Pass<"spec-approximate-math"> {
  let summary = "Replace calls of math functions with polynomial "
                "approximations that vectorize";
  let description = [{
    Rewrites the `math` ops named in `ops` (without the `math.` prefix) into
    upstream MLIR's polynomial approximations: plain `arith` and `math.fma`
    operations instead of a call into libm. Loops that apply them to every
    element (softmax's `exp`, SiLU's sigmoid) then vectorize, where a libm
    call per element does not. The approximations are accurate to a few
    ulp of float32 (upstream's tests). `exp` clamps its input to
    [-87.8, 88.8]: exp(-inf), a masked attention score, gives about 7e-39
    instead of 0, and overflow gives about 3.4e38 instead of inf.

    Every element goes through the same instructions wherever it sits in a
    vector (the approximations use `math.fma`, which rounds once whether
    scalar or vector), so results still do not depend on how many rows are
    computed together.

    Example: `spec-opt --spec-approximate-math='ops=exp,tanh'`
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "The math ops to approximate, e.g. exp,tanh,erf,log">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // SPECULA_PASSES_CPU_PASSES_TD
