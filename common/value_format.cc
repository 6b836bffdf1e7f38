#include "common/value_format.h"

#include <cmath>
#include <cstdio>

namespace ds {
namespace {

// At most 4 significant digits (1 decimal from 100 up, 2 below), no trailing zeros.
std::string Short(double v) {
  const double a = std::fabs(v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", a >= 1000 ? 0 : a >= 100 ? 1 : 2, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

std::string Scaled(double v, double base, const char* const* prefixes, double from,
                   const char* suffix) {
  double a = std::fabs(v);
  int i = 0;
  if (a >= from)
    while (i < 4 && a >= base) {
      a /= base;
      v /= base;
      ++i;
    }
  return Short(v) + " " + prefixes[i] + suffix;
}

}  // namespace

const char* ValueUnitName(ValueUnit u) {
  switch (u) {
    case ValueUnit::kPercent:
      return "percent";
    case ValueUnit::kBytes:
      return "bytes";
    case ValueUnit::kCores:
      return "cores";
    case ValueUnit::kSeconds:
      return "seconds";
    case ValueUnit::kNone:
      break;
  }
  return "none";
}

bool ParseValueUnit(const std::string& name, ValueUnit* out) {
  for (ValueUnit u : {ValueUnit::kNone, ValueUnit::kPercent, ValueUnit::kBytes, ValueUnit::kCores,
                      ValueUnit::kSeconds})
    if (name == ValueUnitName(u)) {
      *out = u;
      return true;
    }
  return false;
}

std::string FormatValue(double v, ValueUnit u) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  static const char* const kBinary[] = {"", "Ki", "Mi", "Gi", "Ti"};
  static const char* const kSi[] = {"", "k", "M", "G", "T"};
  switch (u) {
    case ValueUnit::kPercent:
      return Short(v) + " %";
    case ValueUnit::kBytes:
      return Scaled(v, 1024, kBinary, 1024, "B");
    case ValueUnit::kCores:
      return Short(v) + (v == 1 ? " core" : " cores");
    case ValueUnit::kSeconds:
      return Short(v) + " s";
    case ValueUnit::kNone:
      break;
  }
  std::string s = Scaled(v, 1000, kSi, 10000, "");
  if (s.back() == ' ') s.pop_back();  // no prefix
  return s;
}

}  // namespace ds
