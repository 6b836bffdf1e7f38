// A rule's value as people read it, in the rule's unit: "91.5 %", "119.4 MiB", "1.25 cores",
// "90 s", or a plain number with an SI prefix ("229.7 M") -- for logs, Events, /nodes and the
// page alike; JSON keeps the raw number beside it.
#pragma once

#include <string>

namespace ds {

enum class ValueUnit { kNone, kPercent, kBytes, kCores, kSeconds };

// "none", "percent", "bytes", "cores", "seconds": the `unit:` of a rule.
const char* ValueUnitName(ValueUnit u);
// Parses a `unit:` name; false for any other.
bool ParseValueUnit(const std::string& name, ValueUnit* out);
// Four significant digits at most, trailing zeros dropped. Bytes take binary prefixes (KiB, MiB,
// GiB, TiB: what kubectl and the kubelet's thresholds use); a plain number takes k, M, G, T from
// 10,000 up. NaN and infinities are written as such.
std::string FormatValue(double v, ValueUnit u);

}  // namespace ds
