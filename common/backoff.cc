#include "common/backoff.h"

#include <algorithm>

namespace ds {

Backoff::Backoff(double initial_seconds, double max_seconds, double factor, double jitter,
                 unsigned seed)
    : initial_(initial_seconds),
      max_(max_seconds),
      factor_(factor),
      jitter_(jitter),
      current_(initial_seconds),
      rng_(seed) {}

Duration Backoff::Next() {
  std::uniform_real_distribution<double> dist(0.0, jitter_);
  double d = current_ * (1.0 + dist(rng_));
  current_ = std::min(max_, current_ * factor_);
  return FromSeconds(std::min(d, max_ * (1.0 + jitter_)));
}

}  // namespace ds
