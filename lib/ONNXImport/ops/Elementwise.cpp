//===- Elementwise.cpp - ONNX elementwise operators -----------------------===//
//
// Unary, binary (numpy broadcasting), comparison, logical, Where, Cast and
// Identity: each becomes one linalg.generic over the result shape that shape
// inference gave.
//
//===----------------------------------------------------------------------===//

#include "lib/ONNXImport/ops/Common.h"

using namespace mlir;
using namespace specula::onnx_import;

namespace {
/// Builds one scalar op for a float or an integer element type.
using ScalarFn = std::function<Value(OpBuilder &, Location, ValueRange)>;

/// An elementwise op whose operands all share the result's element type.
LogicalResult importElementwise(NodeImporter &node, unsigned numInputs,
                                ScalarFn body) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < numInputs; ++i) {
    Value input = node.operand(i);
    if (!input)
      return node.emitError() << "input " << i << " is required";
    inputs.push_back(input);
  }
  FailureOr<RankedTensorType> resultType =
      node.resultType(0, [&] { return broadcastShape(inputs); });
  if (failed(resultType))
    return failure();
  node.setResult(0, buildElementwise(node.builder(), node.loc(), inputs,
                                     *resultType, body));
  return success();
}

template <typename FloatOp, typename IntOp>
ScalarFn arithmetic() {
  return [](OpBuilder &b, Location loc, ValueRange args) -> Value {
    if (isa<FloatType>(args[0].getType()))
      return FloatOp::create(b, loc, args[0], args[1]);
    return IntOp::create(b, loc, args[0], args[1]);
  };
}

ScalarFn compare(arith::CmpFPredicate floatPredicate,
                 arith::CmpIPredicate intPredicate) {
  return [=](OpBuilder &b, Location loc, ValueRange args) -> Value {
    if (isa<FloatType>(args[0].getType()))
      return arith::CmpFOp::create(b, loc, floatPredicate, args[0], args[1]);
    return arith::CmpIOp::create(b, loc, intPredicate, args[0], args[1]);
  };
}

template <typename MathOp>
ScalarFn floatUnary() {
  return [](OpBuilder &b, Location loc, ValueRange args) -> Value {
    return MathOp::create(b, loc, args[0]);
  };
}

/// Registers a float-only unary operator; integer inputs are refused.
void addFloatUnary(OpHandlerRegistry &registry, StringRef name, int minSince,
                   int maxSince, ScalarFn body) {
  registry.add(name, minSince, maxSince, [body](NodeImporter &node) {
    Value input = node.operand(0);
    if (!input || !isa<FloatType>(getElementTypeOrSelf(input.getType())))
      return LogicalResult(node.emitError()
                           << "expects a floating-point input");
    return importElementwise(node, 1, body);
  });
}

Value negate(OpBuilder &b, Location loc, Value x) {
  if (isa<FloatType>(x.getType()))
    return arith::NegFOp::create(b, loc, x);
  return arith::SubIOp::create(b, loc, scalarConstant(b, loc, x.getType(), 0),
                               x);
}
} // namespace

void specula::onnx_import::registerElementwiseHandlers(
    OpHandlerRegistry &registry) {
  // Binary arithmetic with broadcasting.
  auto addBinary = [&](StringRef name, int minSince, int maxSince,
                       ScalarFn body) {
    registry.add(name, minSince, maxSince, [body](NodeImporter &node) {
      return importElementwise(node, 2, body);
    });
  };
  addBinary("Add", 7, 14, arithmetic<arith::AddFOp, arith::AddIOp>());
  addBinary("Sub", 7, 14, arithmetic<arith::SubFOp, arith::SubIOp>());
  addBinary("Mul", 7, 14, arithmetic<arith::MulFOp, arith::MulIOp>());
  addBinary("Div", 7, 14, arithmetic<arith::DivFOp, arith::DivSIOp>());
  // Variadic: Max, Min, Sum fold their inputs left to right; Mean divides
  // the sum by the count.
  auto addVariadic = [&](StringRef name, int minSince, int maxSince,
                         ScalarFn combine, bool mean) {
    registry.add(name, minSince, maxSince, [=](NodeImporter &node) {
      unsigned count = node.numOperands();
      return importElementwise(
          node, count,
          [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            Value result = args[0];
            for (Value arg : args.drop_front())
              result = combine(b, loc, {result, arg});
            if (!mean)
              return result;
            return arith::DivFOp::create(
                b, loc, result,
                scalarConstant(b, loc, result.getType(), count));
          });
    });
  };
  addVariadic("Max", 8, 13, arithmetic<arith::MaximumFOp, arith::MaxSIOp>(),
              false);
  addVariadic("Min", 8, 13, arithmetic<arith::MinimumFOp, arith::MinSIOp>(),
              false);
  addVariadic("Sum", 8, 13, arithmetic<arith::AddFOp, arith::AddIOp>(), false);
  addVariadic("Mean", 8, 13, arithmetic<arith::AddFOp, arith::AddIOp>(), true);
  // Pow's exponent may have another type than its base.
  registry.add("Pow", 7, 15, [](NodeImporter &node) {
    return importElementwise(
        node, 2, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Type type = args[0].getType();
          Value exponent = castScalar(b, loc, args[1], type);
          if (isa<FloatType>(type))
            return math::PowFOp::create(b, loc, args[0], exponent);
          return math::IPowIOp::create(b, loc, args[0], exponent);
        });
  });

  // Comparisons and logic produce booleans (i1).
  addBinary("Equal", 7, 13,
            compare(arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq));
  addBinary("Greater", 7, 13,
            compare(arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt));
  addBinary("Less", 7, 13,
            compare(arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt));
  addBinary("GreaterOrEqual", 12, 16,
            compare(arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge));
  addBinary("LessOrEqual", 12, 16,
            compare(arith::CmpFPredicate::OLE, arith::CmpIPredicate::sle));
  addBinary("And", 7, 7, arithmetic<arith::AndIOp, arith::AndIOp>());
  addBinary("Or", 7, 7, arithmetic<arith::OrIOp, arith::OrIOp>());
  addBinary("Xor", 7, 7, arithmetic<arith::XOrIOp, arith::XOrIOp>());
  registry.add("Not", 1, 1, [](NodeImporter &node) {
    return importElementwise(
        node, 1, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::XOrIOp::create(
              b, loc, args[0], scalarConstant(b, loc, args[0].getType(), 1));
        });
  });

  // Unary.
  registry.add("Neg", 6, 13, [](NodeImporter &node) {
    return importElementwise(
        node, 1, [](OpBuilder &b, Location loc, ValueRange args) {
          return negate(b, loc, args[0]);
        });
  });
  registry.add("Abs", 6, 13, [](NodeImporter &node) {
    return importElementwise(
        node, 1, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          if (isa<FloatType>(args[0].getType()))
            return math::AbsFOp::create(b, loc, args[0]);
          return math::AbsIOp::create(b, loc, args[0]);
        });
  });
  registry.add("Relu", 6, 14, [](NodeImporter &node) {
    return importElementwise(
        node, 1, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value zero = scalarConstant(b, loc, args[0].getType(), 0);
          if (isa<FloatType>(args[0].getType()))
            return arith::MaximumFOp::create(b, loc, args[0], zero);
          return arith::MaxSIOp::create(b, loc, args[0], zero);
        });
  });
  addFloatUnary(registry, "Sqrt", 6, 13, floatUnary<math::SqrtOp>());
  addFloatUnary(registry, "Exp", 6, 13, floatUnary<math::ExpOp>());
  addFloatUnary(registry, "Log", 6, 13, floatUnary<math::LogOp>());
  addFloatUnary(registry, "Erf", 9, 13, floatUnary<math::ErfOp>());
  addFloatUnary(registry, "Tanh", 6, 13, floatUnary<math::TanhOp>());
  addFloatUnary(registry, "Cos", 7, 7, floatUnary<math::CosOp>());
  addFloatUnary(registry, "Sin", 7, 7, floatUnary<math::SinOp>());
  addFloatUnary(registry, "Floor", 6, 13, floatUnary<math::FloorOp>());
  addFloatUnary(registry, "Ceil", 6, 13, floatUnary<math::CeilOp>());
  addFloatUnary(registry, "Reciprocal", 6, 13,
                [](OpBuilder &b, Location loc, ValueRange args) -> Value {
                  Value one = scalarConstant(b, loc, args[0].getType(), 1);
                  return arith::DivFOp::create(b, loc, one, args[0]);
                });
  // sigmoid(x) = 1 / (1 + exp(-x))
  addFloatUnary(registry, "Sigmoid", 6, 13,
                [](OpBuilder &b, Location loc, ValueRange args) -> Value {
                  Value one = scalarConstant(b, loc, args[0].getType(), 1);
                  Value e = math::ExpOp::create(b, loc, negate(b, loc, args[0]));
                  return arith::DivFOp::create(
                      b, loc, one, arith::AddFOp::create(b, loc, one, e));
                });

  // Where(condition, x, y): the result type is x's.
  registry.add("Where", 9, 16, [](NodeImporter &node) {
    return importElementwise(
        node, 3, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
        });
  });

  registry.add("Cast", 6, 13, [](NodeImporter &node) {
    Value input = node.operand(0);
    FailureOr<RankedTensorType> resultType = node.resultType(
        0, [&] { return broadcastShape(input); });
    if (failed(resultType))
      return failure();
    Type to = resultType->getElementType();
    // A cast to the type it has (such as a half-precision weight's cast to
    // float, imported as f32) is the value itself: a weight stays a
    // constant that later passes see.
    if (input.getType() == *resultType) {
      node.setResult(0, input);
      return success();
    }
    node.setResult(0, buildElementwise(node.builder(), node.loc(), {input},
                                       *resultType,
                                       [&](OpBuilder &b, Location loc,
                                           ValueRange args) {
                                         return castScalar(b, loc, args[0], to);
                                       }));
    return success();
  });

  // Clip(x, min?, max?): absent bounds do not clip.
  registry.add("Clip", 11, 13, [](NodeImporter &node) {
    Value x = node.operand(0), low = node.operand(1), high = node.operand(2);
    FailureOr<RankedTensorType> resultType =
        node.resultType(0, [&] { return broadcastShape(x); });
    if (failed(resultType))
      return failure();
    SmallVector<Value> inputs{x};
    if (low)
      inputs.push_back(low);
    if (high)
      inputs.push_back(high);
    node.setResult(
        0, buildElementwise(
               node.builder(), node.loc(), inputs, *resultType,
               [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                 bool isFloat = isa<FloatType>(args[0].getType());
                 Value y = args[0];
                 unsigned next = 1;
                 if (low)
                   y = isFloat ? Value(arith::MaximumFOp::create(b, loc, y,
                                                                 args[next]))
                               : Value(arith::MaxSIOp::create(b, loc, y,
                                                              args[next]));
                 next += low ? 1 : 0;
                 if (high)
                   y = isFloat ? Value(arith::MinimumFOp::create(b, loc, y,
                                                                 args[next]))
                               : Value(arith::MinSIOp::create(b, loc, y,
                                                              args[next]));
                 return y;
               }));
    return success();
  });

  // Trilu(x, k?): keeps the upper (j - i >= k) or lower (j - i <= k)
  // triangle of the last two dimensions, zeroes the rest.
  registry.add("Trilu", 14, 14, [](NodeImporter &node) {
    Value x = node.operand(0);
    FailureOr<RankedTensorType> resultType =
        node.resultType(0, [&] { return broadcastShape(x); });
    if (failed(resultType))
      return failure();
    int64_t rank = resultType->getRank();
    if (rank < 2)
      return LogicalResult(node.emitError() << "expects a rank >= 2 input");
    bool upper = node.intAttr("upper", 1);
    OpBuilder &b = node.builder();
    Location loc = node.loc();
    Value k = node.operand(1)
                  ? extractIndex(b, loc, node.operand(1), 0)
                  : Value(arith::ConstantIndexOp::create(b, loc, 0));
    node.setResult(
        0, buildElementwise(
               b, loc, {x}, *resultType,
               [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                 Value i = linalg::IndexOp::create(nb, l, rank - 2);
                 Value j = linalg::IndexOp::create(nb, l, rank - 1);
                 Value diagonal = arith::SubIOp::create(nb, l, j, i);
                 Value keep = arith::CmpIOp::create(
                     nb, l,
                     upper ? arith::CmpIPredicate::sge
                           : arith::CmpIPredicate::sle,
                     diagonal, k);
                 return arith::SelectOp::create(
                     nb, l, keep, args[0],
                     scalarConstant(nb, l, args[0].getType(), 0));
               }));
    return success();
  });

  registry.add("Identity", 1, 16, [](NodeImporter &node) {
    node.setResult(0, node.operand(0));
    return success();
  });
}
