#include "rebalance/in_motion.h"

#include <algorithm>
#include <cctype>

namespace ds {

namespace {

// A PromQL duration ("5m", "1h30m", "90s", "500ms"); negative when `text` is none.
double DurationSeconds(std::string_view text) {
  double total = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i) return -1;
    const double n = std::stod(std::string(text.substr(i, j - i)));
    size_t k = j;
    while (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k]))) ++k;
    const std::string_view unit = text.substr(j, k - j);
    double scale = 0;
    if (unit == "ms")
      scale = 0.001;
    else if (unit == "s")
      scale = 1;
    else if (unit == "m")
      scale = 60;
    else if (unit == "h")
      scale = 3600;
    else if (unit == "d")
      scale = 86400;
    else if (unit == "w")
      scale = 7 * 86400;
    else if (unit == "y")
      scale = 365 * 86400;
    else
      return -1;
    total += n * scale;
    any = true;
    i = k;
  }
  return any ? total : -1;
}

}  // namespace

double QueryLagSeconds(std::string_view q) {
  double range = 0, offset = 0;
  bool quoted = false;
  char quote = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    const char c = q[i];
    // Strings ("...", '...', `...`) may hold brackets and the word offset: not selectors.
    if (quoted) {
      if (c == '\\' && quote != '`')
        ++i;
      else if (c == quote)
        quoted = false;
      continue;
    }
    if (c == '"' || c == '\'' || c == '`') {
      quoted = true;
      quote = c;
      continue;
    }
    if (c == '[') {
      const size_t end = q.find(']', i);
      if (end == std::string_view::npos) break;
      std::string_view inside = q.substr(i + 1, end - i - 1);
      inside = inside.substr(0, inside.find(':'));  // a subquery's range, not its step
      inside.remove_prefix(std::min(inside.find_first_not_of(' '), inside.size()));
      while (!inside.empty() && inside.back() == ' ') inside.remove_suffix(1);
      range = std::max(range, DurationSeconds(inside));
      i = end;
      continue;
    }
    // `offset 5m`: a word of its own (not part of a metric or label name).
    if (q.compare(i, 6, "offset") == 0 &&
        (i == 0 || !(std::isalnum(static_cast<unsigned char>(q[i - 1])) || q[i - 1] == '_' ||
                     q[i - 1] == ':')) &&
        i + 6 < q.size() && (q[i + 6] == ' ' || q[i + 6] == '\t')) {
      size_t s = i + 6;
      while (s < q.size() && (q[s] == ' ' || q[s] == '\t')) ++s;
      size_t e = s;
      while (e < q.size() && std::isalnum(static_cast<unsigned char>(q[e]))) ++e;
      offset = std::max(offset, DurationSeconds(q.substr(s, e - s)));
      i = e > i ? e - 1 : i;
    }
  }
  return std::max(range, 0.0) + std::max(offset, 0.0);
}

double SettleSeconds(std::string_view query, double interval_seconds) {
  return QueryLagSeconds(query) + std::max(interval_seconds, 0.0);
}

bool StillLeaving(const LeavingPod& p, double settle_seconds, double now_wall) {
  if (p.gone_wall <= 0) return true;
  // A wall clock stepped back ("gone in the future") keeps it counted: erring toward not evicting.
  return now_wall - p.gone_wall < settle_seconds;
}

double DiscountLeaving(Relief* relief, const std::vector<LeavingPod>& leaving,
                       double settle_seconds, double now_wall) {
  double off = 0;
  for (const LeavingPod& p : leaving) {
    if (p.node != relief->load.node || !StillLeaving(p, settle_seconds, now_wall)) continue;
    off += relief->Share(relief->resource == Rule::Resource::kCpu ? p.cpu : p.memory);
  }
  relief->load.load -= off;
  return off;
}

}  // namespace ds
