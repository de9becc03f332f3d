/*===- specrt.h - the Specula runtime's C API ----------------------*- C -*-===//
 *
 * Opens an artifact compiled by `specc -o model.spec`, generates tokens with
 * its speculative decode loop (or with the target alone, same kernels), and
 * returns the tokens with statistics. No dependency on MLIR or LLVM.
 *
 *   specrt_model *model;
 *   if (specrt_open("model.spec", NULL, &model) != SPECRT_OK)
 *     fprintf(stderr, "%s\n", specrt_last_error());
 *   specrt_generate_options options;
 *   specrt_generate_options_init(&options);
 *   specrt_result result;
 *   specrt_generate(model, prompt, prompt_length, &options, &result);
 *   ...
 *   specrt_result_free(&result);
 *   specrt_close(model);
 *
 * Every function that can fail returns a status; the message of the last
 * failure on the calling thread is specrt_last_error().
 *
 *===----------------------------------------------------------------------===*/

#ifndef SPECRT_SPECRT_H
#define SPECRT_SPECRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPECRT_API __attribute__((visibility("default")))

typedef enum specrt_status {
  SPECRT_OK = 0,
  SPECRT_ERROR_INVALID_ARGUMENT = 1, /* a bad argument or option */
  SPECRT_ERROR_IO = 2,          /* a file cannot be read or mapped */
  SPECRT_ERROR_FORMAT = 3,      /* not an artifact, or a malformed manifest */
  SPECRT_ERROR_VERSION = 4,     /* a format or ABI this runtime cannot read */
  SPECRT_ERROR_CORRUPT = 5,     /* a file's size or checksum is wrong */
  SPECRT_ERROR_DEVICE = 6,      /* the device is missing or not the artifact's */
  SPECRT_ERROR_UNSUPPORTED = 7, /* the artifact was not compiled for this */
  SPECRT_ERROR_OUT_OF_MEMORY = 8,
} specrt_status;

/* "ok", "invalid argument", ... */
SPECRT_API const char *specrt_status_name(specrt_status status);
/* The message of the last failure on this thread ("" if none). */
SPECRT_API const char *specrt_last_error(void);

typedef enum specrt_device_kind {
  SPECRT_DEVICE_CPU = 0,
  SPECRT_DEVICE_CUDA = 1, /* an NVIDIA GPU, through libcuda.so.1 loaded at run time */
  SPECRT_DEVICE_ARTIFACT = 2, /* the device the artifact was compiled for */
} specrt_device_kind;

typedef struct specrt_open_options {
  specrt_device_kind device;
  /* Check the library's and the weights' checksums (default 1). */
  int verify_checksums;
  /* Threads the code's parallel loops use on the CPU (the column tiles of
   * large contractions; results are identical for any count). 0 (default):
   * OpenMP's default, all cores or OMP_NUM_THREADS. Waiting threads sleep
   * at once (blocktime 0) unless OMP_WAIT_POLICY or KMP_BLOCKTIME is set. */
  int threads;
} specrt_open_options;

SPECRT_API void specrt_open_options_init(specrt_open_options *options);

typedef struct specrt_model specrt_model;

/* Opens the artifact directory `path` (options may be NULL: CPU, checked).
 * Fails with a message naming the file and what is wrong. */
SPECRT_API specrt_status specrt_open(const char *path,
                                     const specrt_open_options *options,
                                     specrt_model **model);
SPECRT_API void specrt_close(specrt_model *model);

typedef struct specrt_model_info {
  int64_t vocab_size;
  int64_t bos_token_id, eos_token_id, pad_token_id; /* -1: none */
  /* Prompt plus generated tokens fit in this many positions. */
  int64_t context_capacity;
  const char *proposer; /* "draft", "medusa" or "mtp-module" */
  int64_t proposals;    /* tokens proposed per target forward */
  const char *verify;   /* "greedy" or "rejection-sampling" */
  double temperature;   /* of rejection sampling; 0 for greedy */
  int64_t top_k;        /* 0: off */
  double top_p;         /* 1: off */
  const char *device;   /* "cpu" or "cuda" */
  /* A tree decoder's candidates (0 and NULL for a chain): node i (1 to
   * tree_nodes) has parent tree_parents[i - 1] (0: the root, the last
   * committed token) and is the tree_ranks[i - 1]-th most likely token
   * (0: the most likely) of the proposer at its depth. */
  size_t tree_nodes;
  const int64_t *tree_parents;
  const int64_t *tree_ranks;
} specrt_model_info;

/* Strings stay valid while the model is open. */
SPECRT_API void specrt_get_model_info(const specrt_model *model,
                                      specrt_model_info *info);

typedef struct specrt_generate_options {
  int64_t max_new_tokens; /* default 128 */
  uint64_t seed;          /* key of the sampler; default 0 */
  /* 1 (default): the speculative decode loop; 0: the target alone, with the
   * same kernels, for comparisons. */
  int speculative;
  /* Generation ends after any of these (besides the model's EOS): the
   * compiled loop stops after the round that commits one, and the text ends
   * with it. */
  const int64_t *stop_tokens;
  size_t num_stop_tokens;
  /* Sampling is compiled into the artifact (specc --sampling
   * --temperature). Negative values (the default) mean "as compiled"; other
   * values must equal the compiled ones, else SPECRT_ERROR_UNSUPPORTED. */
  double temperature;
  int64_t top_k;
  double top_p;
  /* Streaming: called with each generated token as the decode loop's rounds
   * commit them, in order, up to max_new_tokens and the token that ends
   * generation (the same tokens the result holds), on the calling thread;
   * NULL (the default): no calls. */
  void (*on_token)(int64_t token, void *user_data);
  /* Cancellation: asked after each committed token (and its on_token call)
   * on the calling thread; once it returns nonzero the decode loop stops at
   * the end of the current round, no further tokens are streamed, and the
   * result holds the tokens streamed so far with stop_reason
   * SPECRT_STOP_CANCELLED. It may read a flag another thread sets. NULL
   * (the default): never. */
  int (*should_stop)(void *user_data);
  void *user_data; /* passed to on_token and should_stop */
} specrt_generate_options;

SPECRT_API void specrt_generate_options_init(specrt_generate_options *options);

typedef enum specrt_stop_reason {
  SPECRT_STOP_MAX_TOKENS = 0,
  SPECRT_STOP_TOKEN = 1,   /* EOS or a stop token (included in tokens) */
  SPECRT_STOP_CONTEXT = 2, /* the context capacity is full */
  SPECRT_STOP_CANCELLED = 3, /* should_stop asked to stop */
} specrt_stop_reason;

typedef struct specrt_result {
  int64_t *tokens; /* generated tokens, without the prompt */
  size_t num_tokens;
  specrt_stop_reason stop_reason;
  int64_t target_forwards; /* including the prompt's prefill */
  /* Tokens per target forward: accepted proposals plus the target's own. */
  double mean_accepted_length;
  /* Accepted proposals / proposed tokens (0 without speculation). */
  double acceptance_rate;
  /* Verify rounds (target forwards after the prompt's), and for each
   * proposal position i < num_positions the fraction of rounds that
   * accepted it (and so every position before it); NULL and 0 without
   * speculation. */
  int64_t rounds;
  double *accepted_per_position;
  size_t num_positions;
  double seconds;
  double tokens_per_second;
  /* Of `seconds`, the time the decode rounds spent proposing (draft
   * forwards, the MTP module; 0 for Medusa heads, which run inside the
   * verify forward) and verifying (target forwards, acceptance); the rest is
   * the prompt's prefill and the runtime's own work. */
  double propose_seconds;
  double verify_seconds;
  /* Of propose_seconds, with a draft that has another tokenizer: the time
   * spent translating its proposals and following the text in its tokens
   * (0 otherwise). */
  double translate_seconds;
  /* Tree decoders: the verify rounds by the tree row they ended at (entry
   * 0: the root, no candidate accepted; entry i: node i of
   * specrt_model_info's tree); NULL and 0 for chains and without
   * speculation. A node's acceptance is the rounds ending in its subtree. */
  int64_t *rounds_by_final_node;
  size_t num_tree_rows;
} specrt_result;

/* Generates from the token ids `prompt` (0 <= id < vocab_size; the prompt
 * must leave room for one token in the context). Several threads may
 * generate with one model at once: on the CPU the runs go on in parallel
 * (each with its own caches; `threads` OpenMP threads each), on CUDA they
 * take turns. */
SPECRT_API specrt_status specrt_generate(specrt_model *model,
                                         const int64_t *prompt,
                                         size_t prompt_length,
                                         const specrt_generate_options *options,
                                         specrt_result *result);
SPECRT_API void specrt_result_free(specrt_result *result);

/* The model's tokenizer: the artifact's tokenizer.json when it has one
 * (ill-formed UTF-8 reads as U+FFFD), else the byte-level one (one token per
 * byte). BOS first when add_bos and the model has one. Writes at most
 * `capacity` ids and sets `count` to the number the text needs. */
SPECRT_API specrt_status specrt_tokenize(const specrt_model *model,
                                         const char *text, size_t length,
                                         int add_bos, int64_t *ids,
                                         size_t capacity, size_t *count);
/* The text of `ids`; special tokens (with tokenizer.json, those it marks
 * special; else ids >= 256) and ids outside the tokenizer's vocabulary are
 * dropped. Writes at most `capacity` bytes and sets `length` to the number
 * the text needs. */
SPECRT_API specrt_status specrt_detokenize(const specrt_model *model,
                                           const int64_t *ids, size_t count,
                                           char *text, size_t capacity,
                                           size_t *length);

/* Batched rounds: many sequences share each target forward (an artifact
 * compiled with `specc --max-batch B`; CPU). A batch holds B slots
 * in one cache; a sequence joins a free slot with its prompt's prefill,
 * and each step advances every active sequence in one target forward per
 * run of consecutive active slots. With a draft (`specc --draft ...
 * --max-batch B`) or Medusa heads (greedy, a chain), a step may be
 * speculative: the draft or the heads propose decoder.proposals tokens per
 * sequence, the target verifies them all, and
 * each sequence gets 1 to proposals + 1 tokens. A sequence's tokens are its
 * greedy tokens alone, whatever else is in the batch, whether steps
 * speculate or not. An artifact that samples (specc --sampling) draws each
 * sequence's tokens with its own seed (specrt_batch_add_seeded): they do
 * not depend on the rest of the batch, and when every step speculates
 * (SPECRT_SPECULATE_ALWAYS) they are specrt_generate's for that seed;
 * steps that do not speculate draw other tokens from the same
 * distribution. One thread drives a batch (add, step, remove);
 * different batches may run on different threads.
 *
 *   specrt_batch *batch;
 *   specrt_batch_open(model, &batch);
 *   specrt_batch_add(batch, prompt, prompt_length, &slot, &first_token);
 *   specrt_batch_step(batch, slots, tokens, &count); // slots[i]: tokens[i]
 *   specrt_batch_remove(batch, slot);
 *   specrt_batch_close(batch);
 */
typedef struct specrt_batch specrt_batch;

/* SPECRT_ERROR_UNSUPPORTED for an artifact without batched rounds. */
SPECRT_API specrt_status specrt_batch_open(specrt_model *model,
                                           specrt_batch **batch);
SPECRT_API void specrt_batch_close(specrt_batch *batch);
/* The slots (the artifact's max_batch) and how many hold a sequence. */
SPECRT_API size_t specrt_batch_slots(const specrt_batch *batch);
SPECRT_API size_t specrt_batch_active(const specrt_batch *batch);
/* The most tokens one step returns: slots x (proposals + 1) with a draft,
 * the slots without. */
SPECRT_API size_t specrt_batch_step_capacity(const specrt_batch *batch);

/* When steps speculate (with a draft; without, every step is plain). */
typedef enum {
  /* Each step the speculation length that the measured costs of earlier
   * steps at this many active sequences say gives more tokens per second:
   * 0 (a plain step) or the draft's proposals. The default. */
  SPECRT_SPECULATE_ADAPTIVE = 0,
  /* Never: one token per sequence per step, no draft forward. */
  SPECRT_SPECULATE_NEVER = 1,
  /* Every step whose sequences have room for the proposals. */
  SPECRT_SPECULATE_ALWAYS = 2,
} specrt_speculation;
SPECRT_API specrt_status specrt_batch_set_speculation(
    specrt_batch *batch, specrt_speculation speculation);

/* What a batch's steps did since it opened. */
typedef struct {
  uint64_t steps;             /* steps that advanced a sequence */
  uint64_t speculative_steps; /* of them, steps that speculated */
  uint64_t target_forwards;   /* forwards of the target (one per run of
                                 consecutive slots per step) */
  uint64_t sequence_steps;    /* sequences advanced, summed over steps */
  uint64_t tokens;            /* tokens the steps committed */
  uint64_t proposed;          /* draft tokens verified */
  uint64_t accepted;          /* of them, accepted */
  uint64_t draft_catch_up;    /* positions the draft prefilled to catch up
                                 with sequences after plain steps */
  int64_t last_speculation;   /* the last step's speculation length */
  uint64_t prefill_forwards;  /* target forwards over prompts (one per
                                 prompt, or per chunk of one) */
  uint64_t prefill_tokens;    /* prompt tokens they prefilled */
  /* With a cross-tokenizer draft, the nanoseconds its speculative steps
   * spent drafting (its forwards, its catch-up included), verifying, and
   * translating between the draft's tokens and the target's (spelling,
   * tokenizing again, token healing). */
  uint64_t propose_ns;
  uint64_t verify_ns;
  uint64_t translate_ns;
} specrt_batch_stats;
SPECRT_API void specrt_batch_get_stats(const specrt_batch *batch,
                                       specrt_batch_stats *stats);

/* Prefill in chunks: with `tokens` > 0, specrt_batch_add only takes a slot
 * for the prompt (its first_token is -1), and each step, after advancing
 * the sequences whose prompts are in the cache, prefills at most `tokens`
 * prompt tokens, oldest prompts first; a sequence whose prompt completes
 * gets its first token among the step's outputs, after the others'. A long
 * prompt then delays the other sequences by a chunk per step rather than
 * by its whole prefill. 0 (the default): specrt_batch_add prefills the
 * whole prompt. At most the context's length. */
SPECRT_API specrt_status specrt_batch_set_prefill_chunk(specrt_batch *batch,
                                                        size_t tokens);

/* Starts a sequence in a free slot: prefills `prompt` (or, with a prefill
 * chunk, leaves it to the steps and sets first_token to -1) and returns the
 * slot and the first generated token. SPECRT_ERROR_INVALID_ARGUMENT when
 * no slot is free, or the prompt is empty, does not fit the context or
 * holds an id outside the vocabulary. */
SPECRT_API specrt_status specrt_batch_add(specrt_batch *batch,
                                          const int64_t *prompt,
                                          size_t length, int64_t *slot,
                                          int64_t *first_token);
/* specrt_batch_add with the sequence's seed: the key of its draws when the
 * artifact samples, as specrt_generate_options.seed (specrt_batch_add's
 * is 0); greedy artifacts ignore it. */
SPECRT_API specrt_status specrt_batch_add_seeded(specrt_batch *batch,
                                                 const int64_t *prompt,
                                                 size_t length, uint64_t seed,
                                                 int64_t *slot,
                                                 int64_t *first_token);

/* One step: each active sequence whose context has room for its last
 * token gets its next tokens: slots[i] got tokens[i] for i < *count (both
 * arrays hold specrt_batch_step_capacity entries), in slot order, a
 * sequence's tokens in their order; then, with a prefill chunk, the first
 * tokens of sequences whose prompts completed. A sequence whose context is
 * full is not advanced; remove it. */
SPECRT_API specrt_status specrt_batch_step(specrt_batch *batch,
                                           int64_t *slots, int64_t *tokens,
                                           size_t *count);

/* Ends the sequence in `slot`, which becomes free. */
SPECRT_API specrt_status specrt_batch_remove(specrt_batch *batch,
                                             int64_t slot);

#ifdef __cplusplus
}
#endif

#endif /* SPECRT_SPECRT_H */
