//===- Device.h - where an artifact's decode loops run -----------*- C++ -*-===//
//
// A device loads an artifact's code and weights and runs its entry points.
// Both devices dlopen the host shared object (HostLibrary); the CUDA device
// first sets up the driver, whose mgpu* functions (CUDADevice.cpp) the host
// code calls to load its PTX and launch its kernels.
//
//===----------------------------------------------------------------------===//

#ifndef SPECRT_DEVICE_H
#define SPECRT_DEVICE_H

#include "Manifest.h"

#include "specrt/artifact_format.h"

#include <memory>
#include <string>
#include <vector>

namespace specrt {

/// What one run of a decode loop produced.
struct DecodeOutput {
  std::vector<int64_t> sequence; // the prompt, then generated tokens
  int64_t targetForwards = 0;
  /// Verify rounds by the number of proposals they accepted.
  std::vector<int64_t> acceptedHistogram;
  /// Time the rounds spent proposing and verifying, and of proposing,
  /// translating a cross-tokenizer draft's tokens.
  int64_t proposeNanoseconds = 0, verifyNanoseconds = 0,
          translateNanoseconds = 0;
};

/// What is wrong with what a decode loop returned for `prompt`, or empty:
/// the runtime does not trust compiled code with the statistics it derives.
std::string checkDecodeOutput(const DecodeOutput &output,
                              const int64_t *prompt, size_t promptLength,
                              int64_t vocabSize, int64_t contextCapacity);

/// Which of a batch's caches of slots an entry writes.
enum class SlotCache { Target, Draft };

/// A run of consecutive slots a batched round advances: slots [first,
/// first + count), sequence i at lengths[i] with its last token tokens[i]
/// (and, for a speculative round, the one before it, previous[i], with a
/// draft, or its proposals at proposals[i * proposals ..], with heads) and
/// the key of its draws, keys[i] (artifact_format.h).
struct SlotRun {
  int64_t first = 0;
  size_t count = 0;
  const int64_t *lengths = nullptr, *previous = nullptr, *tokens = nullptr,
                *keys = nullptr, *proposals = nullptr;
  /// A cross-tokenizer draft's round: each sequence's bias on its logits
  /// (bias[i * draft vocabulary ..]).
  const float *bias = nullptr;
  /// A sampled cross-tokenizer draft's verification: the distributions each
  /// sequence's proposals were drawn from, in the target's vocabulary
  /// (distributions[(i * proposals + k) * vocabulary ..]).
  const float *distributions = nullptr;
};

/// Where a round's results go: the next tokens of a plain round, the picks
/// (picks[i * (proposals + 1)..]) and counts of a speculative one, and with
/// heads each sequence's next proposals (proposals[i * proposals..]).
struct RoundOutput {
  int64_t *next = nullptr, *picks = nullptr, *counts = nullptr,
          *proposals = nullptr;
  /// A cross-tokenizer draft's round: each sequence's biased logits
  /// (logits[i * draft vocabulary ..]).
  float *logits = nullptr;
  /// With an MTP module: the target's hidden states at a plain round's rows
  /// (sequences x hidden size, replaced). Sampled, with heads or an MTP
  /// module: the next proposals' distributions
  /// (distributions[(i * proposals + k) * vocabulary ..]).
  std::vector<float> *hidden = nullptr;
  float *distributions = nullptr;
};

class Device {
public:
  virtual ~Device() = default;

  /// Runs the speculative decode loop, or the target-only loop.
  virtual specrt_status decode(bool speculative, const int64_t *prompt,
                               size_t promptLength, int64_t maxNewTokens,
                               int64_t seed,
                               const std::vector<int64_t> &stopTokens,
                               DecodeOutput &output, std::string &error) = 0;

  /// Threads for the host code's parallel loops (0: OpenMP's default).
  virtual void setThreads(int threads) = 0;

  /// Whether decode() may run on several threads at once (the compiled
  /// loops are reentrant; a device with one stream and per-model scratch
  /// state serializes them).
  virtual bool runsConcurrently() const { return false; }

  /// Batched rounds (artifacts with decoder.max_batch) over `cache`, a
  /// cache of slots of the manifest's batch_cache_shape in host memory (or
  /// the draft's, batch_draft_cache_shape): `tokens` into `slot` at
  /// positions start.., the token after them (drawn with `key`) into
  /// `token` (and with heads their proposals after it into `proposals`,
  /// sampled with their distributions into `distributions`, proposals x
  /// vocab_size; with an MTP module, the target's hidden states at the
  /// rows into `hidden`, rows x hidden size, replaced); one round over a run of
  /// slots; one speculative round (specrt_spec_round_fn,
  /// specrt_heads_spec_round_fn or an MTP module's) over them.
  virtual specrt_status prefill(SlotCache which, float *cache, int64_t slot,
                                int64_t start, const int64_t *tokens,
                                size_t length, int64_t key, int64_t &token,
                                int64_t *proposals, std::vector<float> *hidden,
                                float *distributions, std::string &error);
  virtual specrt_status specRound(float *cache, float *draftCache,
                                  const SlotRun &run, const RoundOutput &out,
                                  std::string &error);
  virtual specrt_status round(float *cache, const SlotRun &run,
                              const RoundOutput &out, std::string &error);
  /// A cross-tokenizer draft's rounds: one round of the draft over its
  /// cache of slots, its biased logits into out.logits, and the target's
  /// verification of the run's proposals (run.proposals, decoder.proposals
  /// per sequence) into out.picks and out.counts.
  virtual specrt_status draftRound(float *draftCache, const SlotRun &run,
                                   const RoundOutput &out, std::string &error);
  virtual specrt_status verify(float *cache, const SlotRun &run,
                               const RoundOutput &out, std::string &error);
  /// An MTP module's catch-up (specrt_module_prefill_fn): `length` rows of
  /// the target's hidden states (hidden[i * hiddenSize ..]), each with the
  /// token after it, into the module's cache of `slot` at positions
  /// start..; its proposal after them into `token` (sampled: drawn with
  /// `key`, and its distribution into `distribution`, vocab_size floats).
  virtual specrt_status modulePrefill(float *moduleCache, int64_t slot,
                                      int64_t start, const float *hidden,
                                      int64_t hiddenSize,
                                      const int64_t *tokens, size_t length,
                                      int64_t key, int64_t &token,
                                      float *distribution, std::string &error);
};

/// The message of the first run-time check (specrt_check) that failed on
/// this thread since the last call, or null; clears it.
const char *takeCheckFailure();

/// Where the committed tokens of the current run on this thread go
/// (specrt_on_token, which compiled code calls for each, in order): to the
/// caller's callback, up to max_new_tokens and the first stop token; and
/// the caller's answer to whether the run should stop there (cancelled).
struct TokenStream {
  void (*callback)(int64_t token, void *user) = nullptr;
  int (*shouldStop)(void *user) = nullptr;
  void *user = nullptr;
  int64_t maxNew = 0, eos = -1;
  const std::vector<int64_t> *stops = nullptr;
  int64_t forwarded = 0;
  bool stopped = false;
  bool cancelled = false;
};

/// Makes `stream` (or none) the current run's on this thread.
void setTokenStream(TokenStream *stream);

/// Checks that this machine's CPU runs the artifact's host code (its
/// architecture and the CPU features the manifest lists).
specrt_status checkHostCPU(const Manifest &manifest, std::string &error);

class MappedFile;

/// Maps the artifact's weights file and checks its size and checksum.
specrt_status mapWeights(const std::string &directory, const Manifest &manifest,
                         bool verifyChecksums, MappedFile &weights,
                         std::string &error);

/// The artifact's host shared object, loaded, with its weights base set and
/// its decode loops found.
class HostLibrary {
public:
  HostLibrary() = default;
  HostLibrary(const HostLibrary &) = delete;
  HostLibrary &operator=(const HostLibrary &) = delete;
  ~HostLibrary() { close(); }
  void close();

  /// Checks and loads the library; `weights` is where the weights are.
  specrt_status open(const std::string &directory, const Manifest &manifest,
                     bool verifyChecksums, const void *weights,
                     std::string &error);

  /// Runs a decode loop on the prompt and stop tokens (which its code
  /// reads where they are) and reads its result.
  specrt_status run(bool speculative, int64_t *prompt, size_t promptLength,
                    int64_t maxNewTokens, int64_t seed, int64_t *stopTokens,
                    size_t numStopTokens, DecodeOutput &output,
                    std::string &error);

  /// Threads for the code's OpenMP loops, set before every run (the count
  /// is per calling thread); 0 leaves OpenMP's default. Code without
  /// parallel loops ignores it.
  void setThreads(int count) { threads = count; }

  /// The batched rounds' entries (see Device::prefill, Device::round,
  /// Device::specRound).
  specrt_status prefill(SlotCache which, float *cache, int64_t slot,
                        int64_t start, const int64_t *tokens, size_t length,
                        int64_t key, int64_t &token, int64_t *proposed,
                        std::vector<float> *hidden, float *distributions,
                        std::string &error);
  specrt_status modulePrefill(float *moduleCache, int64_t slot, int64_t start,
                              const float *hidden, int64_t hiddenSize,
                              const int64_t *tokens, size_t length,
                              int64_t key, int64_t &token, float *distribution,
                              std::string &error);
  specrt_status round(float *cache, const SlotRun &run, const RoundOutput &out,
                      std::string &error);
  specrt_status draftRound(float *draftCache, const SlotRun &run,
                           const RoundOutput &out, std::string &error);
  specrt_status verify(float *cache, const SlotRun &run, const RoundOutput &out,
                       std::string &error);
  specrt_status specRound(float *cache, float *draftCache, const SlotRun &run,
                          const RoundOutput &out, std::string &error);

private:
  void *handle = nullptr;
  /// libomp's omp_set_num_threads and kmp_set_blocktime, when the code
  /// links libomp.
  void (*setOpenMPThreads)(int) = nullptr;
  void (*setOpenMPBlocktime)(int) = nullptr;
  int threads = 0;
  /// Whether threads sleep at once at a barrier (blocktime 0) instead of
  /// spinning: unless OMP_WAIT_POLICY or KMP_BLOCKTIME say otherwise.
  bool passiveWait = true;
  specrt_entry_fn generate = nullptr, targetOnly = nullptr;
  specrt_prefill_fn prefillEntry = nullptr, draftPrefillEntry = nullptr;
  specrt_round_fn roundEntry = nullptr;
  specrt_spec_round_fn specRoundEntry = nullptr;
  specrt_draft_round_fn draftRoundEntry = nullptr;
  specrt_verify_fn verifyEntry = nullptr;
  /// A sampling artifact's verify instead.
  specrt_verify_sampled_fn verifySampledEntry = nullptr;
  /// With heads (decoder.batch_proposer "heads") instead of the three
  /// above.
  specrt_heads_prefill_fn headsPrefillEntry = nullptr;
  specrt_heads_round_fn headsRoundEntry = nullptr;
  specrt_heads_spec_round_fn headsSpecRoundEntry = nullptr;
  /// Sampled heads' instead.
  specrt_heads_prefill_sampled_fn headsPrefillSampledEntry = nullptr;
  specrt_heads_round_sampled_fn headsRoundSampledEntry = nullptr;
  specrt_heads_spec_round_sampled_fn headsSpecRoundSampledEntry = nullptr;
  /// With an MTP module (decoder.batch_proposer "mtp_module"): the target's
  /// entries that also return hidden states, and the module's prefill and
  /// speculative round, greedy or sampled.
  specrt_hidden_prefill_fn hiddenPrefillEntry = nullptr;
  specrt_hidden_round_fn hiddenRoundEntry = nullptr;
  specrt_module_prefill_fn modulePrefillEntry = nullptr;
  specrt_module_prefill_sampled_fn modulePrefillSampledEntry = nullptr;
  specrt_module_spec_round_fn moduleSpecRoundEntry = nullptr;
  specrt_module_spec_round_sampled_fn moduleSpecRoundSampledEntry = nullptr;
  /// Tokens a speculative round proposes per sequence (decoder.proposals).
  int64_t proposals = 0;
  /// A cross-tokenizer draft's vocabulary (its round's bias rows), and the
  /// target's (a sampled verification's distributions).
  int64_t draftVocab = 0, targetVocab = 0;
  /// The caches of slots' shapes, from the manifest.
  std::vector<int64_t> cacheShape, draftCacheShape;

  specrt_status headsRound(float *cache, const SlotRun &run,
                           const RoundOutput &out, std::string &error);
  specrt_status headsSpecRound(float *cache, const SlotRun &run,
                               const RoundOutput &out, std::string &error);
  specrt_status moduleSpecRound(float *cache, float *moduleCache,
                                const SlotRun &run, const RoundOutput &out,
                                std::string &error);

  void beforeRun();
  static specrt_memref_f32_6d cacheDescriptor(float *cache,
                                              const std::vector<int64_t> &shape);
};

/// Loads the artifact in `directory` for the CPU.
specrt_status openCPUDevice(const std::string &directory,
                            const Manifest &manifest, bool verifyChecksums,
                            std::unique_ptr<Device> &device,
                            std::string &error);

/// Loads the artifact in `directory` for the GPU: the CUDA driver (loaded at
/// run time), the weights in memory the GPU reads, the host library whose
/// kernels the driver compiles from PTX when it is loaded.
specrt_status openCUDADevice(const std::string &directory,
                             const Manifest &manifest, bool verifyChecksums,
                             std::unique_ptr<Device> &device,
                             std::string &error);

} // namespace specrt

#endif // SPECRT_DEVICE_H
