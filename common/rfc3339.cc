#include "common/rfc3339.h"

#include <time.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace ds {

std::string FormatRfc3339(double epoch_seconds) {
  time_t t = static_cast<time_t>(std::floor(epoch_seconds));
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool ParseRfc3339(std::string_view text, double* epoch_seconds) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  std::string s(text);
  int y, mo, d, h, mi, sec, n = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
      n != 19)
    return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970)
    return false;
  size_t i = 19;
  double frac = 0;
  if (i < s.size() && s[i] == '.') {
    double scale = 0.1;
    ++i;
    if (i >= s.size() || !isdigit(static_cast<unsigned char>(s[i]))) return false;
    for (; i < s.size() && isdigit(static_cast<unsigned char>(s[i])); ++i, scale /= 10)
      frac += (s[i] - '0') * scale;
  }
  int offset = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh, om, m = 0;
    if (std::sscanf(s.c_str() + i + 1, "%2d:%2d%n", &oh, &om, &m) != 2 || m != 5 || oh > 23 ||
        om > 59)
      return false;
    offset = (s[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    i += 6;
  } else {
    return false;
  }
  if (i != s.size()) return false;
  struct tm tm {};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  const double t = static_cast<double>(timegm(&tm)) - offset + frac;
  // An offset can carry a time out of the years 1970..9999, which FormatRfc3339 could not write
  // back in this form.
  if (t < 0 || t >= 253402300800.0) return false;
  *epoch_seconds = t;
  return true;
}

}  // namespace ds
