#include "controller/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace ds {

RateLimiter::RateLimiter(double qps, double burst)
    : qps_(qps), burst_(std::max(1.0, burst)), tokens_(std::max(1.0, burst)),
      last_(std::chrono::steady_clock::now()) {}

bool RateLimiter::Acquire(const std::atomic<bool>* stop) {
  if (qps_ <= 0) return !stop->load();
  while (!stop->load()) {
    Duration wait;
    {
      std::lock_guard<std::mutex> l(mu_);
      TimePoint now = std::chrono::steady_clock::now();
      tokens_ = std::min(burst_, tokens_ + ToSeconds(now - last_) * qps_);
      last_ = now;
      if (tokens_ >= 1) {
        tokens_ -= 1;
        return true;
      }
      wait = FromSeconds((1 - tokens_) / qps_);
    }
    std::this_thread::sleep_for(std::min(wait, Duration(std::chrono::milliseconds(100))));
  }
  return false;
}

}  // namespace ds
