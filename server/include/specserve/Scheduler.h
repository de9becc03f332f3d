//===- Scheduler.h - the thread that runs the decode loops -------*- C++ -*-===//
//
// Part of spec-serve. Connection threads submit sequences to a bounded
// queue; the scheduler takes them in arrival order and drives the runtime,
// in one of two ways. Slots: each sequence is one specrt_generate call on a
// slot thread of its own (the speculative decode loop; sequences run side
// by side, each reading the weights itself). Batched: one thread runs
// rounds of the artifact's batched target (specrt_batch_*), every active
// sequence's next token in one forward; sequences join and leave between
// rounds. The queue, admission, streaming and cancellation are the same.
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
  /// Batched rounds (the artifact's, specc --max-batch): one thread, `slots`
  /// the batch's slots; greedy.
  bool batched = false;
  /// When batched rounds speculate (with the artifact's draft).
  specrt_speculation batchSpeculation = SPECRT_SPECULATE_ADAPTIVE;
  /// Prompt tokens batched rounds prefill per round (0: a whole prompt
  /// when its sequence joins; specrt_batch_set_prefill_chunk).
  size_t prefillChunk = 0;
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
  void runBatch();
  /// The batch thread's admissions: up to `free` sequences from the queue,
  /// now active (under the lock).
  std::vector<std::shared_ptr<Sequence>> admit(size_t free);
  /// Ends what finished in a round (under the lock).
  void retire(const std::vector<std::shared_ptr<Sequence>> &finished);

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
