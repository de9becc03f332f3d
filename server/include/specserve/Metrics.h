//===- Metrics.h - spec-serve's counters, in Prometheus' format --*- C++ -*-===//
//
// Part of spec-serve. What GET /metrics answers, in the Prometheus text
// exposition format (version 0.0.4): requests by status, tokens, queue depth
// and active slots, target forwards (tokens per forward), acceptance by
// proposal position, the speculation length of each round, and histograms
// of the time to the first token and between tokens. Thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef SPECSERVE_METRICS_H
#define SPECSERVE_METRICS_H

#include "specserve/Sequence.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace specserve {

/// A cumulative histogram over fixed upper bounds (seconds).
class Histogram {
public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// Appends the `_bucket`, `_sum` and `_count` series of `name`.
  void render(const std::string &name, const std::string &help,
              std::string &out) const;

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_; ///< per bucket, not cumulative; +Inf last
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// The gauges read at scrape time from the scheduler.
struct SchedulerGauges {
  size_t queued = 0, active = 0, slots = 0, queueCapacity = 0;
};

class Metrics {
public:
  Metrics();

  /// An HTTP response was sent with `status`.
  void countResponse(int status);
  /// A sequence started generating after `queueSeconds` in the queue.
  void countAdmitted(int64_t promptTokens, double queueSeconds);
  /// A committed token `gap` seconds after the previous one (`first`: after
  /// the request arrived).
  void countToken(bool first, double gap);
  /// A sequence ended; its statistics feed the speculation series.
  void countFinished(Finish finish, const SequenceStats &stats);
  /// A step of batched rounds: its speculation length and the target
  /// forwards it ran (shared by its sequences, whose own statistics then
  /// carry none).
  void countBatchStep(int64_t speculationLength, uint64_t targetForwards);
  /// Batched prefills (of whole prompts or chunks): target forwards, no
  /// round.
  void countBatchPrefill(uint64_t targetForwards);

  std::string render(const SchedulerGauges &gauges) const;

private:
  mutable std::mutex mutex_;
  std::map<int, uint64_t> responses_;
  std::map<Finish, uint64_t> finished_;
  uint64_t promptTokens_ = 0, generatedTokens_ = 0, targetForwards_ = 0;
  uint64_t rounds_ = 0;
  std::vector<double> acceptedByPosition_; ///< rounds that accepted position i
  std::map<int64_t, uint64_t> roundsByLength_;
  Histogram queueTime_, timeToFirstToken_, interTokenLatency_;
};

} // namespace specserve

#endif // SPECSERVE_METRICS_H
