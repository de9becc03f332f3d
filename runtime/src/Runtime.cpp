//===- Runtime.cpp - the specrt_* C API -----------------------------------===//

#include "MappedFile.h"
#include "Model.h"

#include "specrt/Tokenizer.h"
#include "specrt/artifact_format.h"
#include "specrt/specrt.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace specrt;

static thread_local std::string lastError;

specrt_status specrt::fail(specrt_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

/// Reads, checks and loads a tokenizer.json of the artifact (`file`, with
/// `config` when the manifest lists one) for a vocabulary of `vocabSize`.
static specrt_status openTokenizer(const std::string &directory,
                                   const ArtifactFile &file,
                                   const ArtifactFile &config, int64_t vocabSize,
                                   bool verify,
                                   std::unique_ptr<specrt::Tokenizer> &tokenizer,
                                   std::string &error) {
  std::string texts[2];
  const ArtifactFile *files[2] = {&file, &config};
  for (int i = 0; i < 2; ++i) {
    if (files[i]->name.empty())
      continue;
    // Mapped as the weights are: a regular file, checked against the
    // manifest's size and checksum before it is parsed.
    std::string path = directory + "/" + files[i]->name;
    MappedFile mapped;
    if (!mapped.open(path, error))
      return SPECRT_ERROR_IO;
    if (specrt_status status = checkArtifactFile(path, mapped.data(), mapped.size(),
                                                 *files[i], verify, error))
      return status;
    if (mapped.size())
      texts[i].assign(static_cast<const char *>(mapped.data()), mapped.size());
  }
  std::string message;
  tokenizer = specrt::Tokenizer::parse(texts[0], texts[1], message);
  if (!tokenizer) {
    error = "'" + directory + "/" + file.name + "': " + message;
    return SPECRT_ERROR_FORMAT;
  }
  if (tokenizer->vocabSize() > static_cast<size_t>(vocabSize)) {
    error = "'" + directory + "/" + file.name + "' has " +
            std::to_string(tokenizer->vocabSize()) +
            " tokens; the model's vocabulary has " + std::to_string(vocabSize);
    return SPECRT_ERROR_CORRUPT;
  }
  return SPECRT_OK;
}

extern "C" {

const char *specrt_status_name(specrt_status status) {
  switch (status) {
  case SPECRT_OK: return "ok";
  case SPECRT_ERROR_INVALID_ARGUMENT: return "invalid argument";
  case SPECRT_ERROR_IO: return "i/o error";
  case SPECRT_ERROR_FORMAT: return "malformed artifact";
  case SPECRT_ERROR_VERSION: return "unsupported artifact version";
  case SPECRT_ERROR_CORRUPT: return "corrupt artifact";
  case SPECRT_ERROR_DEVICE: return "device error";
  case SPECRT_ERROR_UNSUPPORTED: return "unsupported";
  case SPECRT_ERROR_OUT_OF_MEMORY: return "out of memory";
  }
  return "unknown status";
}

const char *specrt_last_error(void) { return lastError.c_str(); }

void specrt_open_options_init(specrt_open_options *options) {
  options->device = SPECRT_DEVICE_ARTIFACT;
  options->verify_checksums = 1;
  options->threads = 0;
}

specrt_status specrt_open(const char *path, const specrt_open_options *options,
                          specrt_model **model) {
  if (!path || !model)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "specrt_open needs a path and a model pointer");
  *model = nullptr;
  specrt_open_options defaults;
  specrt_open_options_init(&defaults);
  if (!options)
    options = &defaults;
  if (options->threads < 0)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "threads must not be negative (0: all cores), got " +
                    std::to_string(options->threads));

  auto opened = std::make_unique<specrt_model>();
  std::string directory = path, error;
  while (directory.size() > 1 && directory.back() == '/')
    directory.pop_back();
  if (specrt_status status = readManifest(directory, opened->manifest, error))
    return fail(status, error);
  const Manifest &manifest = opened->manifest;
  bool cuda = options->device == SPECRT_DEVICE_ARTIFACT
                  ? manifest.device == SPECRT_DEVICE_NAME_CUDA
                  : options->device == SPECRT_DEVICE_CUDA;
  std::string wanted = cuda ? SPECRT_DEVICE_NAME_CUDA : SPECRT_DEVICE_NAME_CPU;
  if (manifest.device != wanted)
    return fail(SPECRT_ERROR_DEVICE,
                "'" + directory + "' was compiled for the " + manifest.device +
                    "; the " + wanted + " device was requested");
  bool verify = options->verify_checksums != 0;
  if (specrt_status status =
          cuda ? openCUDADevice(directory, manifest, verify, opened->device,
                               error)
              : openCPUDevice(directory, manifest, verify, opened->device,
                              error))
    return fail(status, error);
  if (manifest.tokenizer == "tokenizer.json")
    if (specrt_status status = openTokenizer(
            directory, manifest.tokenizerFile, manifest.tokenizerConfigFile,
            manifest.vocabSize, verify, opened->tokenizer, error))
      return fail(status, error);
  if (manifest.draftTokenizer == "tokenizer.json")
    if (specrt_status status = openTokenizer(
            directory, manifest.draftTokenizerFile,
            manifest.draftTokenizerConfigFile, manifest.draftVocabSize, verify,
            opened->draftTokenizer, error))
      return fail(status, error);
  opened->device->setThreads(options->threads);
  *model = opened.release();
  return SPECRT_OK;
}

void specrt_close(specrt_model *model) { delete model; }

void specrt_get_model_info(const specrt_model *model,
                           specrt_model_info *info) {
  const Manifest &m = model->manifest;
  info->vocab_size = m.vocabSize;
  info->bos_token_id = m.bosTokenId;
  info->eos_token_id = m.eosTokenId;
  info->pad_token_id = m.padTokenId;
  info->context_capacity = m.contextCapacity;
  info->proposer = m.proposer.c_str();
  info->proposals = m.proposals;
  info->verify = m.verify.c_str();
  info->temperature = m.verify == "greedy" ? 0.0 : m.temperature;
  info->top_k = m.topK;
  info->top_p = m.topP;
  info->device = m.device.c_str();
  info->tree_nodes = m.treeParents.size();
  info->tree_parents = m.treeParents.empty() ? nullptr : m.treeParents.data();
  info->tree_ranks = m.treeRanks.empty() ? nullptr : m.treeRanks.data();
}

void specrt_generate_options_init(specrt_generate_options *options) {
  options->max_new_tokens = 128;
  options->seed = 0;
  options->speculative = 1;
  options->stop_tokens = nullptr;
  options->num_stop_tokens = 0;
  options->on_token = nullptr;
  options->should_stop = nullptr;
  options->user_data = nullptr;
  options->temperature = -1;
  options->top_k = -1;
  options->top_p = -1;
}

/// Checks requested sampling settings against the compiled ones.
static specrt_status checkSampling(const Manifest &m,
                                   const specrt_generate_options &o) {
  bool greedy = m.verify == "greedy";
  std::string compiled =
      greedy ? std::string("greedy decoding")
             : "sampling at temperature " + std::to_string(m.temperature);
  std::string recompile = " (sampling is compiled in: recompile with specc "
                          "--sampling --temperature T --top-k K --top-p P)";
  if (o.temperature >= 0 &&
      (greedy ? o.temperature != 0 : o.temperature != m.temperature))
    return fail(SPECRT_ERROR_UNSUPPORTED,
                "temperature " + std::to_string(o.temperature) +
                    " requested; the artifact was compiled for " + compiled +
                    recompile);
  if (o.top_k >= 0 && o.top_k != m.topK)
    return fail(SPECRT_ERROR_UNSUPPORTED,
                "top-k " + std::to_string(o.top_k) +
                    " requested; the artifact was compiled with top-k " +
                    std::to_string(m.topK) + recompile);
  if (o.top_p >= 0 && o.top_p != m.topP)
    return fail(SPECRT_ERROR_UNSUPPORTED,
                "top-p " + std::to_string(o.top_p) +
                    " requested; the artifact was compiled with top-p " +
                    std::to_string(m.topP) + recompile);
  return SPECRT_OK;
}

/// Checks a generate call's prompt and options against the artifact.
static specrt_status checkGenerateArguments(const Manifest &m,
                                            const int64_t *prompt,
                                            size_t promptLength,
                                            const specrt_generate_options &o) {
  if (promptLength == 0)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "the prompt is empty; give at least one token (e.g. BOS)");
  if (static_cast<int64_t>(promptLength) > m.contextCapacity - 1)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "the prompt has " + std::to_string(promptLength) +
                    " tokens; the artifact's context holds " +
                    std::to_string(m.contextCapacity) +
                    " positions, so a prompt may have at most " +
                    std::to_string(m.contextCapacity - 1));
  for (size_t i = 0; i < promptLength; ++i)
    if (prompt[i] < 0 || prompt[i] >= m.vocabSize)
      return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                  "token " + std::to_string(prompt[i]) + " at prompt position " +
                      std::to_string(i) + " is outside the vocabulary [0, " +
                      std::to_string(m.vocabSize) + ")");
  if (o.max_new_tokens < 1)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "max_new_tokens is " + std::to_string(o.max_new_tokens) +
                    "; it must be at least 1");
  if (o.num_stop_tokens && !o.stop_tokens)
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "num_stop_tokens is set but stop_tokens is null");
  return checkSampling(m, o);
}

/// Runs the device's decode loop, streaming through `stream` when the
/// caller takes tokens or may stop the run; one run at a time on a device
/// that does not run them concurrently.
static specrt_status runDecode(specrt_model *model, const int64_t *prompt,
                               size_t promptLength,
                               const specrt_generate_options &o,
                               const std::vector<int64_t> &stopTokens,
                               TokenStream &stream, DecodeOutput &output) {
  std::unique_lock<std::mutex> lock(model->mutex, std::defer_lock);
  if (!model->device->runsConcurrently())
    lock.lock();
  bool streamed = o.on_token || o.should_stop;
  if (streamed) {
    stream.callback = o.on_token;
    stream.shouldStop = o.should_stop;
    stream.user = o.user_data;
    stream.maxNew = o.max_new_tokens;
    stream.eos = model->manifest.eosTokenId;
    stream.stops = &stopTokens;
  }
  setTokenStream(streamed ? &stream : nullptr);
  struct Reset {
    ~Reset() { setTokenStream(nullptr); }
  } reset;
  if (o.speculative && model->manifest.crossTokenizer())
    return decodeInRounds(model, prompt, promptLength, o.max_new_tokens,
                          o.seed, stopTokens, output);
  std::string error;
  if (specrt_status status = model->device->decode(
          o.speculative != 0, prompt, promptLength, o.max_new_tokens,
          static_cast<int64_t>(o.seed), stopTokens, output, error))
    return fail(status, error);
  return SPECRT_OK;
}

/// The generated tokens up to and including the first EOS or stop token,
/// and why generation stopped; a cancelled run's are what it streamed,
/// though its last round committed more.
static std::vector<int64_t>
generatedTokens(const Manifest &m, const DecodeOutput &output,
                size_t promptLength, const specrt_generate_options &o,
                const std::vector<int64_t> &stopTokens,
                const TokenStream &stream, specrt_result *result) {
  std::vector<int64_t> generated(
      output.sequence.begin() + std::min(promptLength, output.sequence.size()),
      output.sequence.end());
  result->stop_reason = SPECRT_STOP_MAX_TOKENS;
  for (size_t i = 0; i < generated.size(); ++i) {
    int64_t token = generated[i];
    if (token == m.eosTokenId ||
        std::find(stopTokens.begin(), stopTokens.end(), token) !=
            stopTokens.end()) {
      generated.resize(i + 1);
      result->stop_reason = SPECRT_STOP_TOKEN;
      break;
    }
  }
  if (result->stop_reason == SPECRT_STOP_MAX_TOKENS &&
      static_cast<int64_t>(generated.size()) < o.max_new_tokens)
    result->stop_reason = SPECRT_STOP_CONTEXT;
  if (stream.cancelled) {
    generated.resize(std::min<size_t>(generated.size(), stream.forwarded));
    result->stop_reason = SPECRT_STOP_CANCELLED;
  }
  return generated;
}

/// Rounds by accepted length: a tree decoder counts rounds by the node
/// they end at (kept in the result too), whose depth is the length.
static specrt_status roundsByLength(const Manifest &m,
                                    std::vector<int64_t> &histogram,
                                    specrt_result *result) {
  size_t rows = m.treeParents.size() + 1;
  if (histogram.size() != rows)
    return fail(SPECRT_ERROR_FORMAT,
                "the decode loop counted rounds at " +
                    std::to_string(histogram.size()) +
                    " tree rows, but the manifest's tree has " +
                    std::to_string(rows) +
                    "; the artifact's code is wrong (a compiler bug or a "
                    "damaged artifact)");
  result->rounds_by_final_node =
      static_cast<int64_t *>(std::malloc(rows * sizeof(int64_t)));
  if (!result->rounds_by_final_node)
    return fail(SPECRT_ERROR_OUT_OF_MEMORY, "out of memory");
  std::copy(histogram.begin(), histogram.end(), result->rounds_by_final_node);
  result->num_tree_rows = rows;
  int64_t deepest = 0;
  for (size_t node = 1; node < rows; ++node)
    deepest = std::max(deepest, m.treeDepth(node));
  std::vector<int64_t> byLength(deepest + 1, 0);
  for (size_t node = 0; node < rows; ++node)
    byLength[m.treeDepth(node)] += histogram[node];
  histogram = std::move(byLength);
  return SPECRT_OK;
}

/// Rounds, acceptance and the per-position rates from the decode loop's
/// counts.
static specrt_status fillStatistics(const Manifest &m,
                                    const DecodeOutput &output,
                                    size_t promptLength, bool speculative,
                                    specrt_result *result) {
  result->target_forwards = output.targetForwards;
  if (output.targetForwards > 0)
    result->mean_accepted_length =
        static_cast<double>(output.sequence.size() - promptLength) /
        static_cast<double>(output.targetForwards);
  if (speculative && m.proposals > 0 && output.targetForwards > 0)
    result->acceptance_rate =
        std::max(0.0, (result->mean_accepted_length - 1.0) /
                          static_cast<double>(m.proposals));
  result->propose_seconds = output.proposeNanoseconds * 1e-9;
  result->verify_seconds = output.verifyNanoseconds * 1e-9;
  result->translate_seconds = output.translateNanoseconds * 1e-9;
  std::vector<int64_t> histogram = output.acceptedHistogram;
  if (speculative && !m.treeParents.empty())
    if (specrt_status status = roundsByLength(m, histogram, result))
      return status;
  for (int64_t count : histogram)
    result->rounds += count;
  if (!speculative || histogram.size() <= 1 || result->rounds == 0)
    return SPECRT_OK;
  result->num_positions = histogram.size() - 1;
  result->accepted_per_position = static_cast<double *>(
      std::malloc(result->num_positions * sizeof(double)));
  if (!result->accepted_per_position)
    return fail(SPECRT_ERROR_OUT_OF_MEMORY, "out of memory");
  // Position i was accepted in every round that accepted more than i.
  int64_t atLeast = result->rounds;
  for (size_t i = 0; i < result->num_positions; ++i) {
    atLeast -= histogram[i];
    result->accepted_per_position[i] =
        static_cast<double>(atLeast) / static_cast<double>(result->rounds);
  }
  return SPECRT_OK;
}

specrt_status specrt_generate(specrt_model *model, const int64_t *prompt,
                              size_t promptLength,
                              const specrt_generate_options *options,
                              specrt_result *result) {
  if (!model || !result || (!prompt && promptLength))
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "specrt_generate needs a model, a prompt and a result");
  std::memset(result, 0, sizeof(*result));
  specrt_generate_options defaults;
  specrt_generate_options_init(&defaults);
  if (!options)
    options = &defaults;
  const Manifest &m = model->manifest;
  if (specrt_status status =
          checkGenerateArguments(m, prompt, promptLength, *options))
    return status;

  // The caller's stop tokens and the model's own (model.stop_token_ids).
  std::vector<int64_t> stopTokens(options->stop_tokens,
                                  options->stop_tokens + options->num_stop_tokens);
  stopTokens.insert(stopTokens.end(), m.stopTokenIds.begin(), m.stopTokenIds.end());
  DecodeOutput output;
  TokenStream stream;
  auto start = std::chrono::steady_clock::now();
  if (specrt_status status = runDecode(model, prompt, promptLength, *options,
                                       stopTokens, stream, output))
    return status;
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  if (std::string wrong = checkDecodeOutput(output, prompt, promptLength,
                                           m.vocabSize, m.contextCapacity);
      !wrong.empty())
    return fail(SPECRT_ERROR_FORMAT,
                "the decode loop returned " + wrong +
                    "; the artifact's code is wrong (a compiler bug or a "
                    "damaged artifact)");

  std::vector<int64_t> generated = generatedTokens(
      m, output, promptLength, *options, stopTokens, stream, result);
  result->num_tokens = generated.size();
  result->tokens = static_cast<int64_t *>(
      std::malloc(std::max<size_t>(1, generated.size()) * sizeof(int64_t)));
  if (!result->tokens)
    return fail(SPECRT_ERROR_OUT_OF_MEMORY, "out of memory");
  std::copy(generated.begin(), generated.end(), result->tokens);
  result->seconds = seconds;
  if (seconds > 0)
    result->tokens_per_second = generated.size() / seconds;
  if (specrt_status status = fillStatistics(m, output, promptLength,
                                            options->speculative != 0, result)) {
    specrt_result_free(result);
    return status;
  }
  return SPECRT_OK;
}

void specrt_result_free(specrt_result *result) {
  if (!result)
    return;
  std::free(result->tokens);
  std::free(result->accepted_per_position);
  std::free(result->rounds_by_final_node);
  result->tokens = nullptr;
  result->num_tokens = 0;
  result->accepted_per_position = nullptr;
  result->num_positions = 0;
  result->rounds_by_final_node = nullptr;
  result->num_tree_rows = 0;
}

specrt_status specrt_tokenize(const specrt_model *model, const char *text,
                              size_t length, int add_bos, int64_t *ids,
                              size_t capacity, size_t *count) {
  if (!model || (!text && length) || !count || (!ids && capacity))
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "specrt_tokenize needs a model, text and a count");
  size_t n = 0;
  auto put = [&](int64_t id) {
    if (n < capacity)
      ids[n] = id;
    ++n;
  };
  if (add_bos && model->manifest.bosTokenId >= 0)
    put(model->manifest.bosTokenId);
  if (model->tokenizer) {
    for (int32_t id : model->tokenizer->encode(std::string_view(text, length)))
      put(id);
  } else {
    for (size_t i = 0; i < length; ++i)
      put(static_cast<unsigned char>(text[i]));
  }
  *count = n;
  return SPECRT_OK;
}

specrt_status specrt_detokenize(const specrt_model *model, const int64_t *ids,
                                size_t count, char *text, size_t capacity,
                                size_t *length) {
  if (!model || (!ids && count) || !length || (!text && capacity))
    return fail(SPECRT_ERROR_INVALID_ARGUMENT,
                "specrt_detokenize needs a model, ids and a length");
  size_t n = 0;
  if (model->tokenizer) {
    std::vector<int32_t> known;
    for (size_t i = 0; i < count; ++i)
      if (ids[i] >= 0 && static_cast<size_t>(ids[i]) < model->tokenizer->vocabSize())
        known.push_back(static_cast<int32_t>(ids[i]));
    std::string decoded, error;
    if (!model->tokenizer->decode(known, /*skipSpecialTokens=*/true, decoded, error))
      return fail(SPECRT_ERROR_INVALID_ARGUMENT, error);
    n = decoded.size();
    if (capacity)
      std::memcpy(text, decoded.data(), std::min(n, capacity));
    *length = n;
    return SPECRT_OK;
  }
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] > 255)
      continue;
    if (n < capacity)
      text[n] = static_cast<char>(ids[i]);
    ++n;
  }
  *length = n;
  return SPECRT_OK;
}

} // extern "C"
