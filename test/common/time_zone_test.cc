// Local time for the eviction windows: TZif files as the tz database ships them (fat and slim),
// the POSIX rule after the last transition, and malformed files.
#include "common/time_zone.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace ds {
namespace {

// 2026-01-15 12:00 UTC (a Thursday) and 2026-07-15 12:00 UTC (a Wednesday).
constexpr int64_t kJan = 1768478400, kJul = 1784116800;

// A TZif v2 file: `transitions` (time, type index), types (offset, isdst), and a footer rule.
std::string Tzif(const std::vector<std::pair<int64_t, int>>& transitions,
                 const std::vector<std::pair<int32_t, int>>& types, const std::string& footer) {
  auto be = [](std::string* out, uint64_t v, int width) {
    for (int i = width - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  auto header = [&](std::string* out) {
    out->append("TZif2");
    out->append(15, '\0');
    be(out, 0, 4);  // isutcnt
    be(out, 0, 4);  // isstdcnt
    be(out, 0, 4);  // leapcnt
    be(out, transitions.size(), 4);
    be(out, types.size(), 4);
    be(out, 4, 4);  // charcnt: "XXX\0"
  };
  auto block = [&](std::string* out, int width) {
    for (auto& t : transitions) be(out, static_cast<uint64_t>(t.first), width);
    for (auto& t : transitions) out->push_back(static_cast<char>(t.second));
    for (auto& ty : types) {
      be(out, static_cast<uint32_t>(ty.first), 4);
      out->push_back(static_cast<char>(ty.second));
      out->push_back('\0');
    }
    out->append("XXX", 4);
  };
  std::string f;
  header(&f);
  block(&f, 4);
  header(&f);
  block(&f, 8);
  f += "\n" + footer + "\n";
  return f;
}

TEST(TimeZone, UtcByDefault) {
  TimeZone utc = TimeZone::Utc();
  EXPECT_EQ(utc.OffsetAt(kJul), 0);
  int wd = -1, min = -1;
  utc.LocalWeekdayMinute(kJan, &wd, &min);
  EXPECT_EQ(wd, 4) << "Thursday";
  EXPECT_EQ(min, 12 * 60);
  ASSERT_TRUE(TimeZone::Load("UTC").ok());
}

TEST(TimeZone, TransitionsThenTheRule) {
  // A slim Berlin: one transition in 1980, then only the rule (as tzdata's slim files are).
  auto tz = TimeZone::Parse(
      "Slim/Berlin", Tzif({{315532800, 0}}, {{3600, 0}, {7200, 1}}, "CET-1CEST,M3.5.0,M10.5.0/3"));
  ASSERT_TRUE(tz.ok()) << tz.status().ToString();
  EXPECT_EQ(tz->OffsetAt(kJan), 3600);
  EXPECT_EQ(tz->OffsetAt(kJul), 7200);
  // 2026-03-29 01:00 UTC the clocks go from 02:00 to 03:00; 2026-10-25 01:00 UTC back.
  EXPECT_EQ(tz->OffsetAt(1774745999), 3600);
  EXPECT_EQ(tz->OffsetAt(1774746000), 7200);
  EXPECT_EQ(tz->OffsetAt(1792889999), 7200);
  EXPECT_EQ(tz->OffsetAt(1792890000), 3600);
  int wd = -1, min = -1;
  tz->LocalWeekdayMinute(kJul, &wd, &min);
  EXPECT_EQ(wd, 3) << "Wednesday";
  EXPECT_EQ(min, 14 * 60) << "12:00 UTC is 14:00 CEST";
  // Southern hemisphere: daylight time spans the new year.
  auto syd = TimeZone::Parse("Slim/Sydney", Tzif({}, {{36000, 0}}, "AEST-10AEDT,M10.1.0,M4.1.0/3"));
  ASSERT_TRUE(syd.ok()) << syd.status().ToString();
  EXPECT_EQ(syd->OffsetAt(kJan), 39600);
  EXPECT_EQ(syd->OffsetAt(kJul), 36000);
  // Before the first transition: the first type.
  auto early = TimeZone::Parse("X", Tzif({{2000000000, 1}}, {{-18000, 0}, {0, 0}}, "<+00>0"));
  ASSERT_TRUE(early.ok()) << early.status().ToString();
  EXPECT_EQ(early->OffsetAt(kJan), -18000);
  EXPECT_EQ(early->OffsetAt(2100000000), 0);
}

TEST(TimeZone, TheSystemDatabase) {
  if (!std::filesystem::exists("/usr/share/zoneinfo/Europe/Berlin"))
    GTEST_SKIP() << "no tzdata on this machine";
  auto berlin = TimeZone::Load("Europe/Berlin");
  ASSERT_TRUE(berlin.ok()) << berlin.status().ToString();
  EXPECT_EQ(berlin->OffsetAt(kJan), 3600);
  EXPECT_EQ(berlin->OffsetAt(kJul), 7200);
  EXPECT_EQ(berlin->OffsetAt(2541931200), 7200) << "2050-07-20: after the file's transitions";
  auto sp = TimeZone::Load("America/Sao_Paulo");
  ASSERT_TRUE(sp.ok()) << sp.status().ToString();
  EXPECT_EQ(sp->OffsetAt(kJan), -10800) << "no daylight saving time since 2019";
}

TEST(TimeZone, ErrorsNameTheZone) {
  for (const char* name : {"", "/etc/passwd", "../x", "No/Such_Zone"}) {
    auto tz = TimeZone::Load(name);
    ASSERT_FALSE(tz.ok()) << name;
    EXPECT_NE(tz.status().message().find("time zone \"" + std::string(name) + "\""),
              std::string::npos)
        << tz.status().message();
  }
  EXPECT_FALSE(TimeZone::Parse("z", "not a tzif file at all, not at all, no no no no").ok());
  std::string good = Tzif({{0, 0}}, {{3600, 0}}, "CET-1");
  for (size_t cut : {size_t{10}, size_t{50}, good.size() / 2, good.size() - 8})
    EXPECT_FALSE(TimeZone::Parse("z", good.substr(0, cut)).ok()) << cut;
  EXPECT_FALSE(TimeZone::Parse("z", Tzif({{0, 3}}, {{3600, 0}}, "CET-1")).ok()) << "bad type";
  EXPECT_FALSE(TimeZone::Parse("z", Tzif({}, {{3600, 0}}, "CET-1CEST,J60,J300")).ok())
      << "a rule form tzdata does not use is refused, not misread";
  EXPECT_FALSE(TimeZone::Parse("z", Tzif({}, {{999999, 0}}, "")).ok()) << "offset beyond a day";
}

}  // namespace
}  // namespace ds
