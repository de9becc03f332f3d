//===- SpecTypes.cpp - spec dialect types ---------------------------------===//

#include "dialects/spec/SpecDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace specula::spec;

#define GET_TYPEDEF_CLASSES
#include "dialects/spec/SpecTypes.cpp.inc"

void SpecDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/spec/SpecTypes.cpp.inc"
      >();
}

// `!spec.kv_cache<2x4x512x32xf32>`: the shape syntax of builtin tensors.
Type KVCacheType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), shape, elementType);
}

void KVCacheType::print(AsmPrinter &printer) const {
  printer << '<';
  printer.printDimensionList(getShape());
  printer << 'x' << getElementType() << '>';
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> shape, Type elementType) {
  if (shape.size() != 4 && shape.size() != 5)
    return emitError() << "kv_cache shape must be layers x [slots x] kv_heads "
                          "x capacity x head_dim (4 or 5 dimensions), got "
                       << shape.size();
  SmallVector<const char *> names{"layers", "kv_heads", "capacity",
                                  "head_dim"};
  if (shape.size() == 5)
    names.insert(names.begin() + 1, "slots");
  for (auto [dim, name] : llvm::zip(shape, names))
    if (dim <= 0)
      return emitError() << "kv_cache " << name << " must be positive, got "
                         << dim;
  if (!isa<FloatType>(elementType))
    return emitError() << "kv_cache element type must be a float type, got "
                       << elementType;
  return success();
}
