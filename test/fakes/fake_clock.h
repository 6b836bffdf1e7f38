// Manual clock for tests and simulations. Waiting never blocks: a sleep or a timed wait moves
// fake time forward to its deadline at once, so code that sleeps (backoff, rate limits, resync
// periods, intervals) runs on simulated time, deterministically and at full speed.
#pragma once

#include <algorithm>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"

namespace ds {

class FakeClock : public Clock {
 public:
  TimePoint Now() const override {
    MutexLock l(&mu_);
    return now_;
  }
  double WallSeconds() const override { return 1.8e9 + ToSeconds(Now().time_since_epoch()); }

  bool SleepUntil(TimePoint deadline, const std::atomic<bool>* stop) const override {
    if (stop != nullptr && stop->load()) return false;
    MutexLock l(&mu_);
    sleeps_.push_back(std::max(Duration::zero(), deadline - now_));
    now_ = std::max(now_, deadline);
    return true;
  }
  using Clock::WaitUntil;  // the Mutex form, which this override would hide
  bool WaitUntil(std::unique_lock<std::mutex>&, std::condition_variable&, TimePoint deadline,
                 const std::function<bool()>& pred) const override {
    if (pred()) return true;
    {
      MutexLock l(&mu_);
      sleeps_.push_back(std::max(Duration::zero(), deadline - now_));
      now_ = std::max(now_, deadline);
    }
    return pred();
  }

  void Advance(Duration d) {
    MutexLock l(&mu_);
    now_ += d;
  }
  void AdvanceSeconds(double s) { Advance(FromSeconds(s)); }
  // Every wait so far, as the time it skipped (0 for a deadline already past).
  std::vector<Duration> sleeps() const {
    MutexLock l(&mu_);
    return sleeps_;
  }

 private:
  mutable Mutex mu_;
  mutable TimePoint now_ GUARDED_BY(mu_) = TimePoint(std::chrono::hours(1000));
  mutable std::vector<Duration> sleeps_ GUARDED_BY(mu_);
};

}  // namespace ds
