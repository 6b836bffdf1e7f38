// Local time in an IANA time zone (Europe/Berlin), for the rebalancer's eviction windows, read
// from the system's tz database (TZif files under /usr/share/zoneinfo, or $TZDIR) without touching
// the process's TZ (glog and every other clock reader keep UTC). Parsing is a pure function of
// the file's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

class TimeZone {
 public:
  static TimeZone Utc();
  // Reads $TZDIR/<name> (default /usr/share/zoneinfo). Errors name the zone and the file.
  static StatusOr<TimeZone> Load(const std::string& name);
  // Parses a TZif file (RFC 8536, versions 1-4). `name` is for messages.
  static StatusOr<TimeZone> Parse(const std::string& name, const std::string& bytes);

  // Seconds east of UTC in effect at `epoch_seconds`.
  int64_t OffsetAt(int64_t epoch_seconds) const;
  // The local weekday (0 = Sunday) and minute of the day at `epoch_seconds`.
  void LocalWeekdayMinute(double epoch_seconds, int* weekday, int* minute_of_day) const;
  const std::string& name() const { return name_; }

 private:
  // A POSIX TZ rule (the TZif footer, e.g. "CET-1CEST,M3.5.0,M10.5.0/3"), for times after the
  // last transition in the file (slim files stop early; all stop in 2037).
  struct RuleDate {
    int month = 0, week = 0, weekday = 0;  // Mm.w.d
    int64_t seconds = 7200;                // local time of day of the change
  };
  struct Rule {
    bool valid = false, dst = false;
    int64_t std_offset = 0, dst_offset = 0;  // seconds east of UTC
    RuleDate start, end;
  };
  static bool ParseRule(const std::string& text, Rule* rule);
  static int64_t RuleOffset(const Rule& r, int64_t t);

  std::string name_ = "UTC";
  std::vector<int64_t> transitions_;  // ascending
  std::vector<int64_t> offsets_;      // offset from each transition on
  int64_t initial_offset_ = 0;        // before the first transition
  Rule rule_;
};

}  // namespace ds
