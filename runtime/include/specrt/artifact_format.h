/*===- artifact_format.h - the layout of a Specula artifact -------*- C -*-===//
 *
 * A compiled decoder ("model.spec") is a directory of three files:
 *
 *   manifest.json  what the artifact is: format version, target, entry
 *                  points, model configuration, decoding strategy, and the
 *                  size and checksum of the two other files;
 *   decoder.so     the host shared object with the decode loops and kernels,
 *                  and the facts it was compiled with (SPECRT_FACTS_SYMBOL);
 *   weights.bin    the model weights, mapped read-only by the runtime, whose
 *                  address it stores in the library's `spec_weights_base`;
 *                  the manifest's files.weights.matrices says how the weight
 *                  matrices are stored ("f32", or "f16"/"bf16"/"int8"
 *                  with `specc --weights`; the code widens them itself),
 *                  and files.weights.draft_matrices the draft's where
 *                  `specc --draft-weights` chose another precision.
 *
 * Shared by the compiler (which writes artifacts) and the runtime (which
 * reads them); it has no dependencies.
 *
 * Entry points (ABI "mlir-ciface-8"), one per decode loop:
 *
 *   void entry(specrt_entry_result *result, specrt_memref_i64 *prompt,
 *              int64_t max_new_tokens, int64_t seed,
 *              specrt_memref_i64 *stop_tokens);
 *
 * The loop ends after a round that commits EOS or one of `stop_tokens`, or
 * in which the runtime's token hook asked it to stop.
 *
 * An artifact compiled with batched rounds (`specc --max-batch B`; the
 * manifest's decoder.max_batch = B and entry_points.prefill/round) also
 * exports, over one cache of B sequence slots that the caller allocates
 * (float32, 2 x layers x B x kv_heads x capacity x head_dim, zeroed) and
 * the entries update in place:
 *
 *   int64_t prefill(specrt_memref_f32_6d *cache, int64_t slot,
 *                   int64_t start, specrt_memref_i64 *tokens, int64_t key);
 *   void round(specrt_memref_i64 *next, specrt_memref_f32_6d *cache,
 *              int64_t first_slot, specrt_memref_i64 *lengths,
 *              specrt_memref_i64 *tokens, specrt_memref_i64 *keys);
 *
 * prefill writes `tokens` into `slot` at positions start.. (a prompt from
 * 0, or a chunk of it after `start` cached positions) and returns the token
 * after them; round takes each sequence of slots [first_slot,
 * first_slot + n) at its length with its last token and writes their next
 * tokens into `next` (allocated by the compiled code, freed by the caller).
 * Tokens follow the decoder's rule (decoder.verify). Sampled, the draws are
 * keyed as the decode loops key them: prefill's `key` is the sequence's
 * seed, round's keys[i] sequence i's seed (it draws at key + length); the
 * greedy entries ignore the keys.
 * The cache's shape is the manifest's decoder.batch_cache_shape.
 *
 * With a draft (entry_points.draft_prefill/spec_round), the caller also
 * keeps the draft's cache of slots (decoder.batch_draft_cache_shape):
 *
 *   int64_t draft_prefill(specrt_memref_f32_6d *draft_cache, int64_t slot,
 *                         int64_t start, specrt_memref_i64 *tokens,
 *                         int64_t key);
 *   void spec_round(specrt_spec_round_result *result,
 *                   specrt_memref_f32_6d *cache,
 *                   specrt_memref_f32_6d *draft_cache, int64_t first_slot,
 *                   specrt_memref_i64 *lengths, specrt_memref_i64 *previous,
 *                   specrt_memref_i64 *tokens, specrt_memref_i64 *keys);
 *
 * spec_round needs each sequence's draft cache to hold at least its
 * length - 1 positions; `previous` are the tokens at length - 1. The
 * draft proposes decoder.proposals tokens per sequence, the target
 * verifies them in one forward, and sequence i commits
 * picks[i][0 .. counts[i]) (1 to proposals + 1 tokens): its draft cache
 * then holds at least its new length - 1 positions. Sampled, keys[i] is
 * sequence i's round key: its seed + its target forwards so far (the
 * prefill counting one) x 2^20.
 *
 * decoder.batch_proposer says what proposes in the rounds: "draft" (the
 * entries above), "none" (prefill and round only), or "heads": Medusa
 * heads fused into the target (greedy; sampled below), whose every
 * forward also gives each sequence its next decoder.proposals proposals,
 * so that prefill, round and spec_round return them
 * (specrt_heads_*_result) and spec_round takes them:
 *
 *   void prefill(specrt_heads_prefill_result *result, cache, slot, start,
 *                tokens, key);
 *   void round(specrt_heads_round_result *result, cache, first_slot,
 *              lengths, tokens, keys);
 *   void spec_round(specrt_heads_spec_round_result *result, cache,
 *                   first_slot, lengths, tokens,
 *                   specrt_memref_i64_2d *proposals, keys);
 *
 * spec_round verifies row i of `proposals` after sequence i's last token;
 * sequence i commits picks[i][0 .. counts[i]) and its next proposals are
 * row i of result->proposals. "mtp_module" and "cross_tokenizer_draft"
 * are described with their entries' types below.
 *
 * Compiled code calls back into the runtime for its buffers
 * (_mlir_memref_to_llvm_alloc / _free), strided copies (memrefCopy), the
 * time (int64_t specrt_clock_ns(void), a monotonic clock), each committed
 * token in order (bool specrt_on_token(int64_t token), for streaming; true
 * stops the loop after the round: a cancelled run) and the model's
 * run-time checks (void specrt_check(bool ok, const char *message): the
 * first failed one of a run becomes the run's error; the code goes on in
 * bounds until it returns).
 *
 * The result's buffers are allocated by the compiled code through
 * _mlir_memref_to_llvm_alloc (which the runtime provides) and freed by the
 * caller with _mlir_memref_to_llvm_free (their `allocated` pointers).
 *
 *===----------------------------------------------------------------------===*/

#ifndef SPECRT_ARTIFACT_FORMAT_H
#define SPECRT_ARTIFACT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define SPECRT_ARTIFACT_FORMAT "specula-artifact"
/* Version 2: decoder.so states its facts (SPECRT_FACTS_SYMBOL). */
#define SPECRT_ARTIFACT_FORMAT_VERSION 2
/* 6: specrt_on_token returns whether to stop (cancellation). */
#define SPECRT_ARTIFACT_ABI "mlir-ciface-8"
/* Sampling keys each decode round owns: a round key is the seed + the
 * sequence's target forwards x this. */
#define SPECRT_KEYS_PER_ROUND ((int64_t)1 << 20)
#define SPECRT_MANIFEST_FILE "manifest.json"
#define SPECRT_LIBRARY_FILE "decoder.so"
#define SPECRT_WEIGHTS_FILE "weights.bin"
#define SPECRT_WEIGHTS_BASE_SYMBOL "spec_weights_base"

/* The devices an artifact is compiled for (the manifest's target.device). */
#define SPECRT_DEVICE_NAME_CPU "cpu"
#define SPECRT_DEVICE_NAME_CUDA "cuda"

/* decoder.so's own account of what it was compiled as: a NUL-terminated
 * JSON object of at most SPECRT_FACTS_MAX_BYTES bytes (NUL included) whose
 * members sit at the manifest's paths (abi, target, entry_points, model,
 * decoder, files.weights). The manifest must say the same; the runtime
 * refuses an artifact whose manifest disagrees before it runs anything, so
 * an edited manifest cannot make the runtime trust a larger context or
 * vocabulary, another entry point or other weights than the code's. */
#define SPECRT_FACTS_SYMBOL "spec_artifact_facts"
#define SPECRT_FACTS_MAX_BYTES 65536

/* A rank-1 int64 memref descriptor as MLIR's C interface passes it. */
typedef struct {
  int64_t *allocated;
  int64_t *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
} specrt_memref_i64;

/* A rank-6 float memref descriptor: a cache of sequence slots. */
typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[6];
  int64_t strides[6];
} specrt_memref_f32_6d;

/* A rank-2 int64 memref descriptor: a speculative round's picks. */
typedef struct {
  int64_t *allocated;
  int64_t *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} specrt_memref_i64_2d;

/* What spec_round returns (MLIR's C interface: a struct of its results). */
typedef struct {
  specrt_memref_i64_2d picks;
  specrt_memref_i64 counts;
} specrt_spec_round_result;

/* What the entries of rounds with heads return (decoder.batch_proposer
 * "heads"): besides their tokens, each sequence's next proposals. */
typedef struct {
  int64_t token;
  specrt_memref_i64 proposals;
} specrt_heads_prefill_result;
typedef struct {
  specrt_memref_i64 next;
  specrt_memref_i64_2d proposals;
} specrt_heads_round_result;
typedef struct {
  specrt_memref_i64_2d picks;
  specrt_memref_i64 counts;
  specrt_memref_i64_2d proposals;
} specrt_heads_spec_round_result;

typedef void (*specrt_heads_prefill_fn)(specrt_heads_prefill_result *result,
                                        specrt_memref_f32_6d *cache,
                                        int64_t slot, int64_t start,
                                        specrt_memref_i64 *tokens,
                                        int64_t key);
typedef void (*specrt_heads_round_fn)(specrt_heads_round_result *result,
                                      specrt_memref_f32_6d *cache,
                                      int64_t first_slot,
                                      specrt_memref_i64 *lengths,
                                      specrt_memref_i64 *tokens,
                                      specrt_memref_i64 *keys);
typedef void (*specrt_heads_spec_round_fn)(
    specrt_heads_spec_round_result *result, specrt_memref_f32_6d *cache,
    int64_t first_slot, specrt_memref_i64 *lengths, specrt_memref_i64 *tokens,
    specrt_memref_i64_2d *proposals, specrt_memref_i64 *keys);

typedef int64_t (*specrt_prefill_fn)(specrt_memref_f32_6d *cache,
                                     int64_t slot, int64_t start,
                                     specrt_memref_i64 *tokens, int64_t key);
typedef void (*specrt_spec_round_fn)(specrt_spec_round_result *result,
                                     specrt_memref_f32_6d *cache,
                                     specrt_memref_f32_6d *draft_cache,
                                     int64_t first_slot,
                                     specrt_memref_i64 *lengths,
                                     specrt_memref_i64 *previous,
                                     specrt_memref_i64 *tokens,
                                     specrt_memref_i64 *keys);
typedef void (*specrt_round_fn)(specrt_memref_i64 *next,
                                specrt_memref_f32_6d *cache,
                                int64_t first_slot, specrt_memref_i64 *lengths,
                                specrt_memref_i64 *tokens,
                                specrt_memref_i64 *keys);
/* A rank-2 float memref descriptor: a cross-tokenizer draft round's bias. */
typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} specrt_memref_f32_2d;

/* A cross-tokenizer draft's rounds (decoder.batch_proposer
 * "cross_tokenizer_draft"): draft_round is one step of the draft over its
 * cache of slots and returns each sequence's logits plus its row of `bias`
 * (sequences x the draft's vocabulary; 0 or -inf), from which the runtime
 * chooses; verify checks the given proposals (sequences x
 * decoder.proposals, in the target's tokens) after each sequence's last
 * token in one target forward and returns picks and counts as spec_round
 * does. */
typedef void (*specrt_draft_round_fn)(specrt_memref_f32_2d *logits,
                                      specrt_memref_f32_6d *draft_cache,
                                      int64_t first_slot,
                                      specrt_memref_i64 *lengths,
                                      specrt_memref_i64 *tokens,
                                      specrt_memref_f32_2d *bias);
typedef void (*specrt_verify_fn)(specrt_spec_round_result *result,
                                 specrt_memref_f32_6d *cache,
                                 int64_t first_slot,
                                 specrt_memref_i64 *lengths,
                                 specrt_memref_i64 *tokens,
                                 specrt_memref_i64_2d *proposals);
/* A rank-3 float memref descriptor: the distributions a sampled
 * cross-tokenizer draft's proposals were drawn from. */
typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
} specrt_memref_f32_3d;
/* verify of a sampling artifact (decoder.verify "rejection-sampling"):
 * besides the proposals, the distributions they were drawn from in the
 * target's vocabulary (sequences x decoder.proposals x vocab_size) and each
 * sequence's round key; it accepts by rejection sampling, drawing with
 * keys[i] + SPECRT_KEYS_PER_ROUND - 1. */
typedef void (*specrt_verify_sampled_fn)(specrt_spec_round_result *result,
                                         specrt_memref_f32_6d *cache,
                                         int64_t first_slot,
                                         specrt_memref_i64 *lengths,
                                         specrt_memref_i64 *tokens,
                                         specrt_memref_i64_2d *proposals,
                                         specrt_memref_f32_3d *distributions,
                                         specrt_memref_i64 *keys);

/* A rank-1 float memref descriptor: one distribution over a vocabulary. */
typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} specrt_memref_f32_1d;

/* An MTP module's rounds (decoder.batch_proposer "mtp_module", a chain of
 * one module): the module reads the target's hidden states and keeps its
 * own cache of slots (decoder.batch_module_cache_shape). prefill and round
 * also return the target's hidden states at the rows they fed (rows x
 * hidden), which the caller keeps until module_prefill feeds them to the
 * module: row i at position start + i with the token after it, tokens[i];
 * it returns the module's proposal after the last row (sampled: drawn
 * with `key`, with its distribution). spec_round verifies each sequence's
 * proposal (row i of `proposals`, the module's after its last token) in
 * one target forward of 2 rows per sequence, runs the module on those
 * rows, and returns each sequence's next proposal; it needs each
 * sequence's module cache to hold its length positions, and leaves it
 * holding its new length. Sampled, proposals come with the distributions
 * they were drawn from (sequences x 1 x vocab_size) in and out, keys[i] is
 * the round key and the next proposal is drawn with keys[i] + 1; the
 * caller draws module_prefill's with the key of its last target forward
 * + 1, as the decode loop does. */
typedef struct {
  int64_t token;
  specrt_memref_f32_2d hidden;
} specrt_hidden_prefill_result;
typedef struct {
  specrt_memref_i64 next;
  specrt_memref_f32_2d hidden;
} specrt_hidden_round_result;
typedef struct {
  int64_t token;
  specrt_memref_f32_1d distribution;
} specrt_module_prefill_sampled_result;
typedef struct {
  specrt_memref_i64_2d picks;
  specrt_memref_i64 counts;
  specrt_memref_i64_2d proposals;
  specrt_memref_f32_3d distributions;
} specrt_spec_round_sampled_result;
typedef void (*specrt_hidden_prefill_fn)(specrt_hidden_prefill_result *result,
                                         specrt_memref_f32_6d *cache,
                                         int64_t slot, int64_t start,
                                         specrt_memref_i64 *tokens,
                                         int64_t key);
typedef void (*specrt_hidden_round_fn)(specrt_hidden_round_result *result,
                                       specrt_memref_f32_6d *cache,
                                       int64_t first_slot,
                                       specrt_memref_i64 *lengths,
                                       specrt_memref_i64 *tokens,
                                       specrt_memref_i64 *keys);
typedef int64_t (*specrt_module_prefill_fn)(specrt_memref_f32_6d *module_cache,
                                            int64_t slot, int64_t start,
                                            specrt_memref_f32_2d *hidden,
                                            specrt_memref_i64 *tokens,
                                            int64_t key);
typedef void (*specrt_module_prefill_sampled_fn)(
    specrt_module_prefill_sampled_result *result,
    specrt_memref_f32_6d *module_cache, int64_t slot, int64_t start,
    specrt_memref_f32_2d *hidden, specrt_memref_i64 *tokens, int64_t key);
typedef void (*specrt_module_spec_round_fn)(
    specrt_heads_spec_round_result *result, specrt_memref_f32_6d *cache,
    specrt_memref_f32_6d *module_cache, int64_t first_slot,
    specrt_memref_i64 *lengths, specrt_memref_i64 *tokens,
    specrt_memref_i64_2d *proposals, specrt_memref_i64 *keys);
typedef void (*specrt_module_spec_round_sampled_fn)(
    specrt_spec_round_sampled_result *result,
    specrt_memref_f32_6d *cache, specrt_memref_f32_6d *module_cache,
    int64_t first_slot, specrt_memref_i64 *lengths, specrt_memref_i64 *tokens,
    specrt_memref_i64_2d *proposals, specrt_memref_f32_3d *distributions,
    specrt_memref_i64 *keys);

/* Sampled Medusa heads (decoder.batch_proposer "heads" and decoder.verify
 * "rejection-sampling"): each entry also returns the distributions the
 * heads' proposals were drawn from (decoder.proposals x vocab_size per
 * sequence), and spec_round takes them with the proposals. prefill's heads
 * draw with key + k + 1 (head k from 0), spec_round's with keys[i] + k + 1
 * (as the decode loop keys a round's heads), round's with keys[i] + 2^19 +
 * lengths[i] + k + 1 (keys the decode loops do not use). */
typedef struct {
  int64_t token;
  specrt_memref_i64 proposals;
  specrt_memref_f32_2d distributions;
} specrt_heads_prefill_sampled_result;
typedef struct {
  specrt_memref_i64 next;
  specrt_memref_i64_2d proposals;
  specrt_memref_f32_3d distributions;
} specrt_heads_round_sampled_result;
typedef void (*specrt_heads_prefill_sampled_fn)(
    specrt_heads_prefill_sampled_result *result, specrt_memref_f32_6d *cache,
    int64_t slot, int64_t start, specrt_memref_i64 *tokens, int64_t key);
typedef void (*specrt_heads_round_sampled_fn)(
    specrt_heads_round_sampled_result *result, specrt_memref_f32_6d *cache,
    int64_t first_slot, specrt_memref_i64 *lengths, specrt_memref_i64 *tokens,
    specrt_memref_i64 *keys);
typedef void (*specrt_heads_spec_round_sampled_fn)(
    specrt_spec_round_sampled_result *result, specrt_memref_f32_6d *cache,
    int64_t first_slot, specrt_memref_i64 *lengths, specrt_memref_i64 *tokens,
    specrt_memref_i64_2d *proposals, specrt_memref_f32_3d *distributions,
    specrt_memref_i64 *keys);

/* What an entry point returns: the sequence buffer (prompt, then generated
 * tokens), the sequence's length, how many target forwards ran, how many
 * verify rounds accepted 0, 1, ... proposals (proposals + 1 entries; one
 * entry for the target-only loop), and the nanoseconds the rounds spent
 * proposing and verifying (by specrt_clock_ns). */
typedef struct {
  specrt_memref_i64 tokens;
  int64_t length;
  int64_t target_forwards;
  specrt_memref_i64 accepted_histogram;
  int64_t propose_ns;
  int64_t verify_ns;
} specrt_entry_result;

typedef void (*specrt_entry_fn)(specrt_entry_result *result,
                                specrt_memref_i64 *prompt,
                                int64_t max_new_tokens, int64_t seed,
                                specrt_memref_i64 *stop_tokens);

/* FNV-1a, 64 bits: the manifest's checksum of each file ("fnv1a64:<hex>").
 * Catches truncation and corruption; not a cryptographic signature. */
static inline uint64_t specrt_fnv1a64(const void *data, size_t size,
                                      uint64_t hash) {
  const unsigned char *bytes = (const unsigned char *)data;
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}
#define SPECRT_FNV1A64_INIT 0xcbf29ce484222325ULL

#endif /* SPECRT_ARTIFACT_FORMAT_H */
