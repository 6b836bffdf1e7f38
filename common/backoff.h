// Jittered exponential backoff (client-go's reflector uses 800 ms -> 30 s): spreads reconnects of
// many controllers so an API server that comes back is not hit by all of them at once.
#pragma once

#include <random>

#include "common/clock.h"

namespace ds {

class Backoff {
 public:
  Backoff(double initial_seconds = 0.8, double max_seconds = 30, double factor = 2.0,
          double jitter = 0.5, unsigned seed = std::random_device{}());
  // The delay before the next attempt; each call grows the base delay up to the maximum.
  // The result lies in [base, base * (1 + jitter)].
  Duration Next();
  // Call after a success so the next failure starts from the initial delay.
  void Reset() { current_ = initial_; }

 private:
  const double initial_, max_, factor_, jitter_;
  double current_;
  std::mt19937 rng_;
};

}  // namespace ds
