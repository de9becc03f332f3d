//===- GraphExecutorTest.cpp - compile and run functions on tensors -------===//

#include "specula/GraphExecutor.h"
#include "specula/ONNXImport.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir;
using namespace specula;

namespace {
constexpr int32_t kFloat = 1, kInt64 = 7;

HostTensor floats(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t{kFloat, std::move(shape), {}};
  t.data.resize(values.size() * sizeof(float));
  if (!values.empty()) // memcpy's pointers must not be null
    std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

std::vector<float> asFloats(const HostTensor &t) {
  std::vector<float> values(t.data.size() / sizeof(float));
  if (!values.empty())
    std::memcpy(values.data(), t.data.data(), t.data.size());
  return values;
}

class GraphExecutorTest : public ::testing::Test {
protected:
  GraphExecutorTest() {
    DialectRegistry registry;
    registerONNXImportDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  std::unique_ptr<GraphExecutor> compile(StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    FailureOr<std::unique_ptr<GraphExecutor>> executor =
        GraphExecutor::compile(*module, "main");
    EXPECT_TRUE(succeeded(executor));
    return succeeded(executor) ? std::move(*executor) : nullptr;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

// Row sums of a dynamic-height matrix: dynamic shapes in and out, a
// reduction, and an i64 output computed from the shape.
constexpr const char *kRowSums = R"mlir(
func.func @main(%x: tensor<?x3xf32>) -> (tensor<?xf32>, tensor<i64>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x3xf32>
  %init = tensor.empty(%n) : tensor<?xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<?xf32>) -> tensor<?xf32>
  %sums = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x3xf32>) outs(%acc : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %rows = arith.index_cast %n : index to i64
  %count = tensor.from_elements %rows : tensor<i64>
  return %sums, %count : tensor<?xf32>, tensor<i64>
}
)mlir";
} // namespace

TEST_F(GraphExecutorTest, RunsWithDynamicShapes) {
  std::unique_ptr<GraphExecutor> executor = compile(kRowSums);
  ASSERT_TRUE(executor);
  std::string error;
  for (int64_t rows : {1, 4, 0}) {
    std::vector<float> values;
    for (int64_t i = 0; i < rows * 3; ++i)
      values.push_back(static_cast<float>(i));
    FailureOr<std::vector<HostTensor>> outputs =
        executor->run({floats({rows, 3}, values)}, error);
    ASSERT_TRUE(succeeded(outputs)) << error;
    ASSERT_EQ(outputs->size(), 2u);
    EXPECT_EQ((*outputs)[0].shape, std::vector<int64_t>{rows});
    std::vector<float> sums = asFloats((*outputs)[0]);
    for (int64_t i = 0; i < rows; ++i)
      EXPECT_EQ(sums[i], 9.0f * i + 3.0f) << "row " << i;
    EXPECT_EQ((*outputs)[1].dataType, kInt64);
    int64_t count;
    std::memcpy(&count, (*outputs)[1].data.data(), sizeof(count));
    EXPECT_EQ(count, rows);
  }
}

TEST_F(GraphExecutorTest, ChecksInputsAgainstTheSignature) {
  std::unique_ptr<GraphExecutor> executor = compile(kRowSums);
  ASSERT_TRUE(executor);
  std::string error;
  EXPECT_TRUE(failed(executor->run({}, error)));
  EXPECT_EQ(error, "expected 1 inputs, got 0");
  EXPECT_TRUE(failed(executor->run({floats({2, 4}, std::vector<float>(8))},
                                   error)));
  EXPECT_EQ(error, "input 0 has size 4 in dimension 1, expected 3");
  EXPECT_TRUE(failed(executor->run({floats({3}, std::vector<float>(3))},
                                   error)));
  EXPECT_EQ(error, "input 0 has rank 1, expected 2");
  HostTensor ints{kInt64, {1, 3}, std::vector<char>(24)};
  EXPECT_TRUE(failed(executor->run({ints}, error)));
  EXPECT_EQ(error, "input 0 has data type 7, expected 1");
  HostTensor short_ = floats({2, 3}, std::vector<float>(5));
  EXPECT_TRUE(failed(executor->run({short_}, error)));
  EXPECT_EQ(error, "input 0 holds 20 bytes, not what its shape needs");
}

TEST_F(GraphExecutorTest, RefusesTypesItCannotPass) {
  module = parseSourceString<ModuleOp>(
      "func.func @main(%x: memref<4xf32>) { return }", &context);
  ASSERT_TRUE(module);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics = diag.str();
    return success();
  });
  EXPECT_TRUE(failed(GraphExecutor::compile(*module, "main")));
  EXPECT_EQ(diagnostics,
            "cannot pass 'memref<4xf32>' between the host and compiled code");
  EXPECT_TRUE(failed(GraphExecutor::compile(*module, "nothere")));
  EXPECT_EQ(diagnostics, "no function @nothere to compile");
}

TEST_F(GraphExecutorTest, PassesIndexAndI64ScalarsAsZeroDTensors) {
  std::unique_ptr<GraphExecutor> executor = compile(R"mlir(
func.func @main(%n: index, %k: i64, %x: tensor<?xi64>) -> (i64, tensor<?xi64>, index) {
  %c0 = arith.constant 0 : index
  %len = tensor.dim %x, %c0 : tensor<?xi64>
  %i = arith.index_cast %n : index to i64
  %sum = arith.addi %i, %k : i64
  %y = tensor.insert %sum into %x[%c0] : tensor<?xi64>
  return %sum, %y, %len : i64, tensor<?xi64>, index
}
)mlir");
  ASSERT_TRUE(executor);
  std::string error;
  FailureOr<std::vector<HostTensor>> outputs = executor->run(
      {makeInt64Tensor({}, {40}), makeInt64Tensor({}, {2}),
       makeInt64Tensor({3}, {0, 0, 0})},
      error);
  ASSERT_TRUE(succeeded(outputs)) << error;
  int64_t sum = int64Value((*outputs)[0]);
  int64_t first = int64Value((*outputs)[1]);
  int64_t length = int64Value((*outputs)[2]);
  EXPECT_EQ(sum, 42);
  EXPECT_EQ((*outputs)[0].shape.size(), 0u);
  EXPECT_EQ(first, 42);
  EXPECT_EQ(length, 3);
}
