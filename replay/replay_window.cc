#include "replay/replay_window.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/rfc3339.h"
#include "config/rule_config.h"
#include "promql/range_query.h"

namespace ds {
namespace {

constexpr double kLatestReplayTime = 95617584000;  // 5000-01-01T00:00:00Z

// Unix seconds of any of the forms, whatever year.
StatusOr<double> ParseAnyReplayTime(const std::string& text, double now, const std::string& flag) {
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

}  // namespace

StatusOr<double> ParseReplayTime(const std::string& text, double now, const std::string& flag) {
  ASSIGN_OR_RETURN(const double t, ParseAnyReplayTime(text, now, flag));
  // Before 1970 no store has samples, and the grid's whole milliseconds (int64) must hold it.
  if (!(t >= 0 && t <= kLatestReplayTime))
    return Status::InvalidArgument("-" + flag + " \"" + text +
                                   "\": before 1970 or after the year 5000");
  return t;
}

size_t ReplayStepsPerChunk(size_t series) {
  return std::clamp<size_t>(kReplayPointsPerChunk / std::max<size_t>(series, 1), 1,
                            kMaxPointsPerSeries);
}

}  // namespace ds
