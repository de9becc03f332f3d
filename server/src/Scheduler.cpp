//===- Scheduler.cpp - the thread that runs the decode loops --------------===//

#include "specserve/Scheduler.h"

#include <algorithm>

using namespace specserve;

Scheduler::Scheduler(specrt_model *model, SchedulerOptions options,
                     Metrics &metrics)
    : model_(model), options_(options), metrics_(metrics) {
  if (options_.batched) {
    slots_.emplace_back([this] { runBatch(); });
    return;
  }
  for (size_t i = 0; i < std::max<size_t>(1, options_.slots); ++i)
    slots_.emplace_back([this] { runSlot(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = exiting_ = true;
    for (auto &sequence : queue_)
      sequence->cancel();
    for (auto &sequence : active_)
      sequence->cancel();
  }
  wake_.notify_all();
  for (std::thread &slot : slots_)
    slot.join();
}

Scheduler::Admission Scheduler::submit(std::shared_ptr<Sequence> sequence) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_)
      return Admission::Stopping;
    if (queue_.size() >= options_.queueCapacity)
      return Admission::QueueFull;
    queue_.push_back(std::move(sequence));
  }
  wake_.notify_one();
  return Admission::Accepted;
}

bool Scheduler::drain(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_ = true;
  auto empty = [&] { return queue_.empty() && active_.empty(); };
  if (idle_.wait_until(lock, deadline, empty))
    return true;
  for (auto &sequence : queue_)
    sequence->cancel();
  for (auto &sequence : active_)
    sequence->cancel();
  idle_.wait(lock, empty);
  return false;
}

SchedulerGauges Scheduler::gauges() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {queue_.size(), active_.size(),
          options_.batched ? options_.slots : slots_.size(),
          options_.queueCapacity};
}

void Scheduler::runSlot() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return exiting_ || !queue_.empty(); });
    if (queue_.empty())
      return;
    std::shared_ptr<Sequence> sequence = std::move(queue_.front());
    queue_.pop_front();
    active_.push_back(sequence);
    lock.unlock();
    generate(*sequence);
    lock.lock();
    active_.erase(std::find(active_.begin(), active_.end(), sequence));
    if (queue_.empty() && active_.empty())
      idle_.notify_all();
  }
}

namespace {
/// What the runtime's callbacks see of the sequence they generate.
struct Generation {
  Sequence &sequence;
  Metrics &metrics;
  std::chrono::microseconds delay;
  bool first = true;

  static void onToken(int64_t token, void *user) {
    auto &g = *static_cast<Generation *>(user);
    g.metrics.countToken(g.first, g.sequence.append(token));
    g.first = false;
    if (g.delay.count() > 0)
      std::this_thread::sleep_for(g.delay);
  }
  static int shouldStop(void *user) {
    return static_cast<Generation *>(user)->sequence.cancelRequested();
  }
};

Finish finishOf(specrt_stop_reason reason) {
  switch (reason) {
  case SPECRT_STOP_TOKEN: return Finish::Stop;
  case SPECRT_STOP_CANCELLED: return Finish::Cancelled;
  case SPECRT_STOP_MAX_TOKENS:
  case SPECRT_STOP_CONTEXT: return Finish::Length;
  }
  return Finish::Length;
}
} // namespace

void Scheduler::generate(Sequence &sequence) {
  const SequenceRequest &request = sequence.request();
  metrics_.countAdmitted(
      static_cast<int64_t>(request.prompt.size()),
      std::chrono::duration<double>(Clock::now() - sequence.arrival()).count());
  SequenceStats stats;
  if (sequence.cancelRequested()) { // its client left while it waited
    metrics_.countFinished(Finish::Cancelled, stats);
    sequence.finish(Finish::Cancelled, stats);
    return;
  }
  Generation generation{sequence, metrics_, options_.tokenDelay};
  specrt_generate_options g;
  specrt_generate_options_init(&g);
  g.max_new_tokens = request.maxTokens;
  g.seed = request.seed;
  g.speculative = options_.speculative;
  g.stop_tokens = request.stopTokens.data();
  g.num_stop_tokens = request.stopTokens.size();
  g.temperature = request.temperature;
  g.top_p = request.topP;
  g.on_token = Generation::onToken;
  g.should_stop = Generation::shouldStop;
  g.user_data = &generation;
  specrt_result result;
  specrt_status status = specrt_generate(model_, request.prompt.data(),
                                         request.prompt.size(), &g, &result);
  if (status != SPECRT_OK) {
    stats.runtimeStatus = status;
    metrics_.countFinished(Finish::Error, stats);
    sequence.finish(Finish::Error, stats, specrt_last_error());
    return;
  }
  specrt_model_info info;
  specrt_get_model_info(model_, &info);
  stats.targetForwards = result.target_forwards;
  stats.rounds = result.rounds;
  stats.proposals = options_.speculative ? info.proposals : 0;
  stats.acceptedPerPosition.assign(
      result.accepted_per_position,
      result.accepted_per_position + result.num_positions);
  Finish finish = finishOf(result.stop_reason);
  specrt_result_free(&result);
  // Counted before the client hears of the end, so that /metrics read after
  // a response includes it.
  metrics_.countFinished(finish, stats);
  sequence.finish(finish, stats);
}
