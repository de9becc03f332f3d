//===- HttpServer.h - spec-serve's HTTP API over the scheduler ---*- C++ -*-===//
//
// Part of spec-serve. The OpenAI-compatible routes (POST /v1/completions,
// streamed as server-sent events or whole; GET /v1/models), GET /health and
// GET /metrics, on cpp-httplib. Connection threads parse, tokenize and
// queue; the scheduler thread generates; a client that goes away cancels
// its sequence. The model is opened after the port is bound: /health
// answers 503 until it is ready.
//
//===----------------------------------------------------------------------===//

#ifndef SPECSERVE_HTTPSERVER_H
#define SPECSERVE_HTTPSERVER_H

#include "specserve/Completions.h"
#include "specserve/Metrics.h"
#include "specserve/Scheduler.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

namespace httplib {
class Server;
struct Request;
struct Response;
} // namespace httplib

namespace specserve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000; ///< 0: any free port
  /// Connections served at once (each streaming request holds one).
  size_t connectionThreads = 80;
  size_t maxRequestBytes = 8u << 20;
};

class HttpServer {
public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();

  /// Binds the port; returns it, or -1 with `error`.
  int bind(std::string &error);
  /// Serves until stop(); false if the server failed.
  bool listen();

  /// The model is open: completions are served from now on.
  void setReady(specrt_model *model, ModelLimits limits,
                SchedulerOptions scheduling);
  /// Refuses new completions (503), lets queued and running ones finish
  /// until `deadline` (then cancels them), and stops listening once every
  /// response has been sent.
  void shutdown(Clock::time_point deadline);
  /// Stops listening at once.
  void stop();

private:
  void routes();
  void completions(const httplib::Request &request, httplib::Response &response);
  void models(httplib::Response &response) const;
  void health(httplib::Response &response) const;
  void metrics(httplib::Response &response) const;
  void fail(httplib::Response &response, const ApiError &error) const;
  std::shared_ptr<Sequence> startSequence(const CompletionRequest &request,
                                          httplib::Response &response);
  void respondWhole(const CompletionRequest &request,
                    std::shared_ptr<Sequence> sequence,
                    httplib::Response &response);
  void respondStreamed(const CompletionRequest &request,
                       std::shared_ptr<Sequence> sequence,
                       httplib::Response &response);

  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  Metrics metrics_;
  specrt_model *model_ = nullptr;
  ModelLimits limits_;
  std::unique_ptr<Scheduler> scheduler_;
  std::atomic<bool> ready_{false}, stopping_{false}, listenReturned_{false};
  int64_t created_; ///< when the server started: the model's `created`
};

} // namespace specserve

#endif // SPECSERVE_HTTPSERVER_H
