#include "common/quantity.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace ds {

bool ParseQuantity(std::string_view text, double* value) {
  // <signedNumber><suffix>: a decimal number, then a binary (Ki..Ei), decimal (n, u, m, k, M..E)
  // or exponent (e3, E-2) suffix, as apimachinery's resource.Quantity reads it.
  if (text.empty() || text.size() > 64) return false;
  const std::string s(text);
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-') ++i;
  const size_t digits_start = i;
  bool dot = false;
  for (; i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'); ++i) {
    if (s[i] == '.') {
      if (dot) return false;
      dot = true;
    }
  }
  if (i == digits_start || (i == digits_start + 1 && dot)) return false;
  const double number = std::strtod(s.substr(0, i).c_str(), nullptr);
  const std::string suffix = s.substr(i);
  double scale = 1;
  static const struct {
    const char* name;
    double scale;
  } kSuffixes[] = {{"", 1},
                   {"n", 1e-9},
                   {"u", 1e-6},
                   {"m", 1e-3},
                   {"k", 1e3},
                   {"M", 1e6},
                   {"G", 1e9},
                   {"T", 1e12},
                   {"P", 1e15},
                   {"E", 1e18},
                   {"Ki", 1024.0},
                   {"Mi", 1048576.0},
                   {"Gi", 1073741824.0},
                   {"Ti", 1099511627776.0},
                   {"Pi", 1125899906842624.0},
                   {"Ei", 1152921504606846976.0}};
  bool known = false;
  for (const auto& k : kSuffixes)
    if (suffix == k.name) {
      scale = k.scale;
      known = true;
    }
  if (!known) {
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return false;
    char* end = nullptr;
    const long exp = std::strtol(suffix.c_str() + 1, &end, 10);
    if (*end != '\0' || exp < -30 || exp > 30) return false;
    scale = std::pow(10.0, static_cast<double>(exp));
  }
  const double v = number * scale;
  if (!std::isfinite(v)) return false;
  *value = v;
  return true;
}

}  // namespace ds
