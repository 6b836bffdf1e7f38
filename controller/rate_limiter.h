// Token bucket for API writes: a burst of flips must not turn into a write storm against the
// API server (client-go's client-side limiter plays the same role).
#pragma once

#include <atomic>
#include <mutex>

#include "common/clock.h"

namespace ds {

class RateLimiter {
 public:
  // qps <= 0 disables limiting.
  RateLimiter(double qps, double burst);
  // Blocks until a token is available. Returns false if *stop turned true meanwhile.
  bool Acquire(const std::atomic<bool>* stop);

 private:
  const double qps_, burst_;
  std::mutex mu_;
  double tokens_;
  TimePoint last_;
};

}  // namespace ds
