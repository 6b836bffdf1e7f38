// One log line per distinct problem per period: a failing rule or an unmatched series would
// otherwise repeat every cycle and bury everything else.
#pragma once

#include <algorithm>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/mutex.h"

namespace ds {

class LogThrottle {
 public:
  explicit LogThrottle(double period_seconds) : period_(FromSeconds(period_seconds)) {}
  // True if `key` was not logged within the period (and records it as logged now).
  bool ShouldLog(const std::string& key, TimePoint now) {
    MutexLock l(&mu_);
    auto [it, inserted] = last_.try_emplace(key, now);
    if (inserted) {
      // Keys often name nodes, and nodes come and go for months (autoscaling): forget keys
      // logged more than a period ago, which would log again anyway, so the map holds only what
      // was logged within a period. Pruning when the map has doubled keeps it amortized O(1).
      if (last_.size() >= prune_at_) {
        std::erase_if(last_, [&](const auto& e) { return now - e.second >= period_; });
        prune_at_ = std::max<size_t>(kMinPruneAt, 2 * last_.size());
      }
      return true;
    }
    if (now - it->second < period_) return false;
    it->second = now;
    return true;
  }

  size_t size() {
    MutexLock l(&mu_);
    return last_.size();
  }

 private:
  static constexpr size_t kMinPruneAt = 1024;
  const Duration period_;
  Mutex mu_;
  std::unordered_map<std::string, TimePoint> last_ GUARDED_BY(mu_);
  size_t prune_at_ GUARDED_BY(mu_) = kMinPruneAt;
};

}  // namespace ds
