//===- Sequence.cpp - one request's generation, between two threads -------===//

#include "specserve/Sequence.h"

using namespace specserve;

Sequence::Sequence(SequenceRequest request)
    : request_(std::move(request)), arrival_(Clock::now()),
      lastToken_(arrival_) {}

double Sequence::append(int64_t token) {
  Clock::time_point now = Clock::now();
  double gap;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tokens_.push_back(token);
    gap = std::chrono::duration<double>(now - lastToken_).count();
    lastToken_ = now;
  }
  changed_.notify_all();
  return gap;
}

void Sequence::finish(Finish finish, SequenceStats stats, std::string error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finish_ = finish;
    stats_ = std::move(stats);
    error_ = std::move(error);
  }
  changed_.notify_all();
}

Sequence::Progress Sequence::waitPast(size_t seen,
                                      std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] {
    return tokens_.size() > seen || finish_ != Finish::Running;
  });
  Progress progress;
  if (tokens_.size() > seen)
    progress.tokens.assign(tokens_.begin() + seen, tokens_.end());
  progress.finish = finish_;
  if (finish_ != Finish::Running) {
    progress.error = error_;
    progress.stats = stats_;
  }
  return progress;
}
