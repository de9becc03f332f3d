//===- OpenMPTest.cpp - how the runtime sets up OpenMP for compiled code --===//
//
// Threads that spin at barriers collapse the rate when other work holds the
// cores (docs/performance.md, "Threads under load"), so the runtime asks
// libomp to put them to sleep at once, unless the environment chose a wait
// policy. Checked on an artifact whose contractions all run on threads.
//
//===----------------------------------------------------------------------===//

#include "specrt/specrt.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <dlfcn.h>
#include <thread>

namespace {
/// Opens the parallel example decoder, generates a few tokens on a new
/// thread (blocktime is per OpenMP root thread) and returns that thread's
/// blocktime afterwards, as libomp reports it.
int blocktimeAfterGenerating() {
  specrt_open_options options;
  specrt_open_options_init(&options);
  options.threads = 2;
  specrt_model *model = nullptr;
  EXPECT_EQ(specrt_open(SPECULA_TEST_ARTIFACTS "/draft-parallel.spec", &options,
                        &model),
            SPECRT_OK)
      << specrt_last_error();
  if (!model)
    return -1;
  int blocktime = -1;
  std::thread([&] {
    specrt_generate_options generate;
    specrt_generate_options_init(&generate);
    generate.max_new_tokens = 4;
    const int64_t prompt[] = {256, 'd', 'e', 'f'};
    specrt_result result;
    ASSERT_EQ(specrt_generate(model, prompt, 4, &generate, &result), SPECRT_OK)
        << specrt_last_error();
    specrt_result_free(&result);
    // The decoder loaded libomp; ask the same library.
    void *omp = dlopen("libomp.so.5", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(omp, nullptr) << "the decoder did not load libomp";
    auto getBlocktime =
        reinterpret_cast<int (*)()>(dlsym(omp, "kmp_get_blocktime"));
    ASSERT_NE(getBlocktime, nullptr);
    blocktime = getBlocktime();
    dlclose(omp);
  }).join();
  specrt_close(model);
  return blocktime;
}

TEST(OpenMP, ThreadsSleepAtBarriersUnlessTheEnvironmentSaysOtherwise) {
  unsetenv("OMP_WAIT_POLICY");
  unsetenv("KMP_BLOCKTIME");
  EXPECT_EQ(blocktimeAfterGenerating(), 0);
  // libomp read its environment when it started (above): a wait policy set
  // now is seen by the runtime only, which then leaves libomp's default.
  setenv("OMP_WAIT_POLICY", "active", 1);
  EXPECT_GT(blocktimeAfterGenerating(), 0);
  unsetenv("OMP_WAIT_POLICY");
}
} // namespace
