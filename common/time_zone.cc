#include "common/time_zone.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ds {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

int YearOf(int64_t epoch_seconds) {
  // civil_from_days, the year only.
  int64_t z = FloorDiv(epoch_seconds, 86400) + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  return static_cast<int>(yoe + era * 400 + (m <= 2));
}

int DaysInMonth(int y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  bool Skip(size_t n) {
    if (b_.size() - pos_ < n) return false;
    pos_ += n;
    return true;
  }
  bool Int(size_t width, int64_t* v) {
    if (b_.size() - pos_ < width) return false;
    uint64_t u = 0;
    for (size_t i = 0; i < width; ++i) u = (u << 8) | static_cast<unsigned char>(b_[pos_ + i]);
    pos_ += width;
    if (width == 4)
      *v = static_cast<int32_t>(static_cast<uint32_t>(u));
    else
      *v = static_cast<int64_t>(u);
    return true;
  }
  bool Byte(int64_t* v) {
    if (pos_ >= b_.size()) return false;
    *v = static_cast<unsigned char>(b_[pos_++]);
    return true;
  }
  size_t pos() const { return pos_; }
  std::string Rest() const { return b_.substr(pos_); }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

struct Header {
  int version = 0;
  int64_t isut = 0, isstd = 0, leap = 0, time = 0, type = 0, chars = 0;
};

bool ReadHeader(Reader* r, const std::string& bytes, Header* h) {
  const size_t at = r->pos();
  if (bytes.size() - at < 44 || bytes.compare(at, 4, "TZif") != 0) return false;
  const char v = bytes[at + 4];
  h->version = v == '\0' ? 1 : v - '0';
  return r->Skip(20) && r->Int(4, &h->isut) && r->Int(4, &h->isstd) && r->Int(4, &h->leap) &&
         r->Int(4, &h->time) && r->Int(4, &h->type) && r->Int(4, &h->chars) && h->type > 0 &&
         h->time >= 0 && h->chars >= 0 && h->leap >= 0 && h->isut >= 0 && h->isstd >= 0 &&
         h->time < 100000 && h->type < 256;
}

// "[+-]hh[:mm[:ss]]" at s[*i] as seconds.
bool ParseClock(const std::string& s, size_t* i, int64_t* seconds) {
  int sign = 1;
  if (*i < s.size() && (s[*i] == '+' || s[*i] == '-')) sign = s[(*i)++] == '-' ? -1 : 1;
  int64_t parts[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    if (k > 0) {
      if (*i >= s.size() || s[*i] != ':') break;
      ++*i;
    }
    size_t start = *i;
    while (*i < s.size() && std::isdigit(static_cast<unsigned char>(s[*i])) && *i - start < 3)
      parts[k] = parts[k] * 10 + (s[(*i)++] - '0');
    if (*i == start) return false;
  }
  *seconds = sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
  return true;
}

bool ParseName(const std::string& s, size_t* i) {
  const size_t start = *i;
  if (*i < s.size() && s[*i] == '<') {
    const size_t close = s.find('>', *i);
    if (close == std::string::npos) return false;
    *i = close + 1;
    return close > start + 1;
  }
  while (*i < s.size() && std::isalpha(static_cast<unsigned char>(s[*i]))) ++*i;
  return *i - start >= 3;
}

}  // namespace

TimeZone TimeZone::Utc() { return TimeZone(); }

StatusOr<TimeZone> TimeZone::Load(const std::string& name) {
  if (name == "UTC" || name == "Etc/UTC") return Utc();
  if (name.empty() || name[0] == '/' || name.find("..") != std::string::npos)
    return Status::InvalidArgument("time zone \"" + name + "\": not a zone name");
  const char* dir = std::getenv("TZDIR");
  const std::string path =
      std::string(dir != nullptr && *dir ? dir : "/usr/share/zoneinfo") + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::InvalidArgument("time zone \"" + name + "\": cannot read " + path +
                                   " (is the tzdata package installed?)");
  std::ostringstream buf;
  buf << in.rdbuf();
  return Parse(name, buf.str());
}

StatusOr<TimeZone> TimeZone::Parse(const std::string& name, const std::string& bytes) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("time zone \"" + name + "\": " + why);
  };
  if (bytes.size() > (1u << 20)) return bad("file too large for a TZif file");
  Reader r(bytes);
  Header h;
  if (!ReadHeader(&r, bytes, &h)) return bad("not a TZif file");
  size_t time_width = 4;
  if (h.version >= 2) {
    // Skip the 32-bit block; the 64-bit one that follows has the same layout.
    const int64_t v1 = h.time * 5 + h.type * 6 + h.chars + h.leap * 8 + h.isstd + h.isut;
    if (!r.Skip(static_cast<size_t>(v1)) || !ReadHeader(&r, bytes, &h))
      return bad("truncated TZif file");
    time_width = 8;
  }
  TimeZone tz;
  tz.name_ = name;
  std::vector<int64_t> idx(static_cast<size_t>(h.time));
  tz.transitions_.resize(static_cast<size_t>(h.time));
  for (auto& t : tz.transitions_)
    if (!r.Int(time_width, &t)) return bad("truncated transition times");
  for (auto& i : idx)
    if (!r.Byte(&i) || i >= h.type) return bad("a transition names a missing local time type");
  std::vector<int64_t> type_offset(static_cast<size_t>(h.type));
  for (auto& off : type_offset) {
    int64_t isdst = 0, desig = 0;
    if (!r.Int(4, &off) || !r.Byte(&isdst) || !r.Byte(&desig)) return bad("truncated time types");
    if (off < -25 * 3600 || off > 26 * 3600) return bad("a UTC offset beyond a day");
  }
  if (!r.Skip(static_cast<size_t>(h.chars + h.leap * (time_width + 4) + h.isstd + h.isut)))
    return bad("truncated TZif file");
  if (!std::is_sorted(tz.transitions_.begin(), tz.transitions_.end()))
    return bad("transition times out of order");
  tz.initial_offset_ = type_offset[0];
  for (int64_t i : idx) tz.offsets_.push_back(type_offset[static_cast<size_t>(i)]);
  if (h.version >= 2) {
    std::string footer = r.Rest();
    if (footer.size() >= 2 && footer.front() == '\n') {
      footer = footer.substr(1, footer.find('\n', 1) - 1);
      if (!footer.empty() && !ParseRule(footer, &tz.rule_))
        return bad("unsupported rule \"" + footer + "\" after the last transition");
    }
  }
  return tz;
}

bool TimeZone::ParseRule(const std::string& s, Rule* rule) {
  size_t i = 0;
  int64_t std_off = 0;
  if (!ParseName(s, &i) || !ParseClock(s, &i, &std_off)) return false;
  rule->std_offset = -std_off;  // POSIX offsets are west of UTC
  rule->valid = true;
  if (i == s.size()) return true;  // no daylight saving time
  if (!ParseName(s, &i)) return false;
  rule->dst = true;
  rule->dst_offset = rule->std_offset + 3600;
  if (i < s.size() && s[i] != ',') {
    int64_t dst_off = 0;
    if (!ParseClock(s, &i, &dst_off)) return false;
    rule->dst_offset = -dst_off;
  }
  auto date = [&](RuleDate* d) {
    if (i >= s.size() || s[i] != ',') return false;
    ++i;
    if (i >= s.size() || s[i] != 'M') return false;  // only the Mm.w.d form (all of tzdata's)
    ++i;
    int vals[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      if (k > 0) {
        if (i >= s.size() || s[i] != '.') return false;
        ++i;
      }
      const size_t start = i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 2)
        vals[k] = vals[k] * 10 + (s[i++] - '0');
      if (i == start) return false;
    }
    d->month = vals[0];
    d->week = vals[1];
    d->weekday = vals[2];
    if (d->month < 1 || d->month > 12 || d->week < 1 || d->week > 5 || d->weekday > 6) return false;
    if (i < s.size() && s[i] == '/') {
      ++i;
      if (!ParseClock(s, &i, &d->seconds)) return false;
    }
    return true;
  };
  if (!date(&rule->start) || !date(&rule->end)) return false;
  return i == s.size();
}

int64_t TimeZone::RuleOffset(const Rule& r, int64_t t) {
  if (!r.dst) return r.std_offset;
  const int year = YearOf(t + r.std_offset);
  auto instant = [&](const RuleDate& d, int64_t offset_before) {
    const int64_t first = DaysFromCivil(year, d.month, 1);
    const int first_wday = static_cast<int>(((first % 7) + 11) % 7);  // 1970-01-01: Thursday
    int day = 1 + (d.weekday - first_wday + 7) % 7 + (d.week - 1) * 7;
    while (day > DaysInMonth(year, d.month)) day -= 7;
    return (first + day - 1) * 86400 + d.seconds - offset_before;
  };
  const int64_t start = instant(r.start, r.std_offset);  // written in standard time
  const int64_t end = instant(r.end, r.dst_offset);      // written in daylight time
  const bool in_dst = start < end ? (t >= start && t < end) : (t >= start || t < end);
  return in_dst ? r.dst_offset : r.std_offset;
}

int64_t TimeZone::OffsetAt(int64_t t) const {
  if (transitions_.empty() || t < transitions_.front())
    return transitions_.empty() && rule_.valid ? RuleOffset(rule_, t) : initial_offset_;
  if (t >= transitions_.back() && rule_.valid) return RuleOffset(rule_, t);
  const size_t i = static_cast<size_t>(
      std::upper_bound(transitions_.begin(), transitions_.end(), t) - transitions_.begin() - 1);
  return offsets_[i];
}

void TimeZone::LocalWeekdayMinute(double epoch_seconds, int* weekday, int* minute_of_day) const {
  const int64_t t = static_cast<int64_t>(std::floor(epoch_seconds));
  const int64_t local = t + OffsetAt(t);
  const int64_t days = FloorDiv(local, 86400);
  *weekday = static_cast<int>(((days % 7) + 11) % 7);  // 1970-01-01 was a Thursday (4)
  *minute_of_day = static_cast<int>((local - days * 86400) / 60);
}

}  // namespace ds
