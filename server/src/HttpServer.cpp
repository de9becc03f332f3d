//===- HttpServer.cpp - spec-serve's HTTP API over the scheduler ----------===//

#include "specserve/HttpServer.h"
#include "specrt/TextStream.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

using namespace specserve;
using nlohmann::json;

namespace {
/// How long a connection waits for tokens before it looks again (and, on a
/// quiet stream, sends a comment to notice a client that went away).
constexpr std::chrono::milliseconds kPoll{250};
constexpr std::chrono::seconds kKeepAliveComment{1};

std::string dumpJson(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string newId() {
  static std::atomic<uint64_t> next{0};
  static const auto start = std::chrono::system_clock::now();
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "cmpl-%llx-%llu",
                static_cast<unsigned long long>(
                    start.time_since_epoch().count() & 0xffffffffffULL),
                static_cast<unsigned long long>(next++));
  return buffer;
}

/// Seconds since the epoch: OpenAI's `created`.
int64_t nowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char *finishReason(Finish finish, bool stopString) {
  return stopString || finish == Finish::Stop ? "stop" : "length";
}

/// A client error for a runtime failure: its refusals of the request are
/// the client's (400), the rest the server's (500).
ApiError runtimeError(const Sequence::Progress &progress) {
  int status = progress.stats.runtimeStatus;
  bool client = status == SPECRT_ERROR_INVALID_ARGUMENT ||
                status == SPECRT_ERROR_UNSUPPORTED;
  return {client ? 400 : 500, progress.error, "",
          client ? "invalid_request_error" : "server_error"};
}
} // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<httplib::Server>()),
      created_(nowSeconds()) {
  size_t threads = options_.connectionThreads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.maxRequestBytes);
  routes();
}

HttpServer::~HttpServer() { scheduler_.reset(); }

int HttpServer::bind(std::string &error) {
  int port = options_.port == 0
                 ? http_->bind_to_any_port(options_.host)
                 : (http_->bind_to_port(options_.host, options_.port)
                        ? options_.port
                        : -1);
  if (port < 0)
    error = "cannot listen on " + options_.host + ":" +
            std::to_string(options_.port) + ": " + std::strerror(errno);
  return port;
}

bool HttpServer::listen() {
  bool ok = http_->listen_after_bind();
  listenReturned_ = true;
  return ok;
}

void HttpServer::stop() {
  // httplib's stop() does nothing before listening has begun.
  while (!http_->is_running() && !listenReturned_)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
}

void HttpServer::setReady(specrt_model *model, ModelLimits limits,
                          SchedulerOptions scheduling) {
  model_ = model;
  limits_ = std::move(limits);
  scheduler_ = std::make_unique<Scheduler>(model, scheduling, metrics_);
  ready_ = true;
}

void HttpServer::shutdown(Clock::time_point deadline) {
  stopping_ = true;
  if (scheduler_)
    scheduler_->drain(deadline);
  // Stops accepting; the connection threads finish the responses they are
  // writing before the pool joins them.
  stop();
}

void HttpServer::routes() {
  http_->Post("/v1/completions",
              [this](const httplib::Request &q, httplib::Response &r) {
                completions(q, r);
              });
  http_->Get("/v1/models", [this](const httplib::Request &,
                                  httplib::Response &r) { models(r); });
  http_->Get("/health", [this](const httplib::Request &,
                               httplib::Response &r) { health(r); });
  http_->Get("/metrics", [this](const httplib::Request &,
                                httplib::Response &r) { metrics(r); });
  http_->set_error_handler([this](const httplib::Request &q,
                                  httplib::Response &r) {
    if (r.body.empty())
      fail(r, {r.status,
               r.status == 404 ? "no route " + q.method + " " + q.path
                               : "the request was refused (HTTP " +
                                     std::to_string(r.status) + ")",
               "", r.status == 404 ? "not_found_error" : "invalid_request_error"});
  });
  http_->set_exception_handler(
      [this](const httplib::Request &, httplib::Response &r,
             std::exception_ptr exception) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(exception);
        } catch (const std::exception &e) {
          what = e.what();
        } catch (...) {
        }
        fail(r, {500, "internal error: " + what, "", "server_error"});
      });
  http_->set_logger([this](const httplib::Request &, const httplib::Response &r) {
    metrics_.countResponse(r.status);
  });
}

void HttpServer::fail(httplib::Response &response, const ApiError &error) const {
  response.status = error.status;
  response.set_content(errorBody(error), "application/json");
}

void HttpServer::health(httplib::Response &response) const {
  bool ok = ready_ && !stopping_;
  response.status = ok ? 200 : 503;
  response.set_content(
      dumpJson({{"status", ok ? "ok" : stopping_ ? "stopping" : "loading"}}),
      "application/json");
}

void HttpServer::models(httplib::Response &response) const {
  json data = json::array();
  if (ready_)
    data.push_back({{"id", limits_.name},
                    {"object", "model"},
                    {"created", created_},
                    {"owned_by", "specula"},
                    {"max_model_len", limits_.contextCapacity}});
  response.set_content(dumpJson({{"object", "list"}, {"data", data}}),
                       "application/json");
}

void HttpServer::metrics(httplib::Response &response) const {
  SchedulerGauges gauges;
  if (scheduler_)
    gauges = scheduler_->gauges();
  response.set_content(metrics_.render(gauges),
                       "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::completions(const httplib::Request &request,
                             httplib::Response &response) {
  if (stopping_ || !ready_)
    return fail(response, {503,
                           stopping_ ? "the server is shutting down"
                                     : "the model is still loading",
                           "", "server_error"});
  ApiError error;
  std::optional<CompletionRequest> completion =
      parseCompletionRequest(request.body, limits_, error);
  if (!completion)
    return fail(response, error);
  std::shared_ptr<Sequence> sequence = startSequence(*completion, response);
  if (!sequence)
    return;
  if (completion->stream)
    respondStreamed(*completion, std::move(sequence), response);
  else
    respondWhole(*completion, std::move(sequence), response);
}

/// The seed of a request that gives none: a draw of its own, so that
/// sampling artifacts answer the same prompt with new text each time (as
/// OpenAI's API and vLLM do); a request that gives a seed is reproducible.
static uint64_t freshSeed() {
  static std::mutex mutex;
  static std::mt19937_64 generator{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mutex);
  return generator();
}

std::shared_ptr<Sequence>
HttpServer::startSequence(const CompletionRequest &completion,
                          httplib::Response &response) {
  SequenceRequest request;
  request.prompt = completion.promptIds;
  if (completion.promptText) {
    const std::string &text = *completion.promptText;
    size_t count = 0;
    specrt_tokenize(model_, text.data(), text.size(), 1, nullptr, 0, &count);
    request.prompt.resize(count);
    specrt_tokenize(model_, text.data(), text.size(), 1, request.prompt.data(),
                    count, &count);
  }
  if (auto error = checkPromptLength(request.prompt.size(), limits_)) {
    fail(response, *error);
    return nullptr;
  }
  request.maxTokens = completion.maxTokens;
  request.seed = completion.seed ? *completion.seed : freshSeed();
  request.temperature = completion.temperature;
  request.topP = completion.topP;
  auto sequence = std::make_shared<Sequence>(std::move(request));
  switch (scheduler_->submit(sequence)) {
  case Scheduler::Admission::Accepted:
    return sequence;
  case Scheduler::Admission::QueueFull:
    response.set_header("Retry-After", "1");
    fail(response, {429, "the queue is full; retry later", "", "rate_limit_error"});
    return nullptr;
  case Scheduler::Admission::Stopping:
    fail(response, {503, "the server is shutting down", "", "server_error"});
    return nullptr;
  }
  return nullptr;
}

namespace {
/// A completion's text as its sequence produces it.
struct Reader {
  Reader(const specrt_model *model, std::shared_ptr<Sequence> sequence,
         std::vector<std::string> stops)
      : sequence(sequence),
        text(model, sequence->request().prompt, std::move(stops)) {}

  std::shared_ptr<Sequence> sequence;
  specrt::TextStream text;
  size_t seen = 0;
  bool finished = false;
  Sequence::Progress progress;

  /// Waits for tokens (kPoll at most); returns the text they add. Once the
  /// sequence ended or a stop string matched, `finished`, and the text
  /// held back is in the result.
  std::string next() {
    progress = sequence->waitPast(seen, kPoll);
    seen += progress.tokens.size();
    std::string delta;
    for (int64_t token : progress.tokens) {
      delta += text.push(token);
      if (text.stopped()) { // the rest of the round is not the client's
        sequence->cancel();
        break;
      }
    }
    finished = text.stopped() || progress.finish != Finish::Running;
    if (finished && !text.stopped())
      delta += text.finish();
    return delta;
  }
  size_t completionTokens() const {
    return text.stopped() ? text.tokens() : seen;
  }
  const char *finishReason() const {
    return ::finishReason(progress.finish, text.stopped());
  }
};

/// OpenAI's completion object (or a streamed chunk of one).
json completionObject(const std::string &id, int64_t created,
                      const std::string &model, json choices) {
  return {{"id", id},
          {"object", "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", std::move(choices)}};
}

json oneChoice(const std::string &text, json finishReason) {
  return json::array({{{"index", 0},
                       {"text", text},
                       {"logprobs", nullptr},
                       {"finish_reason", std::move(finishReason)}}});
}

json usage(size_t prompt, size_t completion) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion}};
}
} // namespace

void HttpServer::respondWhole(const CompletionRequest &completion,
                              std::shared_ptr<Sequence> sequence,
                              httplib::Response &response) {
  size_t promptTokens = sequence->request().prompt.size();
  Reader reader(model_, sequence, completion.stop);
  std::string text;
  while (!reader.finished)
    text += reader.next();
  if (reader.progress.finish == Finish::Error)
    return fail(response, runtimeError(reader.progress));
  if (reader.progress.finish == Finish::Cancelled && !reader.text.stopped())
    return fail(response, {503, "the server shut down before the completion "
                                "ended",
                           "", "server_error"});
  json body = completionObject(newId(), nowSeconds(), limits_.name,
                               oneChoice(text, reader.finishReason()));
  body["usage"] = usage(promptTokens, reader.completionTokens());
  response.set_content(dumpJson(body), "application/json");
}

void HttpServer::respondStreamed(const CompletionRequest &completion,
                                 std::shared_ptr<Sequence> sequence,
                                 httplib::Response &response) {
  struct State {
    Reader reader;
    std::string id;
    int64_t created;
    bool includeUsage;
    Clock::time_point lastWrite;
  };
  auto state = std::make_shared<State>(
      State{Reader(model_, sequence, completion.stop), newId(), nowSeconds(),
            completion.includeUsage, Clock::now()});
  size_t promptTokens = sequence->request().prompt.size();
  auto event = [this, state](json choices) {
    return completionObject(state->id, state->created, limits_.name,
                            std::move(choices));
  };
  auto provider = [this, state, event, promptTokens](size_t,
                                                    httplib::DataSink &sink) {
    auto send = [&](const std::string &data) {
      state->lastWrite = Clock::now();
      return sink.write(data.data(), data.size());
    };
    auto sendJson = [&](const json &value) {
      return send("data: " + dumpJson(value) + "\n\n");
    };
    Reader &reader = state->reader;
    std::string delta = reader.next();
    if (!delta.empty() && !sendJson(event(oneChoice(delta, nullptr))))
      return false;
    if (!reader.finished) {
      // A comment on a quiet stream: writing is how a gone client shows.
      if (Clock::now() - state->lastWrite >= kKeepAliveComment)
        return send(": waiting\n\n");
      return true;
    }
    bool ok = true;
    if (reader.progress.finish == Finish::Error)
      ok = sendJson(json::parse(errorBody(runtimeError(reader.progress))));
    else
      ok = sendJson(event(oneChoice("", reader.finishReason())));
    if (ok && state->includeUsage) {
      json last = event(json::array());
      last["usage"] = usage(promptTokens, reader.completionTokens());
      ok = sendJson(last);
    }
    if (!ok || !send("data: [DONE]\n\n"))
      return false;
    sink.done();
    return true;
  };
  response.set_header("Cache-Control", "no-cache");
  response.set_chunked_content_provider(
      "text/event-stream", provider, [sequence](bool success) {
        if (!success) // the client went away: free its slot
          sequence->cancel();
      });
}
