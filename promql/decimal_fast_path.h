// Exact decimal-to-double conversion for the common short forms ("42", "-3.25",
// "1795303219.437"), shared by the Prometheus value and JSON number parsers. At 10,000 series
// two conversions per sample made std::from_chars a visible part of a decode.
#pragma once

#include <cfloat>
#include <cstddef>
#include <cstdint>

namespace ds {

// Converts [b, e) when it is -?[0-9]+(\.[0-9]+)? with at most 19 digits, a mantissa (digits
// without the point) <= 2^53 and at most 22 fraction digits; returns false otherwise, and the
// caller must use std::from_chars. Within those bounds the mantissa and the power of ten are
// exact doubles, so the one IEEE division is correctly rounded: the result is bit-identical to
// from_chars (Clinger's fast path). Needs evaluation in plain double precision (not x87).
inline bool FastDecimal(const char* b, const char* e, double* out) {
  if constexpr (FLT_EVAL_METHOD != 0) return false;
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char* p = b;
  const bool negative = p < e && *p == '-';
  if (negative) ++p;
  uint64_t m = 0;
  const char* int_start = p;
  while (p < e && *p >= '0' && *p <= '9') m = m * 10 + static_cast<uint64_t>(*p++ - '0');
  const auto int_digits = static_cast<size_t>(p - int_start);
  if (int_digits == 0) return false;
  size_t frac_digits = 0;
  if (p < e && *p == '.') {
    const char* frac_start = ++p;
    while (p < e && *p >= '0' && *p <= '9') m = m * 10 + static_cast<uint64_t>(*p++ - '0');
    frac_digits = static_cast<size_t>(p - frac_start);
    if (frac_digits == 0) return false;
  }
  // Anything else (an exponent, a sign, trailing bytes) or a mantissa that may have wrapped.
  if (p != e || int_digits + frac_digits > 19 || m > (uint64_t{1} << 53) || frac_digits > 22)
    return false;
  double v = static_cast<double>(m);
  if (frac_digits > 0) v /= kPow10[frac_digits];
  *out = negative ? -v : v;
  return true;
}

}  // namespace ds
