#include "rules/outage.h"

#include <gtest/gtest.h>

namespace ds {
namespace {

TimePoint At(double seconds) { return TimePoint{} + FromSeconds(seconds); }

TEST(OutageTest, ReleaseComesAfterReleaseAfterOfUnbrokenFailure) {
  const OutagePolicy release{true, 60};
  OutageClock c;
  c.Observe(false, At(0));
  EXPECT_EQ(c.DownSeconds(At(0)), 0);
  c.Observe(true, At(10));  // the outage starts here
  c.Observe(true, At(60));
  EXPECT_EQ(c.DownSeconds(At(60)), 50);
  EXPECT_FALSE(c.Releasing(release, At(60)));
  c.Observe(true, At(70));
  EXPECT_TRUE(c.Releasing(release, At(70)));
  EXPECT_FALSE(c.Releasing(OutagePolicy{false, 60}, At(70))) << "hold never releases";
  // One answer ends the outage: the next one counts from its own start.
  c.Observe(false, At(80));
  EXPECT_EQ(c.DownSeconds(At(80)), 0);
  c.Observe(true, At(90));
  EXPECT_FALSE(c.Releasing(release, At(140)));
  c.Reset();
  EXPECT_EQ(c.DownSeconds(At(200)), 0) << "a new term counts its own outage";
}

TEST(OutageTest, ReleasingTurnsOnlyUnknownVerdictsCold) {
  std::vector<NodeDecision> d(3);
  d[0].verdict = Verdict::kUnknown;
  d[0].holds.push_back(Hold{0, 95, TimePoint{}, true});
  d[1].verdict = Verdict::kHot;
  d[2].verdict = Verdict::kCold;
  EXPECT_EQ(ReleaseVerdicts(&d), 1u);
  EXPECT_EQ(d[0].verdict, Verdict::kCold);
  EXPECT_TRUE(d[0].holds.empty()) << "a cold node held by stale holds would read as hot";
  EXPECT_EQ(d[1].verdict, Verdict::kHot);
}

}  // namespace
}  // namespace ds
