//===- slot_forward.cpp - what a batched forward costs per sequence -------===//
//
// One decode step (one row per sequence) of the example target over a cache
// of 16 slots, for batches of 1, 2, 4, 8 and 16 sequences at the same
// length, compiled with the CPU pipeline (GraphExecutor, the JIT the unit
// tests use): the forward's time and what each sequence added to it. This
// is the forward batched rounds are built on (issue 46). GraphExecutor
// copies the whole cache in and out of every call, a cost the same at every
// batch: the added time per sequence is the forward's own, the batch-1 time
// is not (the compiled artifact's target-only decoding is that figure). The
// step runs `--repeats` times after a warm-up, each batch in turn, so that
// load on a shared machine falls on all of them alike.
//
// Usage: bench-slot-forward [model.onnx (default models/target.onnx)]
//        [--past N (default 64)] [--repeats N (default 200)]
//
//===----------------------------------------------------------------------===//

#include "../test/unit/passes/InplaceModel.h"
#include "specula/GraphExecutor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace mlir;
using namespace specula;

int main(int argc, char **argv) {
  std::string model = "target.onnx";
  int64_t past = 64, repeats = 200;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--past") && i + 1 < argc)
      past = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = std::atoll(argv[++i]);
    else if (argv[i][0] != '-')
      model = argv[i];
    else {
      std::fprintf(stderr, "usage: %s [model.onnx] [--past N] [--repeats N]\n",
                   argv[0]);
      return 2;
    }
  }
  const std::vector<int64_t> batches = {1, 2, 4, 8, 16};
  const int64_t slots = batches.back(), capacity = past + 8;
  MLIRContext context;
  test_models::loadDialects(context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  if (failed(test_models::importInplaceModel(*module, model, "model", capacity,
                                             slots)))
    return 1;
  auto func = module->lookupSymbol<func::FuncOp>("model");
  auto cacheType = cast<RankedTensorType>(func.getArgumentTypes()[2]);
  HostTensor cache{/*FLOAT=*/1,
                   {cacheType.getShape().begin(), cacheType.getShape().end()},
                   {}};
  cache.data.assign(cache.numElements() * sizeof(float), 0);
  FailureOr<std::unique_ptr<GraphExecutor>> executor =
      GraphExecutor::compile(*module, "model");
  if (failed(executor))
    return 1;

  std::vector<double> best(batches.size(), 1e30);
  for (int64_t r = 0; r <= repeats; ++r)
    for (size_t i = 0; i < batches.size(); ++i) {
      int64_t batch = batches[i];
      std::vector<int64_t> tokens(batch, 42), positions(batch, past),
          lengths(batch, past);
      std::string error;
      auto start = std::chrono::steady_clock::now();
      FailureOr<std::vector<HostTensor>> outputs = (*executor)->run(
          {makeInt64Tensor({batch, 1}, tokens),
           makeInt64Tensor({batch, 1}, positions), cache,
           makeInt64Tensor({}, {0}), makeInt64Tensor({batch}, lengths)},
          error);
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (failed(outputs)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
      }
      if (r > 0) // the first round warms up
        best[i] = std::min(best[i], seconds);
    }
  std::printf("%s, one row per sequence at past %lld, best of %lld:\n",
              model.c_str(), static_cast<long long>(past),
              static_cast<long long>(repeats));
  std::printf("%6s %12s %22s\n", "batch", "forward ms",
              "ms per added sequence");
  for (size_t i = 0; i < batches.size(); ++i) {
    std::printf("%6lld %12.3f", static_cast<long long>(batches[i]),
                best[i] * 1e3);
    if (i > 0)
      std::printf(" %22.3f", (best[i] - best[i - 1]) * 1e3 /
                                 (batches[i] - batches[i - 1]));
    std::printf("\n");
  }
  return 0;
}
