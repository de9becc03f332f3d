//===- Sequence.h - one request's generation, between two threads -*- C++ -*-===//
//
// Part of spec-serve. A sequence is what the scheduler thread generates and
// a connection thread reads: the scheduler appends committed tokens and
// finishes it; the connection waits for tokens and may cancel it (its
// client went away, or a stop string matched). Thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef SPECSERVE_SEQUENCE_H
#define SPECSERVE_SEQUENCE_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace specserve {

using Clock = std::chrono::steady_clock;

/// What a sequence asks of the runtime (specrt_generate_options).
struct SequenceRequest {
  std::vector<int64_t> prompt;
  int64_t maxTokens = 16;
  uint64_t seed = 0;
  std::vector<int64_t> stopTokens;
  /// Negative: as compiled into the artifact.
  double temperature = -1, topP = -1;
};

/// How a sequence ended (Running until it has).
enum class Finish {
  Running,
  Length,    ///< max tokens, or the context is full
  Stop,      ///< EOS or a stop token
  Cancelled, ///< cancel() before it ended
  Error,     ///< the runtime refused or failed it
};

/// What the runtime measured of a finished sequence.
struct SequenceStats {
  int64_t targetForwards = 0; ///< including the prompt's prefill
  int64_t rounds = 0;         ///< verify rounds
  int64_t proposals = 0;      ///< speculation length of each round
  std::vector<double> acceptedPerPosition;
  /// Finish::Error: the runtime's specrt_status.
  int runtimeStatus = 0;
};

class Sequence {
public:
  explicit Sequence(SequenceRequest request);

  const SequenceRequest &request() const { return request_; }
  Clock::time_point arrival() const { return arrival_; }

  // The scheduler's side.
  /// Adds a committed token; the time since the previous one (or since
  /// arrival, for the first) is returned for the latency histograms.
  double append(int64_t token);
  void finish(Finish finish, SequenceStats stats, std::string error = {});
  bool cancelRequested() const { return cancelRequested_.load(); }

  // The connection's side.
  void cancel() { cancelRequested_.store(true); }

  /// What a reader saw: the tokens after the ones it had, and whether (and
  /// how) the sequence ended.
  struct Progress {
    std::vector<int64_t> tokens;
    Finish finish = Finish::Running;
    std::string error;
    SequenceStats stats; ///< set once finished
  };
  /// Waits until there are tokens past the first `seen`, the sequence has
  /// finished, or `timeout` has passed.
  Progress waitPast(size_t seen, std::chrono::milliseconds timeout);

private:
  const SequenceRequest request_;
  const Clock::time_point arrival_;
  std::atomic<bool> cancelRequested_{false};

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int64_t> tokens_;
  Clock::time_point lastToken_;
  Finish finish_ = Finish::Running;
  std::string error_;
  SequenceStats stats_;
};

} // namespace specserve

#endif // SPECSERVE_SEQUENCE_H
