//===- SliceSubsetsTest.cpp - tensor slices' subset models ----------------===//
//
// The subset models registerSpeculaDialects attaches to tensor slices answer
// identical slices without a ValueBounds query and everything else as
// upstream's do. Identical empty slices tell the two models apart (upstream
// calls them disjoint, ours does not), so these tests also show which model a
// context made as the tools make it has.
//
//===----------------------------------------------------------------------===//

#include "specula/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Interfaces/SubsetOpInterface.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

constexpr const char *kSlices = R"mlir(
#plus4 = affine_map<(d0) -> (d0 + 4)>
#same = affine_map<(d0) -> (d0)>
func.func @f(%t: tensor<16x16xf32>, %u: tensor<16x16xf32>, %i: index,
             %j: index) {
  %a = tensor.extract_slice %t[%i, 0] [4, 16] [1, 1] {name = "a"} : tensor<16x16xf32> to tensor<4x16xf32>
  %b = tensor.extract_slice %t[%i, 0] [4, 16] [1, 1] {name = "same"} : tensor<16x16xf32> to tensor<4x16xf32>
  %c = tensor.extract_slice %t[%j, 0] [4, 16] [1, 1] {name = "other"} : tensor<16x16xf32> to tensor<4x16xf32>
  %i4 = affine.apply #plus4(%i)
  %d = tensor.extract_slice %t[%i4, 0] [4, 16] [1, 1] {name = "next"} : tensor<16x16xf32> to tensor<4x16xf32>
  %ii = affine.apply #same(%i)
  %e = tensor.extract_slice %t[%ii, 0] [4, 16] [1, 1] {name = "alias"} : tensor<16x16xf32> to tensor<4x16xf32>
  %f = tensor.extract_slice %u[%i, 0] [4, 16] [1, 1] {name = "elsewhere"} : tensor<16x16xf32> to tensor<4x16xf32>
  %g = tensor.extract_slice %t[%i, 0] [0, 16] [1, 1] {name = "empty"} : tensor<16x16xf32> to tensor<0x16xf32>
  %h = tensor.extract_slice %t[%i, 0] [0, 16] [1, 1] {name = "empty2"} : tensor<16x16xf32> to tensor<0x16xf32>
  %w = tensor.insert_slice %a into %t[%i, 0] [4, 16] [1, 1] {name = "write"} : tensor<4x16xf32> into tensor<16x16xf32>
  return
}
)mlir";

class SliceSubsetsTest : public ::testing::Test {
protected:
  /// Parses the slices in a context whose registry got Specula's models
  /// before upstream's (as the tools register them) or after.
  void parse(bool speculaFirst) {
    DialectRegistry registry;
    if (speculaFirst)
      specula::registerSpeculaDialects(registry);
    registerAllDialects(registry);
    if (!speculaFirst)
      specula::registerSpeculaDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kSlices, &context);
    ASSERT_TRUE(module);
  }

  SubsetOpInterface slice(StringRef name) {
    SubsetOpInterface found;
    module->walk([&](SubsetOpInterface op) {
      if (auto attr = op->getAttrOfType<StringAttr>("name"))
        if (attr.getValue() == name)
          found = op;
    });
    EXPECT_TRUE(found) << name.str();
    return found;
  }

  bool equivalent(StringRef a, StringRef b) {
    return slice(a).operatesOnEquivalentSubset(slice(b), sameTensor);
  }
  bool disjoint(StringRef a, StringRef b) {
    return slice(a).operatesOnDisjointSubset(slice(b), sameTensor);
  }

  static bool sameTensor(Value a, Value b) { return a == b; }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(SliceSubsetsTest, IdenticalSlicesAreEquivalentAndOverlap) {
  parse(/*speculaFirst=*/true);
  EXPECT_TRUE(equivalent("a", "same"));
  EXPECT_TRUE(equivalent("write", "a"));
  EXPECT_TRUE(equivalent("a", "write"));
  EXPECT_FALSE(disjoint("a", "same"));
  EXPECT_FALSE(disjoint("write", "a"));
  // The same offsets in another tensor are another subset.
  EXPECT_FALSE(equivalent("a", "elsewhere"));
}

TEST_F(SliceSubsetsTest, OtherSlicesAreLeftToValueBounds) {
  parse(/*speculaFirst=*/true);
  EXPECT_TRUE(equivalent("a", "alias"));
  EXPECT_TRUE(disjoint("a", "next"));
  EXPECT_FALSE(equivalent("a", "next"));
  EXPECT_FALSE(equivalent("a", "other"));
  EXPECT_FALSE(disjoint("a", "other"));
}

TEST_F(SliceSubsetsTest, ToolsGetSpeculasModels) {
  parse(/*speculaFirst=*/true);
  EXPECT_FALSE(disjoint("empty", "empty2"));
}

TEST_F(SliceSubsetsTest, UpstreamsModelsWhenRegisteredFirst) {
  parse(/*speculaFirst=*/false);
  EXPECT_TRUE(disjoint("empty", "empty2"));
  EXPECT_TRUE(equivalent("a", "same"));
}

} // namespace
