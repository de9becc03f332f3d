//===- ApproximateMath.cpp - polynomial math that vectorizes --------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

namespace specula {
#define GEN_PASS_DEF_SPECAPPROXIMATEMATH
#include "passes/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;

namespace {
struct ApproximateMathPass
    : public specula::impl::SpecApproximateMathBase<ApproximateMathPass> {
  using Base::Base;

  void runOnOperation() override {
    llvm::StringSet<> names;
    for (const std::string &op : ops)
      names.insert(StringRef(op).starts_with("math.") ? op : "math." + op);
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [&](StringRef name) {
          return names.contains(name) || names.contains("math." + name.str());
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
