// The window a replay covers, as people write it: RFC 3339, Unix seconds, "now", or "now-7d"
// (any duration rule.yaml accepts). Pure: `now` comes in.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

// Unix seconds. kInvalidArgument naming `flag` and the text when it is none of the forms.
StatusOr<double> ParseReplayTime(const std::string& text, double now, const std::string& flag);

// The points per range request a replay asks for (all series together): bounds the memory
// one chunk's answer takes. Per series, Prometheus' limit (kMaxPointsPerSeries) still holds.
inline constexpr size_t kReplayPointsPerChunk = 250000;

// Steps per range request for `series` series (about the managed nodes).
size_t ReplayStepsPerChunk(size_t series);

}  // namespace ds
