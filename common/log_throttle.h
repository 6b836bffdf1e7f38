// One log line per distinct problem per period: a failing rule or an unmatched series would
// otherwise repeat every cycle and bury everything else.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>

#include "common/clock.h"

namespace ds {

class LogThrottle {
 public:
  explicit LogThrottle(double period_seconds) : period_(FromSeconds(period_seconds)) {}
  // True if `key` was not logged within the period (and records it as logged now).
  bool ShouldLog(const std::string& key, TimePoint now) {
    std::lock_guard<std::mutex> l(mu_);
    auto [it, inserted] = last_.try_emplace(key, now);
    if (inserted) return true;
    if (now - it->second < period_) return false;
    it->second = now;
    return true;
  }

 private:
  const Duration period_;
  std::mutex mu_;
  std::unordered_map<std::string, TimePoint> last_;
};

}  // namespace ds
