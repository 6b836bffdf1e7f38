#include "common/clock.h"

#include <algorithm>
#include <thread>

namespace ds {

bool RealClock::SleepUntil(TimePoint deadline, const std::atomic<bool>* stop) const {
  // Poll the stop flag often enough that a shutdown is not held up by a long wait (a 30 s
  // backoff, a Retry-After); 20 ms costs nothing measurable.
  constexpr auto kPoll = std::chrono::milliseconds(20);
  for (;;) {
    if (stop != nullptr && stop->load()) return false;
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return true;
    std::this_thread::sleep_for(std::min<Duration>(deadline - now, kPoll));
  }
}

}  // namespace ds
