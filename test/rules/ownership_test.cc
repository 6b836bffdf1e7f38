#include "rules/ownership.h"

#include <gtest/gtest.h>

#include "common/rfc3339.h"

namespace ds {
namespace {

TEST(Ownership, RoundTrips) {
  Ownership o{"example.com/busy", "pre\"sure", {{"cpu", 1795435200}, {"mem \u00e9", 1795435261}}};
  std::string text = FormatOwnership(o);
  EXPECT_EQ(FormatOwnership(Ownership{"status", "presure", {{"cpu", 1795435200.7}}}),
            R"({"label":"status","value":"presure","rules":[{"rule":"cpu",)"
            R"("since":"2026-11-23T12:00:00Z"}]})");
  auto back = ParseOwnership(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, o);
  // The rebalancer's last eviction, only once there was one.
  o.last_eviction_wall = 1795435500;
  text = FormatOwnership(o);
  EXPECT_NE(text.find(R"("lastEviction":"2026-11-23T12:05:00Z")"), std::string::npos) << text;
  back = ParseOwnership(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, o);
}

TEST(Ownership, ErrorsSayWhatIsWrong) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"", "not a JSON object"},
      {"[]", "not a JSON object"},
      {R"({"value":"v","rules":[]})", "\"label\" must be a non-empty string"},
      {R"({"label":"k","rules":[]})", "\"value\" must be a string"},
      {R"({"label":"k","value":"v"})", "\"rules\" must be a list"},
      {R"({"label":"k","value":"v","rules":[{"since":"2026-11-23T12:00:00Z"}]})",
       "rules[0].rule must be a non-empty string"},
      {R"({"label":"k","value":"v","rules":[{"rule":"cpu","since":"yesterday"}]})",
       "rules[0].since must be an RFC 3339 time"},
      {R"({"label":"k","value":"v","rules":[],"lastEviction":17954355})",
       "\"lastEviction\" must be an RFC 3339 time"},
  };
  for (const Case& c : cases) {
    auto r = ParseOwnership(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(kHeldByAnnotation), std::string::npos);
  }
}

TEST(Ownership, HostileRecordsAreRefusedNotFollowed) {
  // 250,000 nested brackets crashed a recursive parser on an 8 MB stack (the review's case).
  auto deep = ParseOwnership(std::string(250000, '['));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("longer than 16384 bytes"), std::string::npos);
  auto nested = ParseOwnership(std::string(16000, '['));
  ASSERT_FALSE(nested.ok()) << "within the size cap: parsed iteratively, then refused";
  EXPECT_NE(nested.status().message().find("not a JSON object"), std::string::npos);
}

TEST(Rfc3339, ParsesWhatKubernetesWrites) {
  double t = 0;
  ASSERT_TRUE(ParseRfc3339("2026-11-23T12:00:00Z", &t));
  EXPECT_EQ(t, 1795435200);
  ASSERT_TRUE(ParseRfc3339("2026-11-23T12:00:00.250000Z", &t));
  EXPECT_DOUBLE_EQ(t, 1795435200.25);
  ASSERT_TRUE(ParseRfc3339("2026-11-23T13:30:00+01:30", &t));
  EXPECT_EQ(t, 1795435200);
  for (const char* bad : {"2026-11-23 12:00:00Z", "2026-11-23T12:00:00", "2026-13-01T00:00:00Z",
                          "2026-11-23T12:00:00Zx", "2026-11-23T12:00:00.Z", "x"})
    EXPECT_FALSE(ParseRfc3339(bad, &t)) << bad;
  EXPECT_EQ(FormatRfc3339(1795435200.9), "2026-11-23T12:00:00Z");
}

// Which parts of the mark are ours: the label by its value, the taint only by our record.
TEST(Ownership, OwnedMarkPartsNeedARecordForTheTaint) {
  Mark both;
  both.mode = Mark::Mode::kBoth;
  Ownership ours;
  SetRecordedMark(both, &ours);
  Mark label_only;  // a record of another mark: names no taint of `both`
  Ownership other;
  SetRecordedMark(label_only, &other);
  const Labels labelled = {{"status", "presure"}};
  const Labels theirs = {{"status", "maintenance"}};
  const std::vector<Taint> tainted = {{"a", "", "NoExecute", "2026-11-26T01:02:03Z"}, both.taint};
  struct Case {
    const char* what;
    const Mark* mark;
    const Labels* labels;
    bool taint_on;
    const Ownership* record;
    OwnedParts want;
  } cases[] = {
      {"both ours", &both, &labelled, true, &ours, {true, true}},
      {"no record: the label only", &both, &labelled, true, nullptr, {true, false}},
      {"another mark's record", &both, &labelled, true, &other, {true, false}},
      {"their value", &both, &theirs, true, &ours, {false, true}},
      {"the taint gone", &both, &labelled, false, &ours, {true, false}},
  };
  for (const Case& c : cases) {
    const std::vector<Taint> taints = c.taint_on ? tainted : std::vector<Taint>{tainted.front()};
    EXPECT_EQ(OwnedMarkParts(*c.mark, *c.labels, taints, c.record), c.want) << c.what;
  }
  Mark taint_only;
  taint_only.mode = Mark::Mode::kTaint;
  Ownership t;
  SetRecordedMark(taint_only, &t);
  EXPECT_EQ(OwnedMarkParts(taint_only, labelled, tainted, &t), (OwnedParts{false, true}))
      << "taint mode sets no label: ours by value or not, it is not ours";
  // A taint with our key, value and effect is ours whatever its timeAdded.
  std::vector<Taint> stamped = {both.taint};
  stamped[0].time_added = "2026-11-26T01:02:03Z";
  EXPECT_TRUE(both.TaintOn(stamped));
  EXPECT_TRUE(both.WithoutTaint(stamped).empty());
  EXPECT_EQ(RecordedMark(ours).mode, Mark::Mode::kBoth);
  EXPECT_EQ(RecordedMark(t).mode, Mark::Mode::kTaint);
  EXPECT_EQ(RecordedMark(other).mode, Mark::Mode::kLabel);
}

}  // namespace
}  // namespace ds
