#include "rebalance/in_motion.h"

#include <gtest/gtest.h>

#include "rebalance/eviction_ledger.h"

namespace ds {
namespace {

TEST(QueryLag, TheLongestRangeAndOffsetTheQueryShows) {
  struct Case {
    const char* query;
    double lag;
  } cases[] = {
      {"node:dynamic_scheduler_cpu_usage:percent", 0},  // a recording rule hides its window
      {"sum by (node) (rate(x[5m]))", 300},
      {"avg_over_time(x[1h30m]) + rate(y[90s])", 5400},
      {"max_over_time(rate(x[1m])[10m:30s])", 600},  // a subquery's range, not its step
      {"rate(x[5m] offset 2m)", 420},
      {"x{path=\"/a[5m]\"}", 0},        // inside a string: no selector
      {"x{name=~'offset 9h'} / y", 0},  // nor an offset
      {"last_offset_seconds{job=\"a\"}", 0},
      {"rate(x[ 2m ])", 120},
      {"rate(x[5q])", 0},  // not a duration
  };
  for (const Case& c : cases) EXPECT_DOUBLE_EQ(QueryLagSeconds(c.query), c.lag) << c.query;
}

TEST(Settle, TheLagPlusOneInterval) {
  EXPECT_DOUBLE_EQ(SettleSeconds("rate(x[5m])", 10), 310);
  EXPECT_DOUBLE_EQ(SettleSeconds("node:cpu:percent", 10), 10) << "a gauge: one interval";
  EXPECT_DOUBLE_EQ(SettleSeconds("x", 0), 0);
}

TEST(StillLeaving, WhileListedAndForTheSettleTimeAfter) {
  LeavingPod p;
  p.evicted_wall = 1000;
  EXPECT_TRUE(StillLeaving(p, 60, 5000)) << "still listed";
  p.gone_wall = 1030;
  EXPECT_TRUE(StillLeaving(p, 60, 1089));
  EXPECT_FALSE(StillLeaving(p, 60, 1090));
  EXPECT_TRUE(StillLeaving(p, 60, 1000)) << "a clock stepped back keeps it";
}

Relief CpuRelief(double load, double goal) {
  Relief r;
  r.rule = "cpu";
  r.resource = Rule::Resource::kCpu;
  r.load = NodeLoad{"n1", load, goal, 0};
  r.per_unit = 25;  // 4 cores: one core is 25 %
  return r;
}

TEST(DiscountLeaving, TheNodesPodsStillCountedComeOffItsLoad) {
  Relief r = CpuRelief(95, 60);
  std::vector<LeavingPod> leaving = {
      {"n1", "a/p1", "u1", 0.8, 1e9, 100, 0},    // terminating: 20 %
      {"n1", "a/p2", "u2", 0.4, 1e9, 100, 150},  // gone 50 s ago: 10 %
      {"n1", "a/p3", "u3", 2.0, 1e9, 100, 10},   // gone long ago
      {"n2", "a/p4", "u4", 2.0, 1e9, 100, 0},    // another node's
  };
  EXPECT_DOUBLE_EQ(DiscountLeaving(&r, leaving, 60, 200), 30);
  EXPECT_DOUBLE_EQ(r.load.load, 65);
}

TEST(DiscountLeaving, BytesAvailableRiseByTheWorkingSets) {
  HoldingRule h{"mem", Rule::Resource::kMemory, 100e6, 500e6, true};
  auto r = ReliefFor("n1", {h}, 4, 16e9, 0);
  ASSERT_TRUE(r.has_value());
  std::vector<LeavingPod> leaving = {{"n1", "a/p1", "u1", 0.1, 300e6, 100, 0}};
  DiscountLeaving(&*r, leaving, 60, 200);
  EXPECT_DOUBLE_EQ(r->Value(r->load.load), 400e6) << "100 MB available, 300 MB on their way";
}

TEST(Ledger, RoundTripsAndTrims) {
  std::vector<LedgerEntry> in = {
      {1000.25, "n1", "shop/a", "u1", "shop/ReplicaSet/a-rs", "pod-template-hash=5d8f", 0.5, 2e9,
       false},
      {4700, "n2", "shop/b", "", "", "", 0, 0, true},
  };
  auto out = DecodeLedger(EncodeLedger(in));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].at_wall, 1000.25);
  EXPECT_EQ((*out)[0].selector, "pod-template-hash=5d8f");
  EXPECT_EQ((*out)[0].ns(), "shop");
  EXPECT_EQ((*out)[1].drain, true);
  auto kept = TrimLedger(*out, 4700);
  ASSERT_EQ(kept.size(), 1u) << "an hour";
  EXPECT_EQ(kept[0].pod, "shop/b");
  EXPECT_TRUE(DecodeLedger("")->empty());
}

// A refused eviction's entry is taken back by its time: a wall time must come back to the bit
// (RapidJSON's default parse was off for about a fifth of them, and those entries stayed).
TEST(Ledger, WallTimesComeBackExactly) {
  for (int i = 0; i < 1000; ++i) {
    LedgerEntry e{
        1795435200.123456789 + i * 1.000000119, "n1", "shop/a", "u1", "", "", 0, 0, false};
    auto out = DecodeLedger(EncodeLedger({e}));
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(out->front().at_wall, e.at_wall) << i;
  }
}

TEST(Ledger, KeepsTheNewestWithinItsBound) {
  std::vector<LedgerEntry> many;
  for (size_t i = 0; i < kLedgerMaxEntries + 10; ++i)
    many.push_back(
        {1000.0 + static_cast<double>(i), "n", "s/p" + std::to_string(i), "", "", "", 0, 0, false});
  auto kept = TrimLedger(many, 1100);
  ASSERT_EQ(kept.size(), kLedgerMaxEntries);
  EXPECT_EQ(kept.front().pod, "s/p10");
}

TEST(Ledger, WhatCannotBeReadIsAnErrorNamingTheEntry) {
  for (const char* bad :
       {"{", "{}", "[1]", R"([{"t":1}])",
        R"([{"t":1,"n":"x","p":"nons","u":"","w":"","s":"","c":0,"m":0,"d":false}])",
        R"([{"t":"1","n":"x","p":"a/b","u":"","w":"","s":"","c":0,"m":0,"d":false}])"}) {
    auto r = DecodeLedger(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("eviction ledger"), std::string::npos)
        << r.status().ToString();
  }
  auto r = DecodeLedger(R"([{"t":1,"n":"x","p":"a/b","u":"","w":"","s":"","c":0,"m":0}])");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("entry 0: \"d\""), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace ds
