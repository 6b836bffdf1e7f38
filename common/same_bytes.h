// Short byte comparisons on the hot paths of decoding and matching (a sample's timestamp text,
// node names and addresses): memcmp is a library call that costs more than the compare itself
// when it runs once per sample of a 10,000-series answer.
#pragma once

#include <cstdint>
#include <cstring>

namespace ds {

// memcmp(a, b, n) == 0, without a library call for 8-16 bytes.
inline bool SameBytes(const char* a, const char* b, size_t n) {
  if (n < 8 || n > 16) return std::memcmp(a, b, n) == 0;
  uint64_t a0, a1, b0, b1;  // the first and the last eight bytes (overlapping below 16)
  std::memcpy(&a0, a, 8);
  std::memcpy(&b0, b, 8);
  std::memcpy(&a1, a + n - 8, 8);
  std::memcpy(&b1, b + n - 8, 8);
  return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

}  // namespace ds
