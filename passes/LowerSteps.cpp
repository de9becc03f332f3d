//===- LowerSteps.cpp - spec step and cache ops to tensors ----------------===//

#include "passes/Passes.h"

#include "dialects/spec/SpecOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace specula {
#define GEN_PASS_DEF_SPECLOWERSTEPS
#include "passes/Passes.h.inc"
} // namespace specula

using namespace mlir;
using namespace specula;
using namespace specula::spec;

/// The tensor a cache lowers to: keys and values of every layer.
static RankedTensorType cacheTensorType(KVCacheType cache) {
  SmallVector<int64_t> shape{2};
  llvm::append_range(shape, cache.getShape());
  return RankedTensorType::get(shape, cache.getElementType());
}

/// The first index of the maximum of each row of `rows` (R x V), as i64:
/// ties go to the smallest index, as torch and ONNX ArgMax do.
static Value argmaxRows(OpBuilder &b, Location loc, Value rows) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(rows.getType());
  Type elementType = type.getElementType();
  int64_t numRows = type.getDimSize(0);
  auto floatType = cast<FloatType>(elementType);
  Value lowest = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(floatType,
                             APFloat::getInf(floatType.getFloatSemantics(),
                                             /*Negative=*/true)));
  Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value best = linalg::FillOp::create(
                   b, loc, ValueRange{lowest},
                   ValueRange{tensor::EmptyOp::create(b, loc, {numRows},
                                                      elementType)})
                   .getResult(0);
  Value index = linalg::FillOp::create(
                    b, loc, ValueRange{zero},
                    ValueRange{tensor::EmptyOp::create(b, loc, {numRows},
                                                       b.getI64Type())})
                    .getResult(0);
  auto rowMap = AffineMap::get(2, 0, {getAffineDimExpr(0, context)}, context);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{best.getType(), index.getType()}, ValueRange{rows},
      ValueRange{best, index},
      SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(2, context),
                             rowMap, rowMap},
      SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                       utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value column = arith::IndexCastOp::create(
            nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, 1));
        Value greater = arith::CmpFOp::create(
            nb, l, arith::CmpFPredicate::OGT, args[0], args[1]);
        Value first =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, column,
                                  arith::ConstantOp::create(
                                      nb, l, nb.getI64IntegerAttr(0)));
        Value take = arith::OrIOp::create(nb, l, greater, first);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, take, args[0], args[1]),
                       arith::SelectOp::create(nb, l, take, column,
                                               args[2])});
      });
  return generic.getResult(1);
}

namespace {
struct LowerAlloc : OpConversionPattern<CacheAllocOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheAllocOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cacheTensorType(op.getType());
    Location loc = op.getLoc();
    Value zero = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(type.getElementType(), 0.0));
    Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                          type.getElementType());
    rewriter.replaceOp(op, linalg::FillOp::create(rewriter, loc,
                                                  ValueRange{zero},
                                                  ValueRange{empty}));
    return success();
  }
};

struct LowerWrite : OpConversionPattern<CacheWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheWriteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KVCacheType cache = op.getCache().getType();
    Location loc = op.getLoc();
    // One batch row: [1, heads, n, head_dim].
    auto entriesType = RankedTensorType::get(
        {1, cache.getNumKVHeads(), ShapedType::kDynamic, cache.getHeadDim()},
        cache.getElementType());
    Value entries = adaptor.getNewEntries();
    if (entries.getType() != entriesType)
      entries = tensor::CastOp::create(rewriter, loc, entriesType, entries);
    Value count = tensor::DimOp::create(rewriter, loc, entries, 2);
    int64_t part = op.getPart() == CachePart::Keys ? 0 : 1;
    SmallVector<OpFoldResult> offsets{
        rewriter.getIndexAttr(part), rewriter.getIndexAttr(op.getLayer()),
        rewriter.getIndexAttr(0), adaptor.getPosition(),
        rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{
        rewriter.getIndexAttr(1), rewriter.getIndexAttr(1),
        rewriter.getIndexAttr(cache.getNumKVHeads()), count,
        rewriter.getIndexAttr(cache.getHeadDim())};
    SmallVector<OpFoldResult> strides(5, rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, entries, adaptor.getCache(), offsets, sizes, strides);
    return success();
  }
};

struct LowerRead : OpConversionPattern<CacheReadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheReadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KVCacheType cache = op.getCache().getType();
    Location loc = op.getLoc();
    int64_t part = op.getPart() == CachePart::Keys ? 0 : 1;
    SmallVector<OpFoldResult> offsets{
        rewriter.getIndexAttr(part), rewriter.getIndexAttr(op.getLayer()),
        rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
        rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{
        rewriter.getIndexAttr(1), rewriter.getIndexAttr(1),
        rewriter.getIndexAttr(cache.getNumKVHeads()), adaptor.getLength(),
        rewriter.getIndexAttr(cache.getHeadDim())};
    SmallVector<OpFoldResult> strides(5, rewriter.getIndexAttr(1));
    auto sliceType = RankedTensorType::get(
        {1, cache.getNumKVHeads(), ShapedType::kDynamic, cache.getHeadDim()},
        cache.getElementType());
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, loc, sliceType, adaptor.getCache(), offsets, sizes, strides);
    if (slice.getType() != op.getType())
      slice = tensor::CastOp::create(rewriter, loc, op.getType(), slice);
    rewriter.replaceOp(op, slice);
    return success();
  }
};

struct LowerVerify : OpConversionPattern<VerifyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(VerifyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Type> results;
    if (failed(getTypeConverter()->convertTypes(op.getResultTypes(), results)))
      return failure();
    rewriter.replaceOpWithNewOp<func::CallOp>(op, op.getCallee(), results,
                                              adaptor.getInputs());
    return success();
  }
};

struct LowerPropose : OpConversionPattern<ProposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ProposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto logitsType = cast<RankedTensorType>(op.getLogits().getType());
    Location loc = op.getLoc();
    Value tokens = argmaxRows(rewriter, loc, adaptor.getLogits());
    if (tokens.getType() != op.getTokens().getType())
      tokens = tensor::CastOp::create(rewriter, loc, op.getTokens().getType(),
                                      tokens);
    // Greedy proposals are certain: q is one-hot.
    Value probs = tensor::GenerateOp::create(
        rewriter, loc, logitsType, ValueRange{},
        [&](OpBuilder &b, Location l, ValueRange indices) {
          Value token = tensor::ExtractOp::create(b, l, tokens,
                                                  ValueRange{indices[0]});
          Value column = arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                    indices[1]);
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            token, column);
          Type f = logitsType.getElementType();
          tensor::YieldOp::create(
              b, l,
              arith::SelectOp::create(
                  b, l, hit,
                  arith::ConstantOp::create(b, l, b.getFloatAttr(f, 1.0)),
                  arith::ConstantOp::create(b, l, b.getFloatAttr(f, 0.0)))
                  .getResult());
        });
    rewriter.replaceOp(op, {tokens, probs});
    return success();
  }
};

struct LowerAccept : OpConversionPattern<AcceptOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AcceptOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto proposalsType = cast<RankedTensorType>(op.getProposals().getType());
    Location loc = op.getLoc();
    Value targets = argmaxRows(rewriter, loc, adaptor.getTargetLogits());
    // The accepted count: the longest prefix where proposal == target.
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value gamma =
        arith::ConstantIndexOp::create(rewriter, loc, proposalsType.getDimSize(0));
    Value matching = arith::ConstantOp::create(rewriter, loc,
                                               rewriter.getBoolAttr(true));
    Value proposals = adaptor.getProposals();
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, gamma, one, ValueRange{zero, matching},
        [&](OpBuilder &b, Location l, Value i, ValueRange args) {
          Value proposal = tensor::ExtractOp::create(b, l, proposals,
                                                     ValueRange{i});
          Value target = tensor::ExtractOp::create(b, l, targets, ValueRange{i});
          Value same = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                             proposal, target);
          Value still = arith::AndIOp::create(b, l, args[1], same);
          Value count = arith::SelectOp::create(
              b, l, still, arith::AddIOp::create(b, l, args[0], one), args[0]);
          scf::YieldOp::create(b, l, ValueRange{count, still});
        });
    Value count = loop.getResult(0);
    Value next =
        tensor::ExtractOp::create(rewriter, loc, targets, ValueRange{count});
    if (next.getType() != op.getNext().getType())
      next = arith::TruncIOp::create(rewriter, loc, op.getNext().getType(),
                                     next);
    rewriter.replaceOp(op, {count, next});
    return success();
  }
};

/// Refuses, with one error each, what the patterns do not lower.
static LogicalResult checkSupported(ModuleOp module) {
  bool ok = true;
  auto refuse = [&](Operation *op, const Twine &why) {
    op->emitError() << "spec-lower-steps: " << why;
    ok = false;
  };
  module.walk([&](Operation *op) {
    if (auto propose = dyn_cast<ProposeOp>(op)) {
      auto logits = cast<RankedTensorType>(propose.getLogits().getType());
      if (!isa<GreedyAttr>(propose.getRule()))
        refuse(op, "rejection sampling is not lowered yet");
      else if (logits.getRank() != 2 || !logits.hasStaticShape())
        refuse(op, "expects rows x vocabulary logits of static shape");
    } else if (auto accept = dyn_cast<AcceptOp>(op)) {
      if (!isa<GreedyAttr>(accept.getRule()))
        refuse(op, "rejection sampling is not lowered yet");
      else if (!accept.getProposals().getType().hasStaticShape() ||
               !cast<RankedTensorType>(accept.getTargetLogits().getType())
                    .hasStaticShape())
        refuse(op, "expects proposals and target logits of static shape");
    } else if (isa<CacheAppendOp, CacheViewOp, CacheCommitOp,
                   CacheRollbackOp, CacheLengthOp>(op)) {
      refuse(op, "the loop-level cache ops (append, view, commit, rollback, "
                 "length) are not lowered; spec-kv-cache-inplace and "
                 "spec-lower-generate use write/read at explicit lengths");
    }
  });
  return success(ok);
}

struct LowerStepsPass
    : public specula::impl::SpecLowerStepsBase<LowerStepsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    if (failed(checkSupported(getOperation())))
      return signalPassFailure();
    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion(
        [](KVCacheType cache) -> Type { return cacheTensorType(cache); });

    ConversionTarget target(*context);
    target.addIllegalDialect<SpecDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           tensor::TensorDialect, scf::SCFDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
      return converter.isSignatureLegal(func.getFunctionType()) &&
             converter.isLegal(&func.getBody());
    });
    target.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    target.addLegalOp<DecoderOp>();

    RewritePatternSet patterns(context);
    patterns.add<LowerAlloc, LowerWrite, LowerRead, LowerVerify, LowerPropose,
                 LowerAccept>(converter, context);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // The compositions are now the generate functions: nothing left for
    // the decoder ops to describe to later, LLVM-bound passes.
    for (auto decoder :
         llvm::make_early_inc_range(getOperation().getOps<DecoderOp>()))
      decoder.erase();
  }
};
} // namespace
