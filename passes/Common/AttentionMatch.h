//===- AttentionMatch.h - the importer's attention, found in the IR -*- C++
//-*-===//
//
// The ONNX importer writes attention as a chain of tensor ops:
// softmax(modify(q . k^T)) . v, with the keys and values expanded to every
// query head (grouped-query attention) and the keys transposed. Both
// devices' attention passes (spec-fuse-attention on the CPU,
// spec-gpu-attention on the GPU) replace the chain by code that reads the
// cached key and value rows in place; this is how they find it.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_COMMON_ATTENTIONMATCH_H
#define SPECULA_PASSES_COMMON_ATTENTIONMATCH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <optional>

namespace specula {

/// A size the match assumed of a dynamic dimension, checked at run time.
enum class Expect { One, Batch, Groups, Heads, Repeat, Positions, HeadDim };
struct DimCheck {
  mlir::Value shaped;
  int64_t dim;
  Expect expected;
};

/// Where a [1, heads, positions, head_dim] operand of the attention reads
/// its rows: `rows` is [1, kv_heads, positions, head_dim]; query head h
/// reads kv head h / repeat.
struct RowSource {
  mlir::Value rows;
  int64_t repeat = 1;
  llvm::SmallVector<DimCheck> checks;
};

/// An attention found in the IR: out = softmax(modify(q . k^T)) . v.
struct Attention {
  mlir::linalg::GenericOp output, scores;
  /// softmax: the rows' maximum, exp(x - max), the rows' sum, exp / sum.
  mlir::linalg::GenericOp maximum, exps, sum, divide;
  /// The elementwise op applied to the scores before softmax (scaling,
  /// masks); null when softmax reads the scores directly.
  mlir::linalg::GenericOp modifier;
  mlir::Value query;
  RowSource keys, values;
};

/// Matches the attention whose last op (the product with the values) is
/// `output`.
std::optional<Attention> matchAttention(mlir::linalg::GenericOp output);

/// Every attention in `func`, in program order.
llvm::SmallVector<Attention> findAttentions(mlir::func::FuncOp func);

/// Asserts at run time (cf.assert, named after `pass`) the sizes the match
/// assumed of dimensions the graph computes: the queries' batch in the keys
/// and values (and, without `batch`, a batch of 1), the reshapes' kv heads,
/// repeat and head size, and `positions` keys and values.
void emitAttentionChecks(mlir::ImplicitLocOpBuilder &b,
                         const Attention &attention, mlir::Value positions,
                         llvm::StringRef pass, mlir::Value batch = {});

/// A read of a cache slice that a later write into the same tensor leaves
/// alone becomes a read of the written tensor, placed after the write, when
/// everything that uses the read comes after it: bufferized, the cache is
/// then read in place, not copied to keep the slice from before the write.
void readPastDisjointWrites(mlir::func::FuncOp func);

} // namespace specula

#endif // SPECULA_PASSES_COMMON_ATTENTIONMATCH_H
