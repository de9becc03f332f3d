//===- batch_rounds.cpp - tokens/s of batched rounds against one sequence -===//
//
// An artifact compiled with `specc --max-batch B`, run through the runtime:
// for batches of 1, 2, 4, ... B sequences (each added with the same short
// prompt), `--steps` rounds of specrt_batch_step that never speculate and,
// with a draft, that always do and that adapt, and the aggregate tokens
// per second (x: against specrt_generate's single-sequence target-only
// decoding, also shown speculating). Each configuration runs `--repeats` times in turn and keeps
// its fastest run (this machine is shared and noisy). Then a long prompt
// joins three decoding sequences, its prefill whole or in chunks
// (specrt_batch_set_prefill_chunk): the longest wait between the others'
// rounds, and the prompt's own wait for its first token.
//
// Usage: bench-batch-rounds model.spec [--steps 64] [--repeats 5] [--threads 1]
//                           [--long-prompt 400]
//
//===----------------------------------------------------------------------===//

#include "specrt/specrt.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const std::vector<int64_t> kPrompt = {256, 'd', 'e', 'f', ' ', 'f', '('};

/// Tokens per second of `steps` rounds of `count` sequences.
double batchRate(specrt_model *model, size_t count, int64_t steps,
                 specrt_speculation speculation) {
  specrt_batch *batch = nullptr;
  if (specrt_batch_open(model, &batch) != SPECRT_OK) {
    std::fprintf(stderr, "%s\n", specrt_last_error());
    std::exit(1);
  }
  specrt_batch_set_speculation(batch, speculation);
  for (size_t i = 0; i < count; ++i) {
    int64_t slot, first;
    specrt_batch_add(batch, kPrompt.data(), kPrompt.size(), &slot, &first);
  }
  std::vector<int64_t> slots(specrt_batch_step_capacity(batch)),
      tokens(slots.size());
  size_t stepped = 0, total = 0;
  auto start = Clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    specrt_batch_step(batch, slots.data(), tokens.data(), &stepped);
    total += stepped;
  }
  double elapsed = seconds(start);
  specrt_batch_close(batch);
  return total / elapsed;
}

/// With three sequences decoding plain rounds, a prompt of `length` tokens
/// joins, prefilled whole or `chunk` tokens per round: until its first
/// token, the longest time between two of the others' rounds (the join
/// included) and the time to that first token.
struct Stall {
  double longestGap = 1e30, firstToken = 1e30;
};
Stall prefillStall(specrt_model *model, int64_t length, size_t chunk) {
  specrt_batch *batch = nullptr;
  specrt_batch_open(model, &batch);
  specrt_batch_set_speculation(batch, SPECRT_SPECULATE_NEVER);
  specrt_batch_set_prefill_chunk(batch, chunk);
  int64_t slot = -1, first = -1;
  std::vector<int64_t> slots(specrt_batch_step_capacity(batch)),
      tokens(slots.size());
  size_t stepped = 0;
  for (int i = 0; i < 3; ++i)
    specrt_batch_add(batch, kPrompt.data(), kPrompt.size(), &slot, &first);
  for (int i = 0; i < 4; ++i)
    specrt_batch_step(batch, slots.data(), tokens.data(), &stepped);
  std::vector<int64_t> prompt(length);
  prompt[0] = 256;
  for (int64_t i = 1; i < length; ++i)
    prompt[i] = 'a' + i % 26;
  Stall stall;
  auto joined = Clock::now(), lastRound = joined;
  if (specrt_batch_add(batch, prompt.data(), prompt.size(), &slot, &first) !=
      SPECRT_OK) {
    std::fprintf(stderr, "%s\n", specrt_last_error());
    std::exit(1);
  }
  double longest = 0, firstToken = first >= 0 ? seconds(joined) : 0;
  // The others' first round after the join waits for a whole prefill.
  do {
    specrt_batch_step(batch, slots.data(), tokens.data(), &stepped);
    longest = std::max(longest, seconds(lastRound));
    lastRound = Clock::now();
    for (size_t i = 0; i < stepped && first < 0; ++i)
      if (slots[i] == slot) {
        first = tokens[i];
        firstToken = seconds(joined);
      }
  } while (first < 0);
  stall.firstToken = firstToken;
  stall.longestGap = longest;
  specrt_batch_close(batch);
  return stall;
}

/// Seconds for specrt_generate to decode `steps` tokens of one sequence,
/// speculating or with the target alone (the prefill excluded: its time
/// is measured alone and subtracted).
double timeAlone(specrt_model *model, int64_t steps, bool speculative) {
  auto run = [&](int64_t tokens) {
    specrt_generate_options options;
    specrt_generate_options_init(&options);
    options.max_new_tokens = tokens;
    options.stop_tokens = nullptr;
    options.speculative = speculative;
    specrt_result result;
    auto start = Clock::now();
    specrt_generate(model, kPrompt.data(), kPrompt.size(), &options, &result);
    double elapsed = seconds(start);
    specrt_result_free(&result);
    return elapsed;
  };
  return run(steps + 1) - run(1);
}
} // namespace

/// The prefill stalls of a `length`-token prompt, whole and in chunks.
static void printStalls(specrt_model *model, int64_t length, int64_t repeats) {
  specrt_model_info info;
  specrt_get_model_info(model, &info);
  length = std::min(length, info.context_capacity - 8);
  const size_t chunks[] = {0, 16, 32, 64, 128};
  std::vector<Stall> best(std::size(chunks));
  for (int64_t r = 0; r < repeats; ++r)
    for (size_t c = 0; c < best.size(); ++c) {
      Stall stall = prefillStall(model, length, chunks[c]);
      best[c].longestGap = std::min(best[c].longestGap, stall.longestGap);
      best[c].firstToken = std::min(best[c].firstToken, stall.firstToken);
    }
  std::printf("a %lld-token prompt joins 3 decoding sequences "
              "(plain rounds):\n%14s %22s %22s\n",
              static_cast<long long>(length), "prefill chunk",
              "others' longest gap", "its first token");
  for (size_t c = 0; c < best.size(); ++c)
    std::printf("%14s %19.2f ms %19.2f ms\n",
                chunks[c] ? std::to_string(chunks[c]).c_str() : "whole",
                best[c].longestGap * 1e3, best[c].firstToken * 1e3);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s model.spec [--steps N] [--repeats N] [--threads N]\n",
                 argv[0]);
    return 2;
  }
  int64_t steps = 64, repeats = 5, longPrompt = 400;
  int threads = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeats"))
      repeats = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--long-prompt"))
      longPrompt = std::atoll(argv[i + 1]);
  }
  specrt_open_options options;
  specrt_open_options_init(&options);
  options.threads = threads;
  specrt_model *model = nullptr;
  if (specrt_open(argv[1], &options, &model) != SPECRT_OK) {
    std::fprintf(stderr, "%s\n", specrt_last_error());
    return 1;
  }
  specrt_batch *probe = nullptr;
  if (specrt_batch_open(model, &probe) != SPECRT_OK) {
    std::fprintf(stderr, "%s\n", specrt_last_error());
    return 1;
  }
  size_t slots = specrt_batch_slots(probe);
  bool drafts = specrt_batch_step_capacity(probe) > slots;
  specrt_batch_close(probe);
  std::vector<size_t> counts;
  for (size_t n = 1; n <= slots; n *= 2)
    counts.push_back(n);
  std::vector<specrt_speculation> modes{SPECRT_SPECULATE_NEVER};
  if (drafts)
    modes.insert(modes.end(),
                 {SPECRT_SPECULATE_ALWAYS, SPECRT_SPECULATE_ADAPTIVE});
  std::vector<std::vector<double>> best(
      counts.size(), std::vector<double>(modes.size(), 0));
  double alone = 1e30, aloneSpeculating = 1e30;
  for (int64_t r = 0; r < repeats; ++r) {
    alone = std::min(alone, timeAlone(model, steps, false));
    if (drafts)
      aloneSpeculating =
          std::min(aloneSpeculating, timeAlone(model, steps, true));
    for (size_t i = 0; i < counts.size(); ++i)
      for (size_t m = 0; m < modes.size(); ++m)
        best[i][m] = std::max(best[i][m],
                              batchRate(model, counts[i], steps, modes[m]));
  }
  double aloneRate = steps / alone;
  std::printf("%s: %lld steps, fastest of %lld, %d thread(s)\n", argv[1],
              static_cast<long long>(steps), static_cast<long long>(repeats),
              threads);
  std::printf("one sequence, specrt_generate, target alone: %.0f tokens/s\n",
              aloneRate);
  if (drafts)
    std::printf("one sequence, specrt_generate, speculating: %.0f tokens/s\n",
                steps / aloneSpeculating);
  const char *names[] = {"adaptive", "never", "always"};
  std::printf("%9s", "sequences");
  for (specrt_speculation mode : modes)
    std::printf(" %10s %6s", names[mode], "x");
  std::printf("\n");
  for (size_t i = 0; i < counts.size(); ++i) {
    std::printf("%9zu", counts[i]);
    for (double rate : best[i])
      std::printf(" %10.0f %5.2fx", rate, rate / aloneRate);
    std::printf("\n");
  }
  // --long-prompt 0 skips the chunked-prefill measurement.
  if (longPrompt > 0)
    printStalls(model, longPrompt, repeats);
  specrt_close(model);
  return 0;
}
