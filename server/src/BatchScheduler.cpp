//===- BatchScheduler.cpp - batched rounds over the runtime's slots -------===//
//
// The batch thread of a Scheduler with SchedulerOptions::batched: between
// rounds it admits queued sequences into free slots (each one's prefill
// gives its first token, at once or from the round that prefills the
// prompt's last chunk) and retires finished ones; each round gives every
// active sequence its next tokens in one target forward per run of active
// slots (specrt_batch_step), speculating as SchedulerOptions say.
//
//===----------------------------------------------------------------------===//

#include "specserve/Scheduler.h"

#include <algorithm>
#include <thread>

using namespace specserve;

namespace {
/// A sequence in a slot of the batch.
struct Occupant {
  std::shared_ptr<Sequence> sequence;
  int64_t generated = 0;
};

/// The batch thread's view of the runtime's batch.
class BatchRun {
public:
  BatchRun(specrt_model *model, const SchedulerOptions &options,
           Metrics &metrics)
      : metrics(metrics) {
    specrt_model_info info;
    specrt_get_model_info(model, &info);
    eos = info.eos_token_id;
    if (specrt_batch_open(model, &batch) != SPECRT_OK)
      return;
    slots.resize(specrt_batch_slots(batch));
    specrt_batch_set_speculation(batch, options.batchSpeculation);
    if (specrt_batch_set_prefill_chunk(batch, options.prefillChunk) !=
        SPECRT_OK) { // spec-serve checks first; a library user may not
      specrt_batch_close(batch);
      batch = nullptr;
    }
  }
  ~BatchRun() { specrt_batch_close(batch); }
  bool opened() const { return batch != nullptr; }

  bool empty() const {
    return std::none_of(slots.begin(), slots.end(),
                        [](const Occupant &o) { return o.sequence; });
  }
  size_t free() const {
    return std::count_if(slots.begin(), slots.end(),
                         [](const Occupant &o) { return !o.sequence; });
  }
  void join(const std::shared_ptr<Sequence> &sequence);
  void round();
  void cancelRequested();

  /// Sequences that ended since the last call.
  std::vector<std::shared_ptr<Sequence>> finished;

private:
  void deliver(int64_t slot, int64_t token);
  void end(int64_t slot, Finish finish, std::string error = {});

  Metrics &metrics;
  specrt_batch *batch = nullptr;
  int64_t eos = -1;
  std::vector<Occupant> slots;
};

void BatchRun::join(const std::shared_ptr<Sequence> &sequence) {
  const SequenceRequest &request = sequence->request();
  metrics.countAdmitted(
      static_cast<int64_t>(request.prompt.size()),
      std::chrono::duration<double>(Clock::now() - sequence->arrival())
          .count());
  if (sequence->cancelRequested()) { // its client left while it waited
    metrics.countFinished(Finish::Cancelled, {});
    sequence->finish(Finish::Cancelled, {});
    finished.push_back(sequence);
    return;
  }
  int64_t slot = -1, first = -1;
  specrt_status status =
      specrt_batch_add_seeded(batch, request.prompt.data(),
                              request.prompt.size(), request.seed, &slot,
                              &first);
  if (status != SPECRT_OK) {
    SequenceStats stats;
    stats.runtimeStatus = status;
    metrics.countFinished(Finish::Error, stats);
    sequence->finish(Finish::Error, stats, specrt_last_error());
    finished.push_back(sequence);
    return;
  }
  slots[slot] = Occupant{sequence, 0};
  if (first >= 0) { // else its prompt enters a chunk per round
    metrics.countBatchPrefill(1);
    deliver(slot, first);
  }
}

/// Streams `token` of the sequence in `slot` and ends it where its request
/// says: EOS or a stop token, or max_tokens.
void BatchRun::deliver(int64_t slot, int64_t token) {
  Occupant &o = slots[slot];
  const SequenceRequest &request = o.sequence->request();
  metrics.countToken(o.generated == 0, o.sequence->append(token));
  ++o.generated;
  const std::vector<int64_t> &stops = request.stopTokens;
  if (token == eos || std::find(stops.begin(), stops.end(), token) != stops.end())
    end(slot, Finish::Stop);
  else if (o.generated >= request.maxTokens)
    end(slot, Finish::Length);
}

void BatchRun::end(int64_t slot, Finish finish, std::string error) {
  Occupant &o = slots[slot];
  // Its forwards and rounds were shared, counted by countBatchStep.
  SequenceStats stats;
  specrt_batch_remove(batch, slot);
  // Counted before the client hears of the end (/metrics read after a
  // response includes it).
  metrics.countFinished(finish, stats);
  o.sequence->finish(finish, stats, std::move(error));
  finished.push_back(o.sequence);
  o = Occupant{};
}

void BatchRun::cancelRequested() {
  for (size_t s = 0; s < slots.size(); ++s)
    if (slots[s].sequence && slots[s].sequence->cancelRequested())
      end(static_cast<int64_t>(s), Finish::Cancelled);
}

/// One round; a sequence it did not advance has a full context. A
/// sequence that ends amid its tokens of a round drops the rest.
void BatchRun::round() {
  size_t capacity = specrt_batch_step_capacity(batch);
  std::vector<int64_t> stepped(capacity), tokens(capacity);
  size_t count = 0;
  specrt_batch_stats before, after;
  specrt_batch_get_stats(batch, &before);
  if (specrt_batch_step(batch, stepped.data(), tokens.data(), &count) !=
      SPECRT_OK) {
    std::string error = specrt_last_error();
    for (size_t s = 0; s < slots.size(); ++s)
      if (slots[s].sequence)
        end(static_cast<int64_t>(s), Finish::Error, error);
    return;
  }
  specrt_batch_get_stats(batch, &after);
  if (after.steps > before.steps) // not when every context was full
    metrics.countBatchStep(after.last_speculation,
                           after.target_forwards - before.target_forwards);
  metrics.countBatchPrefill(after.prefill_forwards - before.prefill_forwards);
  std::vector<char> advanced(slots.size(), 0);
  for (size_t i = 0; i < count; ++i) {
    advanced[stepped[i]] = 1;
    if (slots[stepped[i]].sequence)
      deliver(stepped[i], tokens[i]);
  }
  // A sequence whose prompt is still being prefilled has no tokens yet.
  for (size_t s = 0; s < slots.size(); ++s)
    if (slots[s].sequence && slots[s].generated && !advanced[s])
      end(static_cast<int64_t>(s), Finish::Length);
}
} // namespace

std::vector<std::shared_ptr<Sequence>> Scheduler::admit(size_t free) {
  std::vector<std::shared_ptr<Sequence>> admitted;
  while (!queue_.empty() && admitted.size() < free) {
    admitted.push_back(std::move(queue_.front()));
    queue_.pop_front();
    active_.push_back(admitted.back());
  }
  return admitted;
}

void Scheduler::retire(const std::vector<std::shared_ptr<Sequence>> &finished) {
  for (const auto &sequence : finished)
    active_.erase(std::find(active_.begin(), active_.end(), sequence));
  if (queue_.empty() && active_.empty())
    idle_.notify_all();
}

void Scheduler::runBatch() {
  BatchRun run(model_, options_, metrics_);
  std::string refusal = run.opened() ? "" : specrt_last_error();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] {
      return exiting_ || !queue_.empty() || !active_.empty();
    });
    if (exiting_ && queue_.empty() && active_.empty())
      return;
    std::vector<std::shared_ptr<Sequence>> admitted =
        admit(run.opened() ? run.free() : queue_.size());
    lock.unlock();
    if (!run.opened()) { // spec-serve checks first; a library user may not
      for (const auto &sequence : admitted) {
        SequenceStats stats;
        stats.runtimeStatus = SPECRT_ERROR_UNSUPPORTED;
        metrics_.countFinished(Finish::Error, stats);
        sequence->finish(Finish::Error, stats, refusal);
      }
      lock.lock();
      retire(admitted);
      continue;
    }
    for (const auto &sequence : admitted)
      run.join(sequence);
    run.cancelRequested();
    if (!run.empty())
      run.round();
    if (options_.tokenDelay.count() > 0)
      std::this_thread::sleep_for(options_.tokenDelay);
    lock.lock();
    retire(run.finished);
    run.finished.clear();
  }
}
