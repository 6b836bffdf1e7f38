// Exact decimal-to-double conversion for the common short forms ("42", "-3.25",
// "1795303219.437"), shared by the Prometheus value and JSON number parsers. At 10,000 series
// two conversions per sample made std::from_chars a visible part of a decode.
#pragma once

#include <cfloat>
#include <cstddef>
#include <cstdint>

namespace ds {

// Reads -?[0-9]+(\.[0-9]+)? from *pos on (not past e), stopping at the first byte that cannot
// continue it, and converts it when it has at most 19 digits, a mantissa (digits without the
// point) <= 2^53 and at most 22 fraction digits: then *pos moves past it. Returns false (and
// leaves *pos) otherwise. Within those bounds the mantissa and the power of ten are exact
// doubles, so the one IEEE division is correctly rounded: the result is bit-identical to
// from_chars (Clinger's fast path). Needs evaluation in plain double precision (not x87).
// The fast range decoder reads a point's time and value with it without first finding where
// each ends (range_query.cc).
[[gnu::always_inline]] inline bool ReadFastDecimal(const char** pos, const char* e, double* out) {
  if constexpr (FLT_EVAL_METHOD != 0) return false;
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char* p = *pos;
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
  // A mantissa that may have wrapped, or one beyond the exact range.
  if (int_digits + frac_digits > 19 || m > (uint64_t{1} << 53) || frac_digits > 22) return false;
  double v = static_cast<double>(m);
  if (frac_digits > 0) v /= kPow10[frac_digits];
  *out = negative ? -v : v;
  *pos = p;
  return true;
}

// Converts [b, e) when it is exactly what ReadFastDecimal reads (the common short forms "42",
// "-3.25", "1795303219.437"); returns false otherwise (an exponent, a sign, trailing bytes, too
// many digits), and the caller must use std::from_chars.
inline bool FastDecimal(const char* b, const char* e, double* out) {
  const char* p = b;
  double v;
  if (!ReadFastDecimal(&p, e, &v) || p != e) return false;
  *out = v;
  return true;
}

}  // namespace ds
