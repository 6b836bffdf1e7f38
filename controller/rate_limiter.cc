#include "controller/rate_limiter.h"

#include <algorithm>

namespace ds {

RateLimiter::RateLimiter(double qps, double burst, const Clock* clock)
    : qps_(qps),
      burst_(std::max(1.0, burst)),
      clock_(clock),
      tokens_(std::max(1.0, burst)),
      last_(clock->Now()) {}

bool RateLimiter::Acquire(const std::atomic<bool>* stop) {
  if (qps_ <= 0) return !stop->load();
  while (!stop->load()) {
    TimePoint ready;
    {
      MutexLock l(&mu_);
      TimePoint now = clock_->Now();
      tokens_ = std::min(burst_, tokens_ + ToSeconds(now - last_) * qps_);
      last_ = now;
      if (tokens_ >= 1) {
        tokens_ -= 1;
        return true;
      }
      ready = now + FromSeconds((1 - tokens_) / qps_);
    }
    // Another writer may take the token first; then this one waits again.
    clock_->SleepUntil(ready, stop);
  }
  return false;
}

}  // namespace ds
