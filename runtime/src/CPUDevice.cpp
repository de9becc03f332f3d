//===- CPUDevice.cpp - run an artifact's host shared object ---------------===//

#include "Device.h"
#include "MappedFile.h"

#include "specrt/artifact_format.h"

#include <cstdlib>
#include <optional>

#include <dlfcn.h>

using namespace specrt;

// Compiled code allocates its buffers, the returned sequence included, here
// (Allocator.cpp).
extern "C" void _mlir_memref_to_llvm_free(void *block);

namespace {
/// The architecture this runtime was built for, as LLVM triples name it.
constexpr const char *hostArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

/// Whether this CPU has `feature` (a name from the manifest's
/// target.features); nullopt when the runtime cannot tell.
std::optional<bool> cpuSupports(const std::string &feature) {
#if defined(__x86_64__)
  // __builtin_cpu_supports takes string literals only.
#define SPECRT_FEATURE(name)                                                   \
  if (feature == name)                                                         \
    return __builtin_cpu_supports(name) != 0;
  SPECRT_FEATURE("sse4.2")
  SPECRT_FEATURE("avx")
  SPECRT_FEATURE("avx2")
  SPECRT_FEATURE("fma")
  SPECRT_FEATURE("f16c")
  SPECRT_FEATURE("bmi")
  SPECRT_FEATURE("bmi2")
  SPECRT_FEATURE("avx512f")
  SPECRT_FEATURE("avx512bw")
  SPECRT_FEATURE("avx512dq")
  SPECRT_FEATURE("avx512vl")
  SPECRT_FEATURE("avx512vnni")
  SPECRT_FEATURE("avx512bf16")
#undef SPECRT_FEATURE
#endif
  return std::nullopt;
}

class CPUDevice : public Device {
public:
  specrt_status open(const std::string &directory, const Manifest &manifest,
                     bool verifyChecksums, std::string &error);

  specrt_status decode(bool speculative, const int64_t *prompt,
                       size_t promptLength, int64_t maxNewTokens, int64_t seed,
                       const std::vector<int64_t> &stopTokens,
                       DecodeOutput &output, std::string &error) override {
    // The compiled code only reads the prompt and the stop tokens.
    return library.run(speculative, const_cast<int64_t *>(prompt),
                       promptLength, maxNewTokens, seed,
                       const_cast<int64_t *>(stopTokens.data()),
                       stopTokens.size(), output, error);
  }

  void setThreads(int threads) override { library.setThreads(threads); }
  // Each run's caches and scratch buffers are its own (the allocator is
  // thread-safe) and the OpenMP thread count is set per calling thread.
  bool runsConcurrently() const override { return true; }

  specrt_status prefill(SlotCache which, float *cache, int64_t slot,
                        int64_t start, const int64_t *tokens, size_t length,
                        int64_t key, int64_t &token, int64_t *proposals,
                        std::vector<float> *hidden, float *distributions,
                        std::string &error) override {
    return library.prefill(which, cache, slot, start, tokens, length, key,
                           token, proposals, hidden, distributions, error);
  }
  specrt_status modulePrefill(float *moduleCache, int64_t slot, int64_t start,
                              const float *hidden, int64_t hiddenSize,
                              const int64_t *tokens, size_t length,
                              int64_t key, int64_t &token, float *distribution,
                              std::string &error) override {
    return library.modulePrefill(moduleCache, slot, start, hidden, hiddenSize,
                                 tokens, length, key, token, distribution,
                                 error);
  }
  specrt_status round(float *cache, const SlotRun &run, const RoundOutput &out,
                      std::string &error) override {
    return library.round(cache, run, out, error);
  }
  specrt_status specRound(float *cache, float *draftCache, const SlotRun &run,
                          const RoundOutput &out,
                          std::string &error) override {
    return library.specRound(cache, draftCache, run, out, error);
  }
  specrt_status draftRound(float *draftCache, const SlotRun &run,
                           const RoundOutput &out, std::string &error) override {
    return library.draftRound(draftCache, run, out, error);
  }
  specrt_status verify(float *cache, const SlotRun &run, const RoundOutput &out,
                       std::string &error) override {
    return library.verify(cache, run, out, error);
  }

private:
  MappedFile weights;
  HostLibrary library;
};
} // namespace

specrt_status specrt::checkHostCPU(const Manifest &manifest,
                                   std::string &error) {
  std::string triple = manifest.triple;
  std::string arch = triple.substr(0, triple.find('-'));
  if (arch != hostArchitecture()) {
    error = "the artifact was compiled for " + triple + "; this machine is " +
            hostArchitecture();
    return SPECRT_ERROR_DEVICE;
  }

  // Code for features this CPU lacks would die of an illegal instruction.
  for (const std::string &feature : manifest.cpuFeatures) {
    std::optional<bool> supported = cpuSupports(feature);
    if (!supported) {
      error = "the artifact's code uses the CPU feature '" + feature +
              "', which this runtime cannot check";
      return SPECRT_ERROR_DEVICE;
    }
    if (!*supported) {
      error = "the artifact was compiled for " + manifest.cpu +
              " and uses " + feature +
              ", which this CPU lacks; recompile on this machine or with "
              "specc --cpu for an older CPU (e.g. x86-64-v2)";
      return SPECRT_ERROR_DEVICE;
    }
  }
  return SPECRT_OK;
}

specrt_status specrt::mapWeights(const std::string &directory,
                                 const Manifest &manifest,
                                 bool verifyChecksums, MappedFile &weights,
                                 std::string &error) {
  std::string path = directory + "/" + manifest.weights.name;
  if (!weights.open(path, error))
    return SPECRT_ERROR_IO;
  return checkArtifactFile(path, weights.data(), weights.size(),
                           manifest.weights, verifyChecksums, error);
}

void HostLibrary::close() {
  if (handle)
    dlclose(handle);
  handle = nullptr;
}

specrt_status HostLibrary::open(const std::string &directory,
                                const Manifest &manifest,
                                bool verifyChecksums, const void *weights,
                                std::string &error) {
  std::string libraryPath = directory + "/" + manifest.library.name;
  {
    MappedFile code;
    if (!code.open(libraryPath, error))
      return SPECRT_ERROR_IO;
    if (specrt_status status =
            checkArtifactFile(libraryPath, code.data(), code.size(),
                              manifest.library, verifyChecksums, error))
      return status;
  }
  handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *message = dlerror();
    error = "cannot load '" + libraryPath + "': " + (message ? message : "?");
    return SPECRT_ERROR_IO;
  }
  auto symbol = [&](const std::string &name) -> void * {
    void *address = dlsym(handle, name.c_str());
    if (!address && error.empty())
      error = "'" + libraryPath + "' has no symbol '" + name +
              "' that the manifest names";
    return address;
  };
  // Before any symbol the manifest names is trusted.
  if (specrt_status status = checkLibraryFacts(
          manifest,
          static_cast<const char *>(dlsym(handle, SPECRT_FACTS_SYMBOL)),
          libraryPath, error))
    return status;
  auto *base = static_cast<const void **>(symbol(SPECRT_WEIGHTS_BASE_SYMBOL));
  generate = reinterpret_cast<specrt_entry_fn>(symbol(manifest.generateEntry));
  targetOnly =
      reinterpret_cast<specrt_entry_fn>(symbol(manifest.targetOnlyEntry));
  if (!base || !generate || !targetOnly)
    return SPECRT_ERROR_FORMAT;
  if (manifest.maxBatch > 0 && manifest.batchProposer == "heads") {
    void *prefill = symbol(manifest.prefillEntry),
         *round = symbol(manifest.roundEntry),
         *specRound = symbol(manifest.specRoundEntry);
    if (!prefill || !round || !specRound)
      return SPECRT_ERROR_FORMAT;
    if (manifest.verify == "greedy") {
      headsPrefillEntry = reinterpret_cast<specrt_heads_prefill_fn>(prefill);
      headsRoundEntry = reinterpret_cast<specrt_heads_round_fn>(round);
      headsSpecRoundEntry =
          reinterpret_cast<specrt_heads_spec_round_fn>(specRound);
    } else {
      headsPrefillSampledEntry =
          reinterpret_cast<specrt_heads_prefill_sampled_fn>(prefill);
      headsRoundSampledEntry =
          reinterpret_cast<specrt_heads_round_sampled_fn>(round);
      headsSpecRoundSampledEntry =
          reinterpret_cast<specrt_heads_spec_round_sampled_fn>(specRound);
    }
    cacheShape = manifest.batchCacheShape;
    targetVocab = manifest.vocabSize;
  } else if (manifest.maxBatch > 0 && manifest.mtpModule()) {
    hiddenPrefillEntry = reinterpret_cast<specrt_hidden_prefill_fn>(
        symbol(manifest.prefillEntry));
    hiddenRoundEntry =
        reinterpret_cast<specrt_hidden_round_fn>(symbol(manifest.roundEntry));
    void *modulePrefill = symbol(manifest.draftPrefillEntry);
    void *specRound = symbol(manifest.specRoundEntry);
    if (manifest.verify == "greedy") {
      modulePrefillEntry =
          reinterpret_cast<specrt_module_prefill_fn>(modulePrefill);
      moduleSpecRoundEntry =
          reinterpret_cast<specrt_module_spec_round_fn>(specRound);
    } else {
      modulePrefillSampledEntry =
          reinterpret_cast<specrt_module_prefill_sampled_fn>(modulePrefill);
      moduleSpecRoundSampledEntry =
          reinterpret_cast<specrt_module_spec_round_sampled_fn>(specRound);
    }
    if (!hiddenPrefillEntry || !hiddenRoundEntry || !modulePrefill ||
        !specRound)
      return SPECRT_ERROR_FORMAT;
    cacheShape = manifest.batchCacheShape;
    draftCacheShape = manifest.batchDraftCacheShape;
    targetVocab = manifest.vocabSize;
  } else if (manifest.maxBatch > 0) {
    prefillEntry =
        reinterpret_cast<specrt_prefill_fn>(symbol(manifest.prefillEntry));
    roundEntry = reinterpret_cast<specrt_round_fn>(symbol(manifest.roundEntry));
    if (!prefillEntry || !roundEntry)
      return SPECRT_ERROR_FORMAT;
    cacheShape = manifest.batchCacheShape;
  }
  proposals = manifest.proposals;
  if (manifest.batchProposer == "draft") {
    draftPrefillEntry = reinterpret_cast<specrt_prefill_fn>(
        symbol(manifest.draftPrefillEntry));
    specRoundEntry = reinterpret_cast<specrt_spec_round_fn>(
        symbol(manifest.specRoundEntry));
    if (!draftPrefillEntry || !specRoundEntry)
      return SPECRT_ERROR_FORMAT;
    draftCacheShape = manifest.batchDraftCacheShape;
  } else if (manifest.crossTokenizer()) {
    draftPrefillEntry = reinterpret_cast<specrt_prefill_fn>(
        symbol(manifest.draftPrefillEntry));
    draftRoundEntry = reinterpret_cast<specrt_draft_round_fn>(
        symbol(manifest.draftRoundEntry));
    draftVocab = manifest.draftVocabSize;
    targetVocab = manifest.vocabSize;
    void *verify = symbol(manifest.verifyEntry);
    if (manifest.verify == "greedy")
      verifyEntry = reinterpret_cast<specrt_verify_fn>(verify);
    else
      verifySampledEntry = reinterpret_cast<specrt_verify_sampled_fn>(verify);
    if (!draftPrefillEntry || !draftRoundEntry || !verify)
      return SPECRT_ERROR_FORMAT;
    draftCacheShape = manifest.batchDraftCacheShape;
  }
  // Found through the library's dependencies, if it has parallel loops.
  setOpenMPThreads = reinterpret_cast<void (*)(int)>(
      dlsym(handle, "omp_set_num_threads"));
  // Threads that spin at barriers (libomp's default, for 200 ms) halve the
  // rate when another job holds the cores: a barrier waits for a thread the
  // kernel descheduled while its peers burn their time slices (docs,
  // "Threads under load"). Sleeping at once cost nothing measurable idle
  // with the default parallel-min-work (only large loops go to threads);
  // with tiny ones forced onto threads it costs 4-5x (same section).
  setOpenMPBlocktime = reinterpret_cast<void (*)(int)>(
      dlsym(handle, "kmp_set_blocktime"));
  passiveWait = !std::getenv("OMP_WAIT_POLICY") && !std::getenv("KMP_BLOCKTIME");
  *base = weights;
  return SPECRT_OK;
}

specrt_status HostLibrary::run(bool speculative, int64_t *prompt,
                               size_t promptLength, int64_t maxNewTokens,
                               int64_t seed, int64_t *stopTokens,
                               size_t numStopTokens, DecodeOutput &output,
                               std::string &error) {
  specrt_memref_i64 input{prompt, prompt, 0,
                          static_cast<int64_t>(promptLength), 1};
  specrt_memref_i64 stop{stopTokens, stopTokens, 0,
                         static_cast<int64_t>(numStopTokens), 1};
  specrt_entry_result result{};
  beforeRun();
  (speculative ? generate : targetOnly)(&result, &input, maxNewTokens, seed,
                                        &stop);
  const char *failedCheck = takeCheckFailure();
  const specrt_memref_i64 &tokens = result.tokens;
  const specrt_memref_i64 &histogram = result.accepted_histogram;
  bool wellFormed = tokens.aligned && histogram.aligned &&
                    result.length >= 0 && result.length <= tokens.size;
  if (wellFormed) {
    output.sequence.resize(result.length);
    for (int64_t i = 0; i < result.length; ++i)
      output.sequence[i] = tokens.aligned[tokens.offset + i * tokens.stride];
    output.acceptedHistogram.resize(histogram.size);
    for (int64_t i = 0; i < histogram.size; ++i)
      output.acceptedHistogram[i] =
          histogram.aligned[histogram.offset + i * histogram.stride];
    output.targetForwards = result.target_forwards;
    output.proposeNanoseconds = result.propose_ns;
    output.verifyNanoseconds = result.verify_ns;
  }
  _mlir_memref_to_llvm_free(tokens.allocated);
  _mlir_memref_to_llvm_free(histogram.allocated);
  if (failedCheck) {
    error = std::string("a run-time check of the model failed: ") +
            failedCheck;
    return SPECRT_ERROR_INVALID_ARGUMENT;
  }
  if (!wellFormed) {
    error = "the decode loop returned a malformed sequence (length " +
            std::to_string(result.length) + ")";
    return SPECRT_ERROR_FORMAT;
  }
  return SPECRT_OK;
}

/// The thread settings of this thread's run, and no failed check yet.
void HostLibrary::beforeRun() {
  if (threads > 0 && setOpenMPThreads)
    setOpenMPThreads(threads);
  if (passiveWait && setOpenMPBlocktime)
    setOpenMPBlocktime(0);
  takeCheckFailure();
}

specrt_memref_f32_6d
HostLibrary::cacheDescriptor(float *cache, const std::vector<int64_t> &shape) {
  specrt_memref_f32_6d descriptor{cache, cache, 0, {}, {}};
  int64_t stride = 1;
  for (int d = 5; d >= 0; --d) {
    descriptor.sizes[d] = shape[d];
    descriptor.strides[d] = stride;
    stride *= shape[d];
  }
  return descriptor;
}

/// A failed run-time check of the code becomes the call's error.
static specrt_status checkedRun(std::string &error) {
  if (const char *failedCheck = takeCheckFailure()) {
    error = std::string("a run-time check of the model failed: ") +
            failedCheck;
    return SPECRT_ERROR_INVALID_ARGUMENT;
  }
  return SPECRT_OK;
}

/// `values` (read only by the compiled code) as a memref of `count`.
static specrt_memref_i64 inputMemref(const int64_t *values, int64_t count) {
  auto *data = const_cast<int64_t *>(values);
  return {data, data, 0, count, 1};
}

/// A round's per-sequence inputs as the memrefs its entry takes (previous
/// only for a draft's speculative round).
struct RoundInputs {
  specrt_memref_i64 lengths, previous, tokens, keys;
  explicit RoundInputs(const SlotRun &run) {
    auto n = static_cast<int64_t>(run.count);
    lengths = inputMemref(run.lengths, n);
    previous = inputMemref(run.previous, n);
    tokens = inputMemref(run.tokens, n);
    keys = inputMemref(run.keys, n);
  }
};

static constexpr const char *kNoBatchedDraft =
    "the artifact has no batched draft (specc --draft --max-batch)";

/// Copies a rows x columns result into `out` (row-major) and frees it;
/// false when its shape is not that.
template <typename Table, typename Element>
static bool takeTable(const Table &table, int64_t rows, int64_t columns,
                      Element *out) {
  bool fits = table.aligned && table.sizes[0] == rows &&
              table.sizes[1] == columns;
  for (int64_t i = 0; fits && i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j)
      out[i * columns + j] = table.aligned[table.offset + i * table.strides[0] +
                                           j * table.strides[1]];
  _mlir_memref_to_llvm_free(table.allocated);
  return fits;
}

/// Copies `count` values of a rank-1 result into `out` and frees it; false
/// when it does not hold that many.
static bool takeVector(const specrt_memref_i64 &vector, int64_t count,
                       int64_t *out) {
  bool fits = vector.aligned && vector.size == count;
  for (int64_t i = 0; fits && i < count; ++i)
    out[i] = vector.aligned[vector.offset + i * vector.stride];
  _mlir_memref_to_llvm_free(vector.allocated);
  return fits;
}

/// Copies a result of `rows` rows of any positive width into `out`
/// (replaced) and frees it; false when it has not that many rows.
static bool takeRows(const specrt_memref_f32_2d &table, int64_t rows,
                     std::vector<float> *out) {
  int64_t columns = table.aligned ? table.sizes[1] : 0;
  if (table.sizes[0] != rows || columns <= 0 || columns > (1 << 24)) {
    _mlir_memref_to_llvm_free(table.allocated);
    return false;
  }
  out->resize(static_cast<size_t>(rows * columns));
  return takeTable(table, rows, columns, out->data());
}

/// Copies a sampled round's distributions (`n` sequences x `k` proposals x
/// `vocab`) into `out` and frees them; false when they are not that shape.
static bool takeDistributions(const specrt_memref_f32_3d &table, int64_t n,
                              int64_t k, int64_t vocab, float *out) {
  bool fits = table.aligned && table.sizes[0] == n && table.sizes[1] == k &&
              table.sizes[2] == vocab;
  for (int64_t i = 0; fits && i < n; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < vocab; ++j)
        out[(i * k + p) * vocab + j] =
            table.aligned[table.offset + i * table.strides[0] +
                          p * table.strides[1] + j * table.strides[2]];
  _mlir_memref_to_llvm_free(table.allocated);
  return fits;
}

/// Copies what a speculative round (or a verification) of `n` sequences
/// committed into `out` and frees it: the counts, and the picks, proposals
/// + 1 per sequence (a wider table is refused, not copied past them).
/// `status` is the run's; `what` names the entry in the error.
static specrt_status takeVerified(specrt_spec_round_result &result, int64_t n,
                                  int64_t proposals, const RoundOutput &out,
                                  specrt_status status, const char *what,
                                  std::string &error) {
  bool fits = takeVector(result.counts, n, out.counts);
  fits &= takeTable(result.picks, n, proposals + 1, out.picks);
  if (!fits && status == SPECRT_OK) {
    error = std::string(what) + " returned no picks and counts for " +
            std::to_string(n) + " sequences";
    status = SPECRT_ERROR_FORMAT;
  }
  return status;
}

specrt_status HostLibrary::prefill(SlotCache which, float *cache,
                                   int64_t slot, int64_t start,
                                   const int64_t *tokens, size_t length,
                                   int64_t key, int64_t &token,
                                   int64_t *proposed,
                                   std::vector<float> *hidden,
                                   float *distributions, std::string &error) {
  bool draft = which == SlotCache::Draft;
  specrt_prefill_fn entry = draft ? draftPrefillEntry : prefillEntry;
  if (!entry && !(headsPrefillEntry && !draft) &&
      !(headsPrefillSampledEntry && !draft) &&
      !(hiddenPrefillEntry && !draft)) {
    error = draft ? kNoBatchedDraft
                  : "the artifact has no batched rounds (specc --max-batch)";
    return SPECRT_ERROR_UNSUPPORTED;
  }
  specrt_memref_f32_6d descriptor =
      cacheDescriptor(cache, draft ? draftCacheShape : cacheShape);
  specrt_memref_i64 input =
      inputMemref(tokens, static_cast<int64_t>(length));
  beforeRun();
  if (entry) {
    token = entry(&descriptor, slot, start, &input, key);
    return checkedRun(error);
  }
  if (hiddenPrefillEntry) {
    specrt_hidden_prefill_result result{};
    hiddenPrefillEntry(&result, &descriptor, slot, start, &input, key);
    token = result.token;
    specrt_status status = checkedRun(error);
    if (!takeRows(result.hidden, static_cast<int64_t>(length), hidden) &&
        status == SPECRT_OK) {
      error = "the prefill returned no hidden states for its " +
              std::to_string(length) + " rows";
      status = SPECRT_ERROR_FORMAT;
    }
    return status;
  }
  specrt_heads_prefill_result result{};
  bool fits = true;
  if (headsPrefillSampledEntry) {
    specrt_heads_prefill_sampled_result sampled{};
    headsPrefillSampledEntry(&sampled, &descriptor, slot, start, &input, key);
    result = {sampled.token, sampled.proposals};
    fits = takeTable(sampled.distributions, proposals, targetVocab,
                     distributions);
  } else {
    headsPrefillEntry(&result, &descriptor, slot, start, &input, key);
  }
  token = result.token;
  specrt_status status = checkedRun(error);
  fits &= takeVector(result.proposals, proposals, proposed);
  if (!fits && status == SPECRT_OK) {
    error = "the prefill returned " + std::to_string(result.proposals.size) +
            " proposals for " + std::to_string(proposals) + " heads";
    status = SPECRT_ERROR_FORMAT;
  }
  return status;
}

specrt_status HostLibrary::modulePrefill(float *moduleCache, int64_t slot,
                                         int64_t start, const float *hidden,
                                         int64_t hiddenSize,
                                         const int64_t *tokens, size_t length,
                                         int64_t key, int64_t &token,
                                         float *distribution,
                                         std::string &error) {
  if (!modulePrefillEntry && !modulePrefillSampledEntry) {
    error = "the artifact has no batched MTP module (specc --mtp-head "
            "--max-batch)";
    return SPECRT_ERROR_UNSUPPORTED;
  }
  specrt_memref_f32_6d descriptor = cacheDescriptor(moduleCache, draftCacheShape);
  auto rows = static_cast<int64_t>(length);
  auto *states = const_cast<float *>(hidden);
  specrt_memref_f32_2d hiddenIn{states, states, 0, {rows, hiddenSize},
                                {hiddenSize, 1}};
  specrt_memref_i64 input = inputMemref(tokens, rows);
  beforeRun();
  if (modulePrefillEntry) {
    token = modulePrefillEntry(&descriptor, slot, start, &hiddenIn, &input, key);
    return checkedRun(error);
  }
  specrt_module_prefill_sampled_result result{};
  modulePrefillSampledEntry(&result, &descriptor, slot, start, &hiddenIn,
                            &input, key);
  token = result.token;
  specrt_status status = checkedRun(error);
  const specrt_memref_f32_1d &q = result.distribution;
  bool fits = q.aligned && q.sizes[0] == targetVocab;
  for (int64_t j = 0; fits && j < targetVocab; ++j)
    distribution[j] = q.aligned[q.offset + j * q.strides[0]];
  _mlir_memref_to_llvm_free(q.allocated);
  if (!fits && status == SPECRT_OK) {
    error = "the MTP module's prefill returned no distribution over " +
            std::to_string(targetVocab) + " tokens";
    status = SPECRT_ERROR_FORMAT;
  }
  return status;
}

specrt_status HostLibrary::round(float *cache, const SlotRun &run,
                                 const RoundOutput &out, std::string &error) {
  if (headsRoundEntry || headsRoundSampledEntry)
    return headsRound(cache, run, out, error);
  if (hiddenRoundEntry) {
    specrt_memref_f32_6d descriptor = cacheDescriptor(cache, cacheShape);
    auto n = static_cast<int64_t>(run.count);
    RoundInputs in(run);
    specrt_hidden_round_result result{};
    beforeRun();
    hiddenRoundEntry(&result, &descriptor, run.first, &in.lengths, &in.tokens,
                     &in.keys);
    specrt_status status = checkedRun(error);
    bool fits = takeVector(result.next, n, out.next);
    fits &= takeRows(result.hidden, n, out.hidden);
    if (!fits && status == SPECRT_OK) {
      error = "the round returned no tokens and hidden states for " +
              std::to_string(n) + " sequences";
      status = SPECRT_ERROR_FORMAT;
    }
    return status;
  }
  if (!roundEntry) {
    error = "the artifact has no batched rounds (specc --max-batch)";
    return SPECRT_ERROR_UNSUPPORTED;
  }
  specrt_memref_f32_6d descriptor = cacheDescriptor(cache, cacheShape);
  auto n = static_cast<int64_t>(run.count);
  RoundInputs in(run);
  specrt_memref_i64 result{};
  beforeRun();
  roundEntry(&result, &descriptor, run.first, &in.lengths, &in.tokens,
             &in.keys);
  specrt_status status = checkedRun(error);
  int64_t size = result.size;
  if (!takeVector(result, n, out.next) && status == SPECRT_OK) {
    error = "the round returned " + std::to_string(size) + " tokens for " +
            std::to_string(n) + " sequences";
    status = SPECRT_ERROR_FORMAT;
  }
  return status;
}

specrt_status HostLibrary::draftRound(float *draftCache, const SlotRun &run,
                                      const RoundOutput &out,
                                      std::string &error) {
  if (!draftRoundEntry) {
    error = "the artifact has no cross-tokenizer draft (specc --cross-tokenizer)";
    return SPECRT_ERROR_UNSUPPORTED;
  }
  specrt_memref_f32_6d descriptor = cacheDescriptor(draftCache, draftCacheShape);
  auto n = static_cast<int64_t>(run.count);
  RoundInputs in(run);
  auto *bias = const_cast<float *>(run.bias);
  specrt_memref_f32_2d biasIn{bias, bias, 0, {n, draftVocab}, {draftVocab, 1}};
  specrt_memref_f32_2d logits{};
  beforeRun();
  draftRoundEntry(&logits, &descriptor, run.first, &in.lengths, &in.tokens,
                  &biasIn);
  specrt_status status = checkedRun(error);
  if (!takeTable(logits, n, draftVocab, out.logits) && status == SPECRT_OK) {
    error = "the draft's round returned no logits for " + std::to_string(n) +
            " sequences";
    status = SPECRT_ERROR_FORMAT;
  }
  return status;
}

specrt_status HostLibrary::verify(float *cache, const SlotRun &run,
                                  const RoundOutput &out, std::string &error) {
  if (!verifyEntry && !verifySampledEntry) {
    error = "the artifact has no cross-tokenizer draft (specc --cross-tokenizer)";
    return SPECRT_ERROR_UNSUPPORTED;
  }
  specrt_memref_f32_6d descriptor = cacheDescriptor(cache, cacheShape);
  auto n = static_cast<int64_t>(run.count);
  RoundInputs in(run);
  auto *proposed = const_cast<int64_t *>(run.proposals);
  specrt_memref_i64_2d proposedIn{proposed, proposed, 0, {n, proposals},
                                  {proposals, 1}};
  specrt_spec_round_result result{};
  beforeRun();
  if (verifySampledEntry) {
    auto *q = const_cast<float *>(run.distributions);
    specrt_memref_f32_3d distributions{
        q, q, 0, {n, proposals, targetVocab},
        {proposals * targetVocab, targetVocab, 1}};
    verifySampledEntry(&result, &descriptor, run.first, &in.lengths,
                       &in.tokens, &proposedIn, &distributions, &in.keys);
  } else {
    verifyEntry(&result, &descriptor, run.first, &in.lengths, &in.tokens,
                &proposedIn);
  }
  return takeVerified(result, n, proposals, out, checkedRun(error),
                      "the verification", error);
}

specrt_status HostLibrary::headsRound(float *cache, const SlotRun &run,
                                      const RoundOutput &out,
                                      std::string &error) {
  specrt_memref_f32_6d descriptor = cacheDescriptor(cache, cacheShape);
  auto n = static_cast<int64_t>(run.count);
  RoundInputs in(run);
  specrt_heads_round_result result{};
  bool fits = true;
  beforeRun();
  if (headsRoundSampledEntry) {
    specrt_heads_round_sampled_result sampled{};
    headsRoundSampledEntry(&sampled, &descriptor, run.first, &in.lengths,
                           &in.tokens, &in.keys);
    result = {sampled.next, sampled.proposals};
    fits = takeDistributions(sampled.distributions, n, proposals, targetVocab,
                             out.distributions);
  } else {
    headsRoundEntry(&result, &descriptor, run.first, &in.lengths, &in.tokens,
                    &in.keys);
  }
  specrt_status status = checkedRun(error);
  fits &= takeVector(result.next, n, out.next);
  fits &= takeTable(result.proposals, n, proposals, out.proposals);
  if (!fits && status == SPECRT_OK) {
    error = "the round returned no tokens and proposals for " +
            std::to_string(n) + " sequences";
    status = SPECRT_ERROR_FORMAT;
  }
  return status;
}

specrt_status HostLibrary::specRound(float *cache, float *draftCache,
                                     const SlotRun &run,
                                     const RoundOutput &out,
                                     std::string &error) {
  if (headsSpecRoundEntry || headsSpecRoundSampledEntry)
    return headsSpecRound(cache, run, out, error);
  if (moduleSpecRoundEntry || moduleSpecRoundSampledEntry)
    return moduleSpecRound(cache, draftCache, run, out, error);
  if (!specRoundEntry) {
    error = kNoBatchedDraft;
    return SPECRT_ERROR_UNSUPPORTED;
  }
  specrt_memref_f32_6d target = cacheDescriptor(cache, cacheShape);
  specrt_memref_f32_6d draft = cacheDescriptor(draftCache, draftCacheShape);
  auto n = static_cast<int64_t>(run.count);
  RoundInputs in(run);
  specrt_spec_round_result result{};
  beforeRun();
  specRoundEntry(&result, &target, &draft, run.first, &in.lengths,
                 &in.previous, &in.tokens, &in.keys);
  return takeVerified(result, n, proposals, out, checkedRun(error),
                      "the speculative round", error);
}

specrt_status HostLibrary::headsSpecRound(float *cache, const SlotRun &run,
                                          const RoundOutput &out,
                                          std::string &error) {
  specrt_memref_f32_6d descriptor = cacheDescriptor(cache, cacheShape);
  auto n = static_cast<int64_t>(run.count);
  RoundInputs in(run);
  auto *proposed = const_cast<int64_t *>(run.proposals);
  specrt_memref_i64_2d proposedIn{proposed, proposed, 0, {n, proposals},
                                  {proposals, 1}};
  specrt_heads_spec_round_result result{};
  bool fits = true;
  beforeRun();
  if (headsSpecRoundSampledEntry) {
    auto *q = const_cast<float *>(run.distributions);
    specrt_memref_f32_3d distributions{
        q, q, 0, {n, proposals, targetVocab},
        {proposals * targetVocab, targetVocab, 1}};
    specrt_spec_round_sampled_result sampled{};
    headsSpecRoundSampledEntry(&sampled, &descriptor, run.first, &in.lengths,
                               &in.tokens, &proposedIn, &distributions,
                               &in.keys);
    result = {sampled.picks, sampled.counts, sampled.proposals};
    fits = takeDistributions(sampled.distributions, n, proposals, targetVocab,
                             out.distributions);
  } else {
    headsSpecRoundEntry(&result, &descriptor, run.first, &in.lengths,
                        &in.tokens, &proposedIn, &in.keys);
  }
  specrt_status status = checkedRun(error);
  fits &= takeVector(result.counts, n, out.counts);
  fits &= takeTable(result.picks, n, proposals + 1, out.picks);
  fits &= takeTable(result.proposals, n, proposals, out.proposals);
  if (!fits && status == SPECRT_OK) {
    error = "the speculative round returned no picks, counts and proposals "
            "for " + std::to_string(n) + " sequences";
    status = SPECRT_ERROR_FORMAT;
  }
  return status;
}

specrt_status HostLibrary::moduleSpecRound(float *cache, float *moduleCache,
                                           const SlotRun &run,
                                           const RoundOutput &out,
                                           std::string &error) {
  specrt_memref_f32_6d target = cacheDescriptor(cache, cacheShape);
  specrt_memref_f32_6d module = cacheDescriptor(moduleCache, draftCacheShape);
  auto n = static_cast<int64_t>(run.count);
  RoundInputs in(run);
  auto *proposed = const_cast<int64_t *>(run.proposals);
  specrt_memref_i64_2d proposedIn{proposed, proposed, 0, {n, 1}, {1, 1}};
  specrt_heads_spec_round_result result{};
  bool fits = true;
  beforeRun();
  if (moduleSpecRoundEntry) {
    moduleSpecRoundEntry(&result, &target, &module, run.first, &in.lengths,
                         &in.tokens, &proposedIn, &in.keys);
  } else {
    auto *q = const_cast<float *>(run.distributions);
    specrt_memref_f32_3d distributions{
        q, q, 0, {n, 1, targetVocab}, {targetVocab, targetVocab, 1}};
    specrt_spec_round_sampled_result sampled{};
    moduleSpecRoundSampledEntry(&sampled, &target, &module, run.first,
                                &in.lengths, &in.tokens, &proposedIn,
                                &distributions, &in.keys);
    result = {sampled.picks, sampled.counts, sampled.proposals};
    fits = takeDistributions(sampled.distributions, n, 1, targetVocab,
                             out.distributions);
  }
  specrt_status status = checkedRun(error);
  fits &= takeVector(result.counts, n, out.counts);
  fits &= takeTable(result.picks, n, 2, out.picks);
  fits &= takeTable(result.proposals, n, 1, out.proposals);
  if (!fits && status == SPECRT_OK) {
    error = "the speculative round returned no picks, counts and proposals "
            "for " + std::to_string(n) + " sequences";
    status = SPECRT_ERROR_FORMAT;
  }
  return status;
}

specrt_status Device::prefill(SlotCache, float *, int64_t, int64_t,
                              const int64_t *, size_t, int64_t, int64_t &,
                              int64_t *, std::vector<float> *, float *,
                              std::string &error) {
  error = "batched rounds run on the CPU so far";
  return SPECRT_ERROR_UNSUPPORTED;
}

specrt_status Device::modulePrefill(float *, int64_t, int64_t, const float *,
                                    int64_t, const int64_t *, size_t, int64_t,
                                    int64_t &, float *, std::string &error) {
  error = "batched rounds run on the CPU so far";
  return SPECRT_ERROR_UNSUPPORTED;
}

specrt_status Device::specRound(float *, float *, const SlotRun &,
                                const RoundOutput &, std::string &error) {
  error = "batched rounds run on the CPU so far";
  return SPECRT_ERROR_UNSUPPORTED;
}

specrt_status Device::round(float *, const SlotRun &, const RoundOutput &,
                            std::string &error) {
  error = "batched rounds run on the CPU so far";
  return SPECRT_ERROR_UNSUPPORTED;
}

specrt_status Device::draftRound(float *, const SlotRun &, const RoundOutput &,
                                 std::string &error) {
  error = "batched rounds run on the CPU so far";
  return SPECRT_ERROR_UNSUPPORTED;
}

specrt_status Device::verify(float *, const SlotRun &, const RoundOutput &,
                             std::string &error) {
  error = "batched rounds run on the CPU so far";
  return SPECRT_ERROR_UNSUPPORTED;
}

specrt_status CPUDevice::open(const std::string &directory,
                              const Manifest &manifest, bool verifyChecksums,
                              std::string &error) {
  if (specrt_status status = checkHostCPU(manifest, error))
    return status;
  if (specrt_status status =
          mapWeights(directory, manifest, verifyChecksums, weights, error))
    return status;
  return library.open(directory, manifest, verifyChecksums, weights.data(),
                      error);
}

specrt_status specrt::openCPUDevice(const std::string &directory,
                                    const Manifest &manifest,
                                    bool verifyChecksums,
                                    std::unique_ptr<Device> &device,
                                    std::string &error) {
  auto cpu = std::make_unique<CPUDevice>();
  if (specrt_status status =
          cpu->open(directory, manifest, verifyChecksums, error))
    return status;
  device = std::move(cpu);
  return SPECRT_OK;
}
