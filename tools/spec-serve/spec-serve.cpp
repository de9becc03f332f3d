//===- spec-serve.cpp - serve a compiled decoder over HTTP ----------------===//
//
//   spec-serve model.spec [--host 127.0.0.1] [--port 8000] [--queue 64] ...
//
// An OpenAI-compatible completions server over the specrt runtime
// (docs/serving.md): binds the port first (--port 0: any free one, printed),
// then opens the artifact (GET /health answers 503 until it is open), then
// serves until SIGTERM or SIGINT, when it stops accepting requests, lets the
// ones in flight finish and exits 0.
//
//===----------------------------------------------------------------------===//

#include "specserve/HttpServer.h"

#include "specrt/artifact_format.h"
#include "specrt/specrt.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <future>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>
#include <thread>

using namespace specserve;

namespace {
const char *kUsage =
    "usage: spec-serve MODEL.spec [options]\n"
    "\n"
    "Serves a speculative decoder compiled by specc over HTTP, with OpenAI's\n"
    "completions API (POST /v1/completions, streamed or not; GET /v1/models),\n"
    "GET /health and GET /metrics (Prometheus). docs/serving.md has the rest.\n"
    "\n"
    "options:\n"
    "  --host ADDR            address to listen on (default 127.0.0.1)\n"
    "  --port N               port (default 8000; 0: a free one, printed)\n"
    "  --slots N              sequences generated at once, each on its own\n"
    "                         thread (default: the number of cores on the\n"
    "                         CPU, 1 on CUDA)\n"
    "  --queue N              requests that may wait for a slot; more get 429\n"
    "                         (default 64)\n"
    "  --model-name NAME      the model's name in the API (default: the\n"
    "                         artifact's folder name without .spec)\n"
    "  --no-speculation       decode with the target alone\n"
    "  --batch                batched rounds (an artifact compiled with specc\n"
    "                         --max-batch B): one thread gives every active\n"
    "                         sequence its next tokens in one target forward,\n"
    "                         B at once\n"
    "  --speculation MODE     with --batch and a draft or Medusa heads, when\n"
    "                         rounds speculate: adaptive (default: the\n"
    "                         length, 0 or the proposer's,\n"
    "                         that measured costs favour at the load), always\n"
    "                         or never (as --no-speculation)\n"
    "  --prefill-chunk N      with --batch, prefill prompts N tokens per\n"
    "                         round, after the round, so that a long prompt\n"
    "                         does not hold the others' tokens back for its\n"
    "                         whole prefill (default 64; 0: a whole prompt\n"
    "                         when it joins)\n"
    "  --threads N            CPU threads for the compiled code's parallel\n"
    "                         loops (default 1: a server shares its cores)\n"
    "  --device cpu|cuda      the device (default: the artifact's)\n"
    "  --shutdown-timeout S   on SIGTERM, seconds to let requests in flight\n"
    "                         finish before cancelling them (default 30)\n"
    "  --help                 this text\n";

struct Options {
  std::string model, host = "127.0.0.1", modelName;
  int port = 8000;
  size_t queue = 64;
  size_t slots = 0; // 0: by device
  int threads = 1;
  bool speculative = true;
  bool batched = false;
  specrt_speculation batchSpeculation = SPECRT_SPECULATE_ADAPTIVE;
  int64_t prefillChunk = -1; // -1: not given
  specrt_device_kind device = SPECRT_DEVICE_ARTIFACT;
  double shutdownSeconds = 30;
  int64_t tokenDelayUs = 0; // --debug-token-delay-us, for tests
};

int usageError(const std::string &message) {
  std::fprintf(stderr, "spec-serve: error: %s\n(see spec-serve --help)\n",
               message.c_str());
  return 2;
}

bool parseInteger(const char *text, int64_t low, int64_t high, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text, &end, 10);
  if (errno || end == text || *end || value < low || value > high)
    return false;
  out = value;
  return true;
}

/// The artifact's folder name without ".spec".
std::string defaultModelName(std::string path) {
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".spec") == 0)
    name.resize(name.size() - 5);
  return name;
}

/// What the options say together; returns an exit code to stop with, or -1
/// to go on.
int checkOptions(Options &o) {
  if (o.model.empty())
    return usageError("give the artifact to serve (specc -o MODEL.spec)");
  if (o.batched && o.slots)
    return usageError("--batch serves the artifact's batch of slots "
                      "(specc --max-batch); drop --slots");
  if (!o.batched && o.prefillChunk >= 0)
    return usageError("--prefill-chunk applies to batched rounds; add --batch");
  if (o.modelName.empty())
    o.modelName = defaultModelName(o.model);
  return -1;
}

/// --speculation's mode; returns an exit code to stop with, or -1.
int parseSpeculation(const std::string &mode, Options &o) {
  if (mode != "adaptive" && mode != "always" && mode != "never")
    return usageError("--speculation takes adaptive, always or never, not '" +
                      mode + "'");
  o.batchSpeculation = mode == "adaptive" ? SPECRT_SPECULATE_ADAPTIVE
                       : mode == "always" ? SPECRT_SPECULATE_ALWAYS
                                          : SPECRT_SPECULATE_NEVER;
  o.speculative = mode != "never";
  return -1;
}

/// --device's name; returns an exit code to stop with, or -1.
int parseDevice(const std::string &name, Options &o) {
  bool cpu = name == SPECRT_DEVICE_NAME_CPU;
  if (!cpu && name != SPECRT_DEVICE_NAME_CUDA)
    return usageError("--device takes cpu or cuda, not '" + name + "'");
  o.device = cpu ? SPECRT_DEVICE_CPU : SPECRT_DEVICE_CUDA;
  return -1;
}

/// Returns an exit code to stop with, or -1 to go on.
int parseOptions(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *&out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    auto integer = [&](int64_t low, int64_t high, int64_t &out) -> int {
      const char *text = nullptr;
      if (!value(text))
        return usageError(arg + " needs a value");
      if (!parseInteger(text, low, high, out))
        return usageError(arg + " takes an integer in [" + std::to_string(low) +
                          ", " + std::to_string(high) + "], not '" + text + "'");
      return -1;
    };
    int64_t n = 0;
    const char *text = nullptr;
    int rc = -1;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--host") {
      if (!value(text))
        return usageError("--host needs a value");
      o.host = text;
    } else if (arg == "--port") {
      if ((rc = integer(0, 65535, n)) < 0)
        o.port = static_cast<int>(n);
    } else if (arg == "--queue") {
      if ((rc = integer(0, 100000, n)) < 0)
        o.queue = static_cast<size_t>(n);
    } else if (arg == "--slots") {
      if ((rc = integer(1, 1024, n)) < 0)
        o.slots = static_cast<size_t>(n);
    } else if (arg == "--threads") {
      if ((rc = integer(0, 1024, n)) < 0)
        o.threads = static_cast<int>(n);
    } else if (arg == "--shutdown-timeout") {
      if ((rc = integer(0, 86400, n)) < 0)
        o.shutdownSeconds = static_cast<double>(n);
    } else if (arg == "--prefill-chunk") {
      if ((rc = integer(0, 1 << 20, n)) < 0)
        o.prefillChunk = n;
    } else if (arg == "--debug-token-delay-us") {
      if ((rc = integer(0, 10000000, n)) < 0)
        o.tokenDelayUs = n;
    } else if (arg == "--model-name") {
      if (!value(text) || !*text)
        return usageError("--model-name needs a name");
      o.modelName = text;
    } else if (arg == "--no-speculation") {
      o.speculative = false;
      o.batchSpeculation = SPECRT_SPECULATE_NEVER;
    } else if (arg == "--speculation") {
      if (!value(text))
        return usageError("--speculation needs adaptive, always or never");
      rc = parseSpeculation(text, o);
    } else if (arg == "--batch") {
      o.batched = true;
    } else if (arg == "--device") {
      if (!value(text))
        return usageError("--device needs cpu or cuda");
      rc = parseDevice(text, o);
    } else if (!arg.empty() && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (o.model.empty()) {
      o.model = arg;
    } else {
      return usageError("one artifact per server; '" + o.model + "' and '" +
                        arg + "' given");
    }
    if (rc >= 0)
      return rc;
  }
  return checkOptions(o);
}

SchedulerOptions schedulingOf(const Options &o, specrt_model *model) {
  specrt_model_info info;
  specrt_get_model_info(model, &info);
  SchedulerOptions scheduling;
  scheduling.slots = o.slots ? o.slots
                     : std::strcmp(info.device, SPECRT_DEVICE_NAME_CUDA) == 0
                         ? 1 // runs take turns on the GPU
                         : std::max(1u, std::thread::hardware_concurrency());
  scheduling.queueCapacity = o.queue;
  scheduling.speculative = o.speculative && !o.batched;
  scheduling.tokenDelay = std::chrono::microseconds(o.tokenDelayUs);
  scheduling.batched = o.batched;
  scheduling.batchSpeculation = o.batchSpeculation;
  // Chunks of 64 (up to the context) unless told: a 400-token prompt then
  // holds the others back 2.2 ms a round instead of 13.7 ms once, and gets
  // its first token no later (bench-batch-rounds, docs/serving.md).
  scheduling.prefillChunk =
      o.prefillChunk >= 0
          ? static_cast<size_t>(o.prefillChunk)
          : static_cast<size_t>(std::min<int64_t>(64, info.context_capacity));
  return scheduling;
}

ModelLimits limitsOf(specrt_model *model, const std::string &name) {
  specrt_model_info info;
  specrt_get_model_info(model, &info);
  ModelLimits limits;
  limits.name = name;
  limits.vocabSize = info.vocab_size;
  limits.contextCapacity = info.context_capacity;
  limits.sampling = std::strcmp(info.verify, "greedy") != 0;
  limits.temperature = info.temperature;
  limits.topP = info.top_p;
  return limits;
}
/// Opens the artifact and makes the server ready; on failure prints why,
/// stops the server and returns null.
specrt_model *openArtifact(const Options &o, HttpServer &server) {
  specrt_open_options openOptions;
  specrt_open_options_init(&openOptions);
  openOptions.device = o.device;
  openOptions.threads = o.threads;
  specrt_model *model = nullptr;
  if (specrt_open(o.model.c_str(), &openOptions, &model) != SPECRT_OK) {
    std::fprintf(stderr, "spec-serve: error: %s\n", specrt_last_error());
    server.stop();
    return nullptr;
  }
  SchedulerOptions scheduling = schedulingOf(o, model);
  if (o.batched) {
    specrt_batch *batch = nullptr;
    bool opened = specrt_batch_open(model, &batch) == SPECRT_OK;
    if (!opened ||
        specrt_batch_set_prefill_chunk(batch, scheduling.prefillChunk)) {
      std::fprintf(stderr, "spec-serve: error: %s: %s\n",
                   opened ? "--prefill-chunk" : "--batch",
                   specrt_last_error());
      specrt_batch_close(batch);
      specrt_close(model);
      server.stop();
      return nullptr;
    }
    scheduling.slots = specrt_batch_slots(batch);
    specrt_batch_close(batch);
  }
  server.setReady(model, limitsOf(model, o.modelName), scheduling);
  std::printf("spec-serve: serving %s as '%s' (%zu slots)\n", o.model.c_str(),
              o.modelName.c_str(), scheduling.slots);
  std::fflush(stdout);
  return model;
}
} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int rc = parseOptions(argc, argv, o); rc >= 0)
    return rc;
  // SIGTERM and SIGINT are taken by one thread (sigwait), so every thread
  // started from here on blocks them; a client gone mid-write must not kill
  // the server.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  ServerOptions serverOptions;
  serverOptions.host = o.host;
  serverOptions.port = o.port;
  // A connection thread per queued or generating request, and some for
  // /health and /metrics while they are all busy.
  serverOptions.connectionThreads =
      o.queue + std::max<size_t>(o.slots, std::thread::hardware_concurrency()) + 16;
  auto server = std::make_unique<HttpServer>(serverOptions);
  std::string error;
  int port = server->bind(error);
  if (port < 0) {
    std::fprintf(stderr, "spec-serve: error: %s\n", error.c_str());
    return 1;
  }
  std::printf("spec-serve: listening on http://%s:%d\n", o.host.c_str(), port);
  std::fflush(stdout);

  specrt_model *model = nullptr;
  std::promise<bool> opened;
  std::shared_future<bool> open = opened.get_future().share();
  std::thread loader([&] {
    model = openArtifact(o, *server);
    opened.set_value(model != nullptr);
  });
  std::atomic<bool> signalled{false};
  std::thread signalWatcher([&] {
    int received = 0;
    sigwait(&signals, &received);
    signalled = true;
    std::fprintf(stderr, "spec-serve: %s: finishing the requests in flight\n",
                 strsignal(received));
    open.wait(); // a model still opening is waited for, then drained
    auto grace = std::chrono::duration<double>(o.shutdownSeconds);
    server->shutdown(Clock::now() +
                     std::chrono::duration_cast<Clock::duration>(grace));
  });
  server->listen();
  loader.join();
  if (!signalled) { // the model did not open, or listening failed
    signalWatcher.detach(); // it waits in sigwait until the process ends
    return 1;
  }
  signalWatcher.join();
  server.reset(); // the scheduler before the model it runs
  if (model)
    specrt_close(model);
  std::fprintf(stderr, "spec-serve: stopped\n");
  return 0;
}
