// Token bucket for API writes: a burst of flips must not turn into a write storm against the
// API server (client-go's client-side limiter plays the same role). Waits on the Clock, so tests
// check the pacing on fake time.
#pragma once

#include <atomic>

#include "common/clock.h"
#include "common/mutex.h"

namespace ds {

class RateLimiter {
 public:
  // qps <= 0 disables limiting. The bucket starts full. `clock` must outlive the limiter.
  RateLimiter(double qps, double burst, const Clock* clock);
  // Blocks until a token is available and takes it. Returns false (no token taken) if *stop
  // turned true meanwhile. Thread-safe.
  bool Acquire(const std::atomic<bool>* stop);

 private:
  const double qps_, burst_;
  const Clock* const clock_;
  Mutex mu_;
  double tokens_ GUARDED_BY(mu_);
  TimePoint last_ GUARDED_BY(mu_);
};

}  // namespace ds
