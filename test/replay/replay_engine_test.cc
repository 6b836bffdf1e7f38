#include "replay/replay_engine.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>
#include <string>
#include <vector>

#include "replay/replay_json.h"
#include "replay/replay_window.h"

namespace ds {
namespace {

RuleConfig Config(const std::string& yaml) {
  auto c = ParseRuleConfig(yaml, "test.yaml");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

std::vector<ReplayNode> Nodes(size_t n) {
  std::vector<ReplayNode> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back({"n" + std::to_string(i), {"10.0.0." + std::to_string(i)}, {}});
  return out;
}

// One series per node of `values` (per node, per step; NaN: no point), named by the `node` label.
std::vector<RangeSeries> Series(const std::vector<std::vector<double>>& values, double t0,
                                double step) {
  std::vector<RangeSeries> out;
  for (size_t i = 0; i < values.size(); ++i) {
    RangeSeries s;
    s.metric = {{"node", "n" + std::to_string(i)}};
    for (size_t k = 0; k < values[i].size(); ++k) {
      if (std::isnan(values[i][k])) continue;
      s.times.push_back(t0 + k * step);
      s.values.push_back(values[i][k]);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<double> Times(double t0, double step, size_t n) {
  std::vector<double> t;
  for (size_t k = 0; k < n; ++k) t.push_back(t0 + k * step);
  return t;
}

constexpr double N = NAN;

TEST(ReplayEngine, ForAndHysteresisMarkFromTheFirstStepTheControllerWould) {
  RuleConfig c = Config(
      "rules:\n  - {name: cpu, query: cpu, threshold: 80, clearThreshold: 60, for: 20s}\n"
      "maxMarkedFraction: 1\n");
  ReplayEngine e(c, Nodes(2), 10, 30);
  // n0: over 80 from step 1; for 20 s -> marked at step 3; 70 (band) keeps it; 50 clears at 7.
  // n1: over for 10 s only: never marked.
  auto s = Series({{10, 90, 90, 90, 90, 70, 70, 50, 50}, {10, 90, 90, 10, 10, 10, 10, 10, 10}},
                  1000, 10);
  e.Run(Times(1000, 10, 9), {RuleHistory{&s, nullptr}});
  ReplayResult r = e.Finish(1000, 1080);
  ASSERT_EQ(r.nodes.size(), 2u);
  ASSERT_EQ(r.nodes[0].marks.size(), 1u);
  EXPECT_EQ(r.nodes[0].marks[0].start, 1030);
  EXPECT_EQ(r.nodes[0].marks[0].end, 1070);
  EXPECT_EQ(r.nodes[0].marks[0].rules, std::vector<std::string>{"cpu"});
  EXPECT_EQ(r.nodes[0].marked_seconds, 40);
  EXPECT_TRUE(r.nodes[1].marks.empty());
  EXPECT_EQ(r.totals.marks, 1u);
  EXPECT_EQ(r.timeline.marked, (std::vector<uint32_t>{0, 0, 0, 1, 1, 1, 1, 0, 0}));
}

// What held a marked node from when (ReplayMark::held, E4): cpu marks n0 at 0; mem rises into
// its band at 10 without crossing (it holds nothing), crosses at 20 (it holds from then), and
// the mark's `held` says so, as the ownership record would.
TEST(ReplayEngine, AMarkRecordsWhatHeldItFromWhen) {
  RuleConfig c = Config(
      "rules:\n"
      "  - {name: cpu, query: cpu, threshold: 80, clearThreshold: 60}\n"
      "  - {name: mem, query: mem, threshold: 80, clearThreshold: 60}\n"
      "maxMarkedFraction: 1\n");
  ReplayEngine e(c, Nodes(1), 10, 30);
  auto cpu = Series({{90, 90, 90, 90}}, 0, 10), mem = Series({{10, 70, 90, 70}}, 0, 10);
  e.Run(Times(0, 10, 4), {RuleHistory{&cpu, nullptr}, RuleHistory{&mem, nullptr}});
  ReplayResult r = e.Finish(0, 40);
  ASSERT_EQ(r.nodes[0].marks.size(), 1u);
  const auto& held = r.nodes[0].marks[0].held;
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0], (std::pair<double, std::vector<std::string>>{0, {"cpu"}}));
  EXPECT_EQ(held[1], (std::pair<double, std::vector<std::string>>{20, {"cpu", "mem"}}));
}

TEST(ReplayEngine, ChunksContinueTheSameCycles) {
  // The same history in one Run or in two: the same marks (the decider's state carries over).
  RuleConfig c = Config("rules:\n  - {name: cpu, query: cpu, threshold: 80, for: 20s}\n");
  auto whole = Series({{90, 90, 90, 90, 10, 10}}, 0, 10);
  ReplayEngine one(c, Nodes(1), 10, 30), two(c, Nodes(1), 10, 30);
  one.Run(Times(0, 10, 6), {RuleHistory{&whole, nullptr}});
  auto a = Series({{90, 90, 90}}, 0, 10), b = Series({{90, 10, 10}}, 30, 10);
  two.Run(Times(0, 10, 3), {RuleHistory{&a, nullptr}});
  two.Run(Times(30, 10, 3), {RuleHistory{&b, nullptr}});
  auto r1 = one.Finish(0, 50), r2 = two.Finish(0, 50);
  ASSERT_EQ(r1.nodes[0].marks.size(), 1u);
  ASSERT_EQ(r2.nodes[0].marks.size(), 1u);
  EXPECT_EQ(r1.nodes[0].marks[0].start, 20);
  EXPECT_EQ(r2.nodes[0].marks[0].start, 20);
  EXPECT_EQ(r1.nodes[0].marks[0].end, 40);
  EXPECT_EQ(r2.nodes[0].marks[0].end, 40);
}

TEST(ReplayEngine, AStepWithoutAnySampleIsPrometheusDownAndReleaseFollowsThePolicy) {
  const std::string rules = "rules:\n  - {name: cpu, query: cpu, threshold: 80}\n";
  // n0 hot at step 0, then 8 steps without any sample anywhere, then cold values.
  auto s = Series({{90, N, N, N, N, N, N, N, N, 10}, {10, N, N, N, N, N, N, N, N, 10}}, 0, 10);
  {
    ReplayEngine hold(Config(rules), Nodes(2), 10, 20);
    hold.Run(Times(0, 10, 10), {RuleHistory{&s, nullptr}});
    auto r = hold.Finish(0, 90);
    ASSERT_EQ(r.nodes[0].marks.size(), 1u);
    EXPECT_EQ(r.nodes[0].marks[0].end, 90) << "held through the outage, removed on evidence";
    EXPECT_EQ(r.nodes[0].marks[0].relieved_at, 90);
    EXPECT_EQ(r.totals.outage_steps, 8u);
  }
  ReplayEngine release(Config(rules + "onPrometheusDown: release\nreleaseAfter: 30s\n"), Nodes(2),
                       10, 20);
  release.Run(Times(0, 10, 10), {RuleHistory{&s, nullptr}});
  auto r = release.Finish(0, 90);
  ASSERT_EQ(r.nodes[0].marks.size(), 1u);
  // Down from step 1 (t=10); released once down for 30 s: t=40.
  EXPECT_EQ(r.nodes[0].marks[0].end, 40);
  EXPECT_TRUE(std::isnan(r.nodes[0].marks[0].relieved_at)) << "released, not relieved";
  EXPECT_EQ(r.totals.relieved_marks, 0u);
  EXPECT_TRUE(std::isnan(r.totals.time_to_relief_median));
}

// Time to relief (mark to the first step at or below the clear threshold) and hot marked time
// (marked since an earlier step, not at or below the clear threshold), as the rebalancer's effect
// figures count them live (rebalance/effect.h).
TEST(ReplayEngine, TimeToReliefAndHotMarkedTimeAsTheControllerCountsThem) {
  RuleConfig c = Config(
      "rules:\n  - {name: cpu, query: cpu, threshold: 80, clearThreshold: 60}\n"
      "maxMarkedFraction: 1\n");
  ReplayEngine e(c, Nodes(3), 10, 30);
  // n0: marked at 0, hot at 10 and in its band at 20 and 30, cleared at 40; marked again at 60
  // and still hot at the end. n1: never hot. n2: marked at 0, cleared at 10.
  auto s = Series({{90, 90, 70, 70, 50, 50, 90, 90, 90},
                   {10, 10, 10, 10, 10, 10, 10, 10, 10},
                   {90, 50, 50, 50, 50, 50, 50, 50, 50}},
                  0, 10);
  e.Run(Times(0, 10, 9), {RuleHistory{&s, nullptr}});
  ReplayResult r = e.Finish(0, 80);
  ASSERT_EQ(r.nodes[0].marks.size(), 2u);
  EXPECT_EQ(r.nodes[0].marks[0].relieved_at, 40);
  EXPECT_TRUE(std::isnan(r.nodes[0].marks[1].relieved_at)) << "still hot at the end";
  EXPECT_EQ(r.nodes[0].hot_marked_seconds, 30 + 20);
  EXPECT_EQ(r.nodes[1].hot_marked_seconds, 0);
  ASSERT_EQ(r.nodes[2].marks.size(), 1u);
  EXPECT_EQ(r.nodes[2].marks[0].relieved_at, 10);
  EXPECT_EQ(r.nodes[2].hot_marked_seconds, 0) << "cleared at its first look";
  EXPECT_EQ(r.totals.hot_marked_node_seconds, 50);
  EXPECT_EQ(r.totals.relieved_marks, 2u);
  EXPECT_EQ(r.totals.time_to_relief_median, 10);
  EXPECT_EQ(r.totals.time_to_relief_p90, 40);
  rapidjson::Document d;
  const std::string json = ReplayJson(r);
  ASSERT_FALSE(d.Parse(json.c_str()).HasParseError()) << json;
  const auto& n0 = d["nodes"]["n0"];
  EXPECT_STREQ(n0["marks"][0]["relieved_at"].GetString(), "1970-01-01T00:00:40Z");
  EXPECT_EQ(n0["marks"][0]["relieved_after_seconds"].GetInt(), 40);
  EXPECT_TRUE(n0["marks"][1]["relieved_at"].IsNull());
  EXPECT_TRUE(n0["marks"][1]["relieved_after_seconds"].IsNull());
  EXPECT_EQ(n0["hot_marked_seconds"].GetInt(), 50);
  EXPECT_EQ(d["totals"]["hot_marked_node_seconds"].GetInt(), 50);
  EXPECT_EQ(d["totals"]["relieved_marks"].GetInt(), 2);
  EXPECT_EQ(d["totals"]["time_to_relief_median_seconds"].GetInt(), 10);
  EXPECT_EQ(d["totals"]["time_to_relief_p90_seconds"].GetInt(), 40);
}

TEST(ReplayEngine, MissingSeriesOfOneNodeIsMissingDataNotAnOutage) {
  auto s = Series({{90, N, N, N, N, N, N}, {10, 10, 10, 10, 10, 10, 10}}, 0, 10);
  ReplayEngine e(Config("rules:\n  - {name: cpu, query: cpu, threshold: 80}\n"), Nodes(2), 10, 20);
  e.Run(Times(0, 10, 7), {RuleHistory{&s, nullptr}});
  auto r = e.Finish(0, 60);
  EXPECT_EQ(r.totals.outage_steps, 0u);
  ASSERT_EQ(r.nodes[0].marks.size(), 1u);
  // Last value at 0; the hold goes once it is more than the grace (20 s) old: at 30.
  EXPECT_EQ(r.nodes[0].marks[0].end, 30);
}

TEST(ReplayEngine, HerdCapKeepsTheHottestAndCountsTheRest) {
  RuleConfig c = Config("rules:\n  - {name: cpu, query: cpu, threshold: 80}\nmaxMarked: 1\n");
  auto s = Series({{85, 85, 85}, {95, 95, 10}, {90, 90, 90}}, 0, 10);
  ReplayEngine e(c, Nodes(3), 10, 30);
  e.Run(Times(0, 10, 3), {RuleHistory{&s, nullptr}});
  auto r = e.Finish(0, 30);
  ASSERT_EQ(r.nodes[1].marks.size(), 1u);  // the hottest
  EXPECT_EQ(r.nodes[1].marks[0].start, 0);
  EXPECT_EQ(r.nodes[1].marks[0].end, 20);
  ASSERT_EQ(r.nodes[2].marks.size(), 1u);  // next hottest takes the place n1 frees
  EXPECT_EQ(r.nodes[2].marks[0].start, 20);
  EXPECT_TRUE(r.nodes[0].marks.empty());
  EXPECT_EQ(r.nodes[0].cap_hits, 3u);
  EXPECT_EQ(r.nodes[2].cap_hits, 2u);
  EXPECT_EQ(r.totals.capped_node_seconds, 50);
  EXPECT_EQ(r.totals.max_marked_at_once, 1u);
}

TEST(ReplayEngine, PoolsLevelsAndUnmatchedSeries) {
  RuleConfig c = Config(
      "rules:\n"
      "  - {name: gpu, query: util, threshold: 80, nodeSelector: pool=gpu}\n"
      "maxMarkedFraction: 1\n");
  auto nodes = Nodes(2);
  nodes[1].labels = {{"pool", "gpu"}};
  auto s = Series({{95, 95}, {95, 95}}, 0, 10);
  RangeSeries stray;
  stray.metric = {{"node", "elsewhere"}};
  stray.times = {0, 10};
  stray.values = {99, 99};
  s.push_back(stray);
  ReplayEngine e(c, nodes, 10, 30);
  e.Run(Times(0, 10, 2), {RuleHistory{&s, nullptr}});
  auto r = e.Finish(0, 10);
  EXPECT_TRUE(r.nodes[0].marks.empty()) << "not in the rule's pool";
  ASSERT_EQ(r.nodes[1].marks.size(), 1u);
  EXPECT_EQ(r.totals.unmatched_series, 1u);
}

TEST(ReplayEngine, RuleIntervalReusesTheLastAnswer) {
  // Queried every 30 s at a 10 s cycle: the answers at 10 and 20 are not asked for, so their
  // values (90) do not count; the one at 0 (10) stands until 30.
  RuleConfig c = Config("rules:\n  - {name: cpu, query: cpu, threshold: 80, interval: 30s}\n");
  auto s = Series({{10, 90, 90, 90}}, 0, 10);
  ReplayEngine e(c, Nodes(1), 10, 90);
  e.Run(Times(0, 10, 4), {RuleHistory{&s, nullptr}});
  auto r = e.Finish(0, 30);
  ASSERT_EQ(r.nodes[0].marks.size(), 1u);
  EXPECT_EQ(r.nodes[0].marks[0].start, 30);
}

TEST(ReplayJson, HasTheContractShape) {
  RuleConfig c = Config("rules:\n  - {name: cpu, query: cpu, threshold: 80}\n");
  auto s = Series({{90, 90}}, 1795651200, 60);
  ReplayEngine e(c, Nodes(1), 60, 180);
  e.Run(Times(1795651200, 60, 2), {RuleHistory{&s, nullptr}});
  const std::string json = ReplayJson(e.Finish(1795651200, 1795651260));
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(json.c_str()).HasParseError()) << json;
  EXPECT_STREQ(d["from"].GetString(), "2026-11-26T00:00:00Z");
  EXPECT_EQ(d["step_seconds"].GetInt(), 60);
  EXPECT_STREQ(d["rules"][0].GetString(), "cpu");
  const auto& mark = d["nodes"]["n0"]["marks"][0];
  EXPECT_STREQ(mark["start"].GetString(), "2026-11-26T00:00:00Z");
  EXPECT_TRUE(mark["end"].IsNull());
  EXPECT_STREQ(mark["rules"][0].GetString(), "cpu");
  EXPECT_EQ(d["nodes"]["n0"]["marked_seconds"].GetInt(), 60);
  for (const char* k : {"marks", "marked_node_seconds", "max_marked_at_once", "capped_node_seconds",
                        "unmatched_series"})
    EXPECT_TRUE(d["totals"].HasMember(k)) << k;
  EXPECT_TRUE(d["workloads"].IsArray());
}

TEST(ReplayWindow, TimesAndChunks) {
  EXPECT_EQ(*ParseReplayTime("now", 1000, "to"), 1000);
  EXPECT_EQ(*ParseReplayTime("now-7d", 1000000, "from"), 1000000 - 7 * 86400);
  EXPECT_EQ(*ParseReplayTime("2026-11-26T00:00:00Z", 0, "from"), 1795651200);
  EXPECT_EQ(*ParseReplayTime("1795651200", 0, "from"), 1795651200);
  for (const char* bad : {"", "yesterday", "now+1d", "now-", "-5", "12abc"}) {
    auto t = ParseReplayTime(bad, 0, "from");
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find("-from"), std::string::npos);
  }
  // Before 1970 or past the year 5000 (the grid counts whole milliseconds in 64 bits): refused,
  // whichever form said it (the first version let "now-21000d" and 1e300 through).
  for (const char* far : {"now-21000d", "1e300", "99999999999"}) {
    auto t = ParseReplayTime(far, 1795651200, "from");
    ASSERT_FALSE(t.ok()) << far;
    EXPECT_NE(t.status().message().find("before 1970 or after the year 5000"), std::string::npos)
        << t.status().message();
  }
  EXPECT_EQ(ReplayStepsPerChunk(1000), 250u);
  EXPECT_EQ(ReplayStepsPerChunk(1), kMaxPointsPerSeries);
  EXPECT_EQ(ReplayStepsPerChunk(10000000), 1u);
}

}  // namespace
}  // namespace ds
