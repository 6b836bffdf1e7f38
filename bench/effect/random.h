// Seeded randomness for the effect simulation, written out (SplitMix64, Box-Muller) rather than
// taken from <random>, whose distributions differ between standard libraries: a seed must give
// the same cluster with GCC and clang.
#pragma once

#include <cmath>
#include <cstdint>

#include "bench/effect/params.h"

namespace effect {

// SplitMix64's output function: a well-mixed 64-bit value for any input.
inline uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return Mix(state_);
  }
  // In [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Normal() {
    const double u = 1.0 - Uniform();  // (0, 1]: log is finite
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2 * M_PI * Uniform());
  }
  double Draw(const LogNormal& d) { return d.median * std::exp(d.sigma * Normal()); }
  // Waiting time of a Poisson process with this rate (per second); infinite for rate 0.
  double Exponential(double rate) {
    return rate > 0 ? -std::log(1.0 - Uniform()) / rate : INFINITY;
  }

 private:
  uint64_t state_;
};

}  // namespace effect
