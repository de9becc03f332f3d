//===- Scheduler.h - the thread that runs the decode loops -------*- C++ -*-===//
//
// Part of spec-serve. Connection threads submit sequences to a bounded
// queue; slot threads take them in arrival order and drive the runtime. A
// slot is one specrt_generate call on its own thread: the compiled loop
// decodes one sequence at a time, so sequences run side by side, each
// reading the weights itself, rather than in batched rounds (docs/serving.md
// says what batched rounds would change); the queue, admission, streaming
// and cancellation stay as they are.
//
//===----------------------------------------------------------------------===//

#ifndef SPECSERVE_SCHEDULER_H
#define SPECSERVE_SCHEDULER_H

#include "specserve/Metrics.h"
#include "specserve/Sequence.h"

#include "specrt/specrt.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace specserve {

struct SchedulerOptions {
  /// Sequences generated at once (threads calling specrt_generate).
  size_t slots = 1;
  /// Sequences that may wait for a slot; a submission beyond it is refused.
  size_t queueCapacity = 64;
  /// Run the speculative decode loop (else the target alone).
  bool speculative = true;
  /// For tests: sleep this long after each committed token, so that a
  /// generation of the small example models lasts long enough to cancel.
  std::chrono::microseconds tokenDelay{0};
};

class Scheduler {
public:
  Scheduler(specrt_model *model, SchedulerOptions options, Metrics &metrics);
  /// Cancels what is queued and in flight, and joins the slot threads.
  ~Scheduler();

  enum class Admission { Accepted, QueueFull, Stopping };
  /// Queues `sequence` (called from any thread).
  Admission submit(std::shared_ptr<Sequence> sequence);

  /// Stops admitting and waits until the queue and the slots are empty, or
  /// until `deadline`; then cancels what is left. Returns whether all ended
  /// on their own.
  bool drain(Clock::time_point deadline);

  SchedulerGauges gauges() const;

private:
  void runSlot();
  void generate(Sequence &sequence);

  specrt_model *model_;
  const SchedulerOptions options_;
  Metrics &metrics_;

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::shared_ptr<Sequence>> queue_;
  std::vector<std::shared_ptr<Sequence>> active_;
  bool stopping_ = false, exiting_ = false;
  std::vector<std::thread> slots_;
};

} // namespace specserve

#endif // SPECSERVE_SCHEDULER_H
