#include "promql/query_result.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "promql/decimal_fast_path.h"

namespace ds {

bool ParsePromValue(std::string_view s, double* out) {
  // Most values are short plain decimals; the fast path takes exactly those, bit-exact.
  if (FastDecimal(s.data(), s.data() + s.size(), out)) return true;
  if (s == "NaN") {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s == "+Inf" || s == "Inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-Inf") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (s.empty()) return false;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ptr != s.data() + s.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    // Overflow means +/-Inf and underflow 0, which is what the value means.
    bool negative = s.front() == '-';
    size_t e = s.find_first_of("eE");
    bool big_exponent = e != std::string_view::npos && e + 1 < s.size() && s[e + 1] != '-';
    v = big_exponent ? (negative ? -INFINITY : INFINITY) : (negative ? -0.0 : 0.0);
  } else if (ec != std::errc()) {
    return false;
  }
  // from_chars accepts "inf"/"nan" spellings Prometheus never sends; the real ones were handled.
  if (std::isnan(v) || (std::isinf(v) && ec == std::errc())) return false;
  *out = v;
  return true;
}

void DrainToSink(QueryResult* result, SampleSink* sink) {
  LabelViews views;
  for (const auto& s : result->samples) {
    views.clear();
    for (const auto& [k, v] : s.metric) views.emplace_back(k, v);
    sink->AddAt(views, s.value, s.timestamp);
  }
  result->sample_count = result->samples.size();
  result->samples.clear();
}

}  // namespace ds
