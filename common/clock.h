// Time source seam. Everything that reads the time *or waits for it* goes through a Clock, so
// tests (and simulations) drive `for` durations, grace periods, hysteresis, backoff, rate limits
// and resync periods on fake time (test/fakes/fake_clock.h) instead of sleeping.
//
// Measuring how long work took (cycle phases, query latency for /metrics) is not behaviour and
// uses Stopwatch below, which always reads the real monotonic clock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "common/mutex.h"

namespace ds {

using Duration = std::chrono::steady_clock::duration;
using TimePoint = std::chrono::steady_clock::time_point;

inline double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }
// Saturating: NaN and negative values give zero, anything above about a century gives a
// century, so that no flag or server-sent value can overflow the clock's 64-bit nanoseconds
// (which would turn a deadline into the past and a wait into a busy loop).
inline Duration FromSeconds(double s) {
  constexpr double kMaxSeconds = 100.0 * 365 * 86400;
  if (!(s > 0)) return Duration::zero();
  return std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(s < kMaxSeconds ? s : kMaxSeconds));
}

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time, for intervals and deadlines.
  virtual TimePoint Now() const = 0;
  // Wall-clock seconds since the epoch, for display and API timestamps only.
  virtual double WallSeconds() const = 0;
  // Blocks until `deadline` or until *stop turns true (stop may be null). Returns false when it
  // returned because of *stop. Thread-safe.
  virtual bool SleepUntil(TimePoint deadline, const std::atomic<bool>* stop) const = 0;
  // Waits on `cv` (with `lock` held, as std::condition_variable does) until pred() is true or
  // `deadline` passes. Returns pred(). Thread-safe.
  virtual bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         TimePoint deadline, const std::function<bool()>& pred) const = 0;
  // The same wait with common/mutex.h's types, which the thread-safety analysis checks: *mu is
  // held, and pred() runs with it held (annotate the lambda REQUIRES(mu_)). It goes through the
  // virtual form above, so a fake clock serves both (every product caller uses this one).
  bool WaitUntil(Mutex* mu, CondVar* cv, TimePoint deadline,
                 const std::function<bool()>& pred) const REQUIRES(mu) {
    return cv->WaitWithStd(
        mu, [&](std::unique_lock<std::mutex>& lock, std::condition_variable& std_cv) {
          return WaitUntil(lock, std_cv, deadline, pred);
        });
  }

  bool SleepFor(Duration d, const std::atomic<bool>* stop) const {
    return SleepUntil(Now() + d, stop);
  }
};

class RealClock : public Clock {
 public:
  using Clock::WaitUntil;  // the Mutex form, which an override would hide
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  double WallSeconds() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  bool SleepUntil(TimePoint deadline, const std::atomic<bool>* stop) const override;
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, const std::function<bool()>& pred) const override {
    return cv.wait_until(lock, deadline, pred);
  }
};

// Real elapsed time, for reporting what work cost. Never use it to decide anything.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ds
