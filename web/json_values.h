// How the JSON endpoints (/nodes, /rebalance, /api/v1/state) write numbers and finish a body,
// kept in one place so that they cannot drift apart. JSON has no NaN or infinity: each writer
// below says what becomes of them.
#pragma once

#include <cmath>
#include <string>

#include "common/json_util.h"

namespace ds {

// A number; NaN and infinities become the strings "NaN", "+Inf" and "-Inf", the way Prometheus'
// JSON API writes them.
inline void WriteNumber(JsonWriter& w, double v) {
  if (std::isnan(v))
    w.String("NaN");
  else if (std::isinf(v))
    w.String(v > 0 ? "+Inf" : "-Inf");
  else
    w.Double(v);
}

// A node's value for the page: null for NaN and infinities, which the page shows as "no value".
inline void WriteValue(JsonWriter& w, double v) {
  if (std::isfinite(v))
    w.Double(v);
  else
    w.Null();
}

// The finished document as a response body, ending in a newline like every body web/ serves.
inline std::string JsonBody(const rapidjson::StringBuffer& sb) {
  return std::string(sb.GetString(), sb.GetSize()) + "\n";
}

}  // namespace ds
