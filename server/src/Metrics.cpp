//===- Metrics.cpp - spec-serve's counters, in Prometheus' format ---------===//

#include "specserve/Metrics.h"

#include <cmath>
#include <cstdio>

using namespace specserve;

namespace {
/// Prometheus' number format: shortest round-trip form, +Inf spelled out.
std::string number(double value) {
  if (std::isinf(value))
    return value > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  double back = 0;
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    std::sscanf(buffer, "%lf", &back);
    if (back == value)
      break;
  }
  return buffer;
}

void header(std::string &out, const std::string &name, const char *type,
            const std::string &help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string &out, const std::string &name, double value,
            const std::string &labels = {}) {
  out += name + (labels.empty() ? "" : "{" + labels + "}") + " " +
         number(value) + "\n";
}

const char *finishName(Finish finish) {
  switch (finish) {
  case Finish::Running: return "running";
  case Finish::Length: return "length";
  case Finish::Stop: return "stop";
  case Finish::Cancelled: return "cancelled";
  case Finish::Error: return "error";
  }
  return "unknown";
}

/// Latency buckets from 1 ms to 30 s.
std::vector<double> latencyBounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,  0.5,    1,     2.5,  5,     10,   30};
}
/// Between tokens: a speculative round commits several at once, so from
/// 10 us.
std::vector<double> gapBounds() {
  return {0.00001, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
          0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1};
}
} // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket])
    ++bucket;
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string &name, const std::string &help,
                       std::string &out) const {
  header(out, name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    double bound = i < bounds_.size() ? bounds_[i] : INFINITY;
    sample(out, name + "_bucket", static_cast<double>(cumulative),
           "le=\"" + number(bound) + "\"");
  }
  sample(out, name + "_sum", sum_);
  sample(out, name + "_count", static_cast<double>(count_));
}

Metrics::Metrics()
    : queueTime_(latencyBounds()), timeToFirstToken_(latencyBounds()),
      interTokenLatency_(gapBounds()) {}

void Metrics::countResponse(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++responses_[status];
}

void Metrics::countAdmitted(int64_t promptTokens, double queueSeconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  promptTokens_ += static_cast<uint64_t>(promptTokens);
  queueTime_.observe(queueSeconds);
}

void Metrics::countToken(bool first, double gap) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++generatedTokens_;
  (first ? timeToFirstToken_ : interTokenLatency_).observe(gap);
}

void Metrics::countFinished(Finish finish, const SequenceStats &stats) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++finished_[finish];
  targetForwards_ += static_cast<uint64_t>(stats.targetForwards);
  rounds_ += static_cast<uint64_t>(stats.rounds);
  if (acceptedByPosition_.size() < stats.acceptedPerPosition.size())
    acceptedByPosition_.resize(stats.acceptedPerPosition.size(), 0);
  for (size_t i = 0; i < stats.acceptedPerPosition.size(); ++i)
    acceptedByPosition_[i] += std::round(stats.acceptedPerPosition[i] *
                                         static_cast<double>(stats.rounds));
  // Without speculation every step after the prefill is a round of 0.
  int64_t rounds = stats.proposals > 0
                       ? stats.rounds
                       : std::max<int64_t>(0, stats.targetForwards - 1);
  if (rounds > 0)
    roundsByLength_[stats.proposals] += static_cast<uint64_t>(rounds);
}

void Metrics::countBatchStep(int64_t speculationLength,
                             uint64_t targetForwards) {
  std::lock_guard<std::mutex> lock(mutex_);
  targetForwards_ += targetForwards;
  ++roundsByLength_[speculationLength];
}

void Metrics::countBatchPrefill(uint64_t targetForwards) {
  std::lock_guard<std::mutex> lock(mutex_);
  targetForwards_ += targetForwards;
}

std::string Metrics::render(const SchedulerGauges &gauges) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  header(out, "specula_http_responses_total", "counter",
         "HTTP responses sent, by status code.");
  for (auto [status, count] : responses_)
    sample(out, "specula_http_responses_total", static_cast<double>(count),
           "status=\"" + std::to_string(status) + "\"");
  header(out, "specula_sequences_total", "counter",
         "Sequences that ended, by how they ended.");
  for (Finish finish : {Finish::Length, Finish::Stop, Finish::Cancelled,
                        Finish::Error}) {
    auto it = finished_.find(finish);
    sample(out, "specula_sequences_total",
           it == finished_.end() ? 0.0 : static_cast<double>(it->second),
           std::string("finish=\"") + finishName(finish) + "\"");
  }
  header(out, "specula_queue_depth", "gauge",
         "Requests waiting for a slot.");
  sample(out, "specula_queue_depth", static_cast<double>(gauges.queued));
  header(out, "specula_queue_capacity", "gauge",
         "Requests that may wait before new ones get 429.");
  sample(out, "specula_queue_capacity",
         static_cast<double>(gauges.queueCapacity));
  header(out, "specula_active_slots", "gauge", "Sequences generating now.");
  sample(out, "specula_active_slots", static_cast<double>(gauges.active));
  header(out, "specula_slots", "gauge",
         "Sequences that can generate at once.");
  sample(out, "specula_slots", static_cast<double>(gauges.slots));
  header(out, "specula_prompt_tokens_total", "counter",
         "Prompt tokens of admitted sequences.");
  sample(out, "specula_prompt_tokens_total", static_cast<double>(promptTokens_));
  header(out, "specula_generated_tokens_total", "counter",
         "Tokens committed by the decode loops.");
  sample(out, "specula_generated_tokens_total",
         static_cast<double>(generatedTokens_));
  header(out, "specula_target_forwards_total", "counter",
         "Target forwards of finished sequences, prefill included "
         "(generated tokens / target forwards: tokens per forward).");
  sample(out, "specula_target_forwards_total",
         static_cast<double>(targetForwards_));
  header(out, "specula_verify_rounds_total", "counter",
         "Speculative verify rounds of finished sequences.");
  sample(out, "specula_verify_rounds_total", static_cast<double>(rounds_));
  header(out, "specula_accepted_rounds_total", "counter",
         "Verify rounds that accepted the proposal at this position "
         "(and all before it).");
  for (size_t i = 0; i < acceptedByPosition_.size(); ++i)
    sample(out, "specula_accepted_rounds_total", acceptedByPosition_[i],
           "position=\"" + std::to_string(i + 1) + "\"");
  header(out, "specula_speculation_length_rounds_total", "counter",
         "Rounds by the number of tokens proposed in them (0: the target "
         "alone).");
  for (auto [length, count] : roundsByLength_)
    sample(out, "specula_speculation_length_rounds_total",
           static_cast<double>(count),
           "length=\"" + std::to_string(length) + "\"");
  queueTime_.render("specula_queue_time_seconds",
                    "Time from a request's arrival to its first round.", out);
  timeToFirstToken_.render("specula_time_to_first_token_seconds",
                           "Time from a request's arrival to its first "
                           "committed token.",
                           out);
  interTokenLatency_.render("specula_inter_token_latency_seconds",
                            "Time between a sequence's committed tokens.",
                            out);
  return out;
}
