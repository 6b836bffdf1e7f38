// Time source seam: the decision logic and backoff take time from a Clock so tests can drive
// `for` durations, grace periods and hysteresis deterministically with FakeClock.
#pragma once

#include <chrono>
#include <mutex>

namespace ds {

using Duration = std::chrono::steady_clock::duration;
using TimePoint = std::chrono::steady_clock::time_point;

inline double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }
inline Duration FromSeconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time, for intervals and deadlines.
  virtual TimePoint Now() const = 0;
  // Wall-clock seconds since the epoch, for display only.
  virtual double WallSeconds() const = 0;
};

class RealClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  double WallSeconds() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// Thread-safe manual clock for tests.
class FakeClock : public Clock {
 public:
  TimePoint Now() const override {
    std::lock_guard<std::mutex> l(mu_);
    return now_;
  }
  double WallSeconds() const override { return 1.8e9 + ToSeconds(Now().time_since_epoch()); }
  void Advance(Duration d) {
    std::lock_guard<std::mutex> l(mu_);
    now_ += d;
  }
  void AdvanceSeconds(double s) { Advance(FromSeconds(s)); }

 private:
  mutable std::mutex mu_;
  TimePoint now_{std::chrono::hours(1000)};
};

}  // namespace ds
