//===- ApproximateMath.cpp - polynomial math that vectorizes --------------===//

#include "passes/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace specula {
#define GEN_PASS_DEF_SPECAPPROXIMATEMATH
#include "passes/CPU/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

/// The ops upstream's polynomial approximation patterns rewrite.
static constexpr llvm::StringLiteral kApproximable[] = {
    "math.acos", "math.asin", "math.atan",  "math.atan2", "math.cbrt",
    "math.cos",  "math.erf",  "math.erfc",  "math.exp",   "math.expm1",
    "math.log",  "math.log1p", "math.log2", "math.rsqrt", "math.sin",
    "math.tanh"};

namespace {
struct ApproximateMathPass
    : public specula::impl::SpecApproximateMathBase<ApproximateMathPass> {
  using Base::Base;

  /// Checks the op names once and builds the patterns for them.
  LogicalResult initialize(MLIRContext *context) override {
    for (const std::string &op : ops) {
      std::string name =
          StringRef(op).starts_with("math.") ? op : "math." + op;
      if (!llvm::is_contained(kApproximable, StringRef(name)))
        return emitError(UnknownLoc::get(context))
               << "spec-approximate-math: no polynomial approximation of '"
               << op << "'; approximable: "
               << llvm::join(llvm::map_range(kApproximable,
                                             [](StringRef n) {
                                               return n.drop_front(5);
                                             }),
                             ", ");
      names.insert(name);
    }
    RewritePatternSet set(context);
    populateMathPolynomialApproximationPatterns(
        set, [this](StringRef name) { return names.contains(name); });
    patterns = std::move(set);
    return success();
  }

  void runOnOperation() override {
    if (failed(applyPatternsGreedily(getOperation(), patterns)))
      signalPassFailure();
  }

private:
  llvm::StringSet<> names;
  FrozenRewritePatternSet patterns;
};
} // namespace
