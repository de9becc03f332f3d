//===- Completions.h - OpenAI's completions request, checked ----*- C++ -*-===//
//
// Part of spec-serve. Reads the body of POST /v1/completions (OpenAI's
// legacy completions API, which vLLM, SGLang and llama.cpp's server speak)
// and refuses what this server cannot honour, naming the field: a request
// is either served as asked or answered 400, never served differently.
//
//===----------------------------------------------------------------------===//

#ifndef SPECSERVE_COMPLETIONS_H
#define SPECSERVE_COMPLETIONS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace specserve {

/// An error for the client: an HTTP status and OpenAI's error object.
struct ApiError {
  int status = 400;
  std::string message;
  std::string param; ///< the request field at fault, or empty
  std::string type = "invalid_request_error";
};

/// OpenAI's error body: {"error": {"message", "type", "param", "code"}}.
std::string errorBody(const ApiError &error);

/// What the model being served allows.
struct ModelLimits {
  std::string name;
  int64_t vocabSize = 0;
  int64_t contextCapacity = 0;
  bool sampling = false;   ///< compiled with rejection sampling
  double temperature = 0;  ///< compiled temperature (0: greedy)
  double topP = 1;
};

struct CompletionRequest {
  std::optional<std::string> promptText;
  std::vector<int64_t> promptIds; ///< when the prompt is token ids
  int64_t maxTokens = 16;         ///< OpenAI's default
  std::optional<uint64_t> seed; ///< not given: a fresh one per request
  std::vector<std::string> stop;
  bool stream = false;
  bool includeUsage = false; ///< stream_options.include_usage
  /// Negative: not given (as compiled).
  double temperature = -1, topP = -1;
};

/// Parses and checks a request body against `limits`; the prompt's length
/// is checked once it is tokenized (checkPromptLength).
std::optional<CompletionRequest>
parseCompletionRequest(const std::string &body, const ModelLimits &limits,
                       ApiError &error);

/// Whether a prompt of `tokens` tokens leaves room for one generated token.
std::optional<ApiError> checkPromptLength(size_t tokens,
                                          const ModelLimits &limits);

} // namespace specserve

#endif // SPECSERVE_COMPLETIONS_H
