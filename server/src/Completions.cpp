//===- Completions.cpp - OpenAI's completions request, checked ------------===//

#include "specserve/Completions.h"

#include <nlohmann/json.hpp>

#include <cmath>

using namespace specserve;
using nlohmann::json;

std::string specserve::errorBody(const ApiError &error) {
  json body = {{"error",
                {{"message", error.message},
                 {"type", error.type},
                 {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                 {"code", nullptr}}}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {
/// json's own type names, as a client would write them.
std::string typeName(const json &value) {
  if (value.is_number_integer())
    return "integer";
  return value.type_name();
}

ApiError wrongType(const std::string &field, const char *expected,
                   const json &value) {
  return {400, "'" + field + "' must be " + expected + ", not " + typeName(value),
          field};
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

/// The prompt: a string, token ids, or a list of one of either.
std::optional<ApiError> readPrompt(const json &prompt, const ModelLimits &limits,
                                   CompletionRequest &request) {
  json single = prompt;
  if (prompt.is_array() && !prompt.empty() &&
      (prompt[0].is_string() || prompt[0].is_array())) {
    if (prompt.size() != 1)
      return ApiError{400, "'prompt' holds " + std::to_string(prompt.size()) +
                               " prompts; this server takes one per request",
                      "prompt"};
    single = prompt[0];
  }
  if (single.is_string()) {
    request.promptText = single.get<std::string>();
    return std::nullopt;
  }
  if (!single.is_array() || single.empty())
    return ApiError{400,
                    "'prompt' must be a string or a non-empty array of token "
                    "ids, not " +
                        (single.is_array() ? std::string("an empty array")
                                           : typeName(single)),
                    "prompt"};
  for (size_t i = 0; i < single.size(); ++i) {
    const json &id = single[i];
    if (!id.is_number_integer())
      return ApiError{400, "'prompt' token " + std::to_string(i) +
                               " must be an integer, not " + typeName(id),
                      "prompt"};
    int64_t value = id.get<int64_t>();
    if (value < 0 || value >= limits.vocabSize)
      return ApiError{400, "'prompt' token " + std::to_string(i) + " is " +
                               std::to_string(value) +
                               ", outside the vocabulary [0, " +
                               std::to_string(limits.vocabSize) + ")",
                      "prompt"};
    request.promptIds.push_back(value);
  }
  return std::nullopt;
}

std::optional<ApiError> readStop(const json &stop, CompletionRequest &request) {
  if (stop.is_null())
    return std::nullopt;
  if (stop.is_string()) {
    request.stop.push_back(stop.get<std::string>());
    return std::nullopt;
  }
  if (!stop.is_array())
    return wrongType("stop", "a string or an array of strings", stop);
  if (stop.size() > 4)
    return ApiError{400, "'stop' holds " + std::to_string(stop.size()) +
                             " strings; at most 4 are allowed",
                    "stop"};
  for (const json &s : stop) {
    if (!s.is_string())
      return wrongType("stop", "a string or an array of strings", s);
    request.stop.push_back(s.get<std::string>());
  }
  return std::nullopt;
}

/// Sampling settings are compiled into the artifact: a request may repeat
/// them, not change them.
std::optional<ApiError> readSampling(const json &body, const ModelLimits &limits,
                                     CompletionRequest &request) {
  std::string compiled = limits.sampling
                             ? "rejection sampling at temperature " +
                                   number(limits.temperature)
                             : "greedy decoding (temperature 0)";
  const char *recompile = "; sampling settings are compiled into the artifact "
                          "(specc --sampling --temperature T --top-p P)";
  if (body.contains("temperature") && !body["temperature"].is_null()) {
    const json &t = body["temperature"];
    if (!t.is_number())
      return wrongType("temperature", "a number", t);
    request.temperature = t.get<double>();
    if (request.temperature < 0 || request.temperature > 2)
      return ApiError{400, "'temperature' must be in [0, 2]", "temperature"};
    if (request.temperature != (limits.sampling ? limits.temperature : 0.0))
      return ApiError{400,
                      "temperature " + number(request.temperature) +
                          " requested; this model is compiled for " + compiled +
                          recompile,
                      "temperature"};
  }
  if (body.contains("top_p") && !body["top_p"].is_null()) {
    const json &p = body["top_p"];
    if (!p.is_number())
      return wrongType("top_p", "a number", p);
    request.topP = p.get<double>();
    if (request.topP != limits.topP)
      return ApiError{400,
                      "top_p " + number(request.topP) +
                          " requested; this model is compiled with top_p " +
                          number(limits.topP) + recompile,
                      "top_p"};
  }
  return std::nullopt;
}

/// Fields whose only supported value is their default.
std::optional<ApiError> refuseUnsupported(const json &body) {
  auto is = [&](const char *field, auto accept) -> std::optional<ApiError> {
    if (!body.contains(field) || body[field].is_null() || accept(body[field]))
      return std::nullopt;
    return ApiError{400,
                    std::string("'") + field + "' = " + body[field].dump() +
                        " is not supported by this server",
                    field};
  };
  auto one = [](const json &v) { return v.is_number_integer() && v == 1; };
  auto zero = [](const json &v) { return v.is_number() && v == 0; };
  auto no = [](const json &v) { return v.is_boolean() && !v.get<bool>(); };
  auto empty = [](const json &v) { return v.is_object() && v.empty(); };
  for (auto error : {is("n", one), is("best_of", one), is("echo", no),
                     is("logprobs", zero), is("presence_penalty", zero),
                     is("frequency_penalty", zero), is("logit_bias", empty),
                     is("suffix", [](const json &) { return false; })})
    if (error)
      return error;
  return std::nullopt;
}

std::optional<ApiError> readOptions(const json &body, CompletionRequest &r) {
  if (body.contains("max_tokens") && !body["max_tokens"].is_null()) {
    const json &m = body["max_tokens"];
    if (!m.is_number_integer())
      return wrongType("max_tokens", "an integer", m);
    r.maxTokens = m.get<int64_t>();
    if (r.maxTokens < 1)
      return ApiError{400, "'max_tokens' must be at least 1", "max_tokens"};
  }
  if (body.contains("seed") && !body["seed"].is_null()) {
    const json &s = body["seed"];
    if (!s.is_number_integer())
      return wrongType("seed", "an integer", s);
    r.seed = s.is_number_unsigned() ? s.get<uint64_t>()
                                    : static_cast<uint64_t>(s.get<int64_t>());
  }
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean())
      return wrongType("stream", "a boolean", body["stream"]);
    r.stream = body["stream"].get<bool>();
  }
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json &o = body["stream_options"];
    if (!o.is_object())
      return wrongType("stream_options", "an object", o);
    if (!r.stream)
      return ApiError{400, "'stream_options' is only allowed with stream: true",
                      "stream_options"};
    if (o.contains("include_usage")) {
      if (!o["include_usage"].is_boolean())
        return wrongType("stream_options.include_usage", "a boolean",
                         o["include_usage"]);
      r.includeUsage = o["include_usage"].get<bool>();
    }
  }
  return std::nullopt;
}
} // namespace

std::optional<CompletionRequest>
specserve::parseCompletionRequest(const std::string &text,
                                  const ModelLimits &limits, ApiError &error) {
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    error = {400, "the request body is not valid JSON", ""};
    return std::nullopt;
  }
  if (!body.is_object()) {
    error = {400, "the request body must be a JSON object, not " + typeName(body),
             ""};
    return std::nullopt;
  }
  CompletionRequest request;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) {
      error = wrongType("model", "a string", body["model"]);
      return std::nullopt;
    }
    std::string model = body["model"].get<std::string>();
    if (model != limits.name) {
      error = {404, "the model '" + model + "' does not exist; this server serves '" +
                        limits.name + "'",
               "model", "not_found_error"};
      return std::nullopt;
    }
  }
  if (!body.contains("prompt")) {
    error = {400, "'prompt' is required", "prompt"};
    return std::nullopt;
  }
  for (auto check : {readPrompt(body["prompt"], limits, request),
                     readStop(body.value("stop", json()), request),
                     readSampling(body, limits, request), readOptions(body, request),
                     refuseUnsupported(body)})
    if (check) {
      error = *check;
      return std::nullopt;
    }
  return request;
}

std::optional<ApiError> specserve::checkPromptLength(size_t tokens,
                                                     const ModelLimits &limits) {
  if (tokens == 0)
    return ApiError{400, "the prompt is empty and the model has no BOS token",
                    "prompt"};
  if (static_cast<int64_t>(tokens) <= limits.contextCapacity - 1)
    return std::nullopt;
  return ApiError{400,
                  "this model's context holds " +
                      std::to_string(limits.contextCapacity) +
                      " tokens; the prompt has " + std::to_string(tokens) +
                      " (at most " + std::to_string(limits.contextCapacity - 1) +
                      ", to leave room for one generated token)",
                  "prompt"};
}
