// Times as Kubernetes and Prometheus write them: RFC 3339 in UTC.
#pragma once

#include <string>
#include <string_view>

namespace ds {

// Epoch seconds, truncated to whole seconds, as RFC 3339 UTC ("2026-11-23T12:00:00Z").
std::string FormatRfc3339(double epoch_seconds);
// Back to epoch seconds; false if malformed or outside the years 1970..9999 (UTC). Accepts
// fractional seconds and "Z" or a numeric offset ("+01:00").
bool ParseRfc3339(std::string_view text, double* epoch_seconds);

}  // namespace ds
