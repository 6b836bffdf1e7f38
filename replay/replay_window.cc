#include "replay/replay_window.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/rfc3339.h"
#include "config/rule_config.h"
#include "promql/range_query.h"

namespace ds {

StatusOr<double> ParseReplayTime(const std::string& text, double now, const std::string& flag) {
  auto bad = [&] {
    return Status::InvalidArgument(
        "-" + flag + " \"" + text +
        "\": want RFC 3339 (2026-11-20T00:00:00Z), Unix seconds, \"now\" or \"now-7d\"");
  };
  if (text.empty()) return bad();
  if (text.rfind("now", 0) == 0) {
    if (text.size() == 3) return now;
    if (text[3] != '-') return bad();
    auto d = ParseDuration(text.substr(4));
    if (!d.ok()) return bad();
    return now - *d;
  }
  double t = 0;
  if (ParseRfc3339(text, &t)) return t;
  char* end = nullptr;
  t = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(t) || t < 0) return bad();
  return t;
}

size_t ReplayStepsPerChunk(size_t series) {
  return std::clamp<size_t>(kReplayPointsPerChunk / std::max<size_t>(series, 1), 1,
                            kMaxPointsPerSeries);
}

}  // namespace ds
