#include "web/value_history.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "web/routes.h"

namespace ds {
namespace {

constexpr double kT0 = 1800000000;  // a minute boundary (epoch seconds)

// A cycle's table: `rules` as (name, op), one row per name with its values (NaN: none).
NodeTable Table(const std::vector<std::pair<std::string, std::string>>& rules,
                const std::vector<std::pair<std::string, std::vector<double>>>& rows) {
  NodeTable t;
  for (const auto& [name, op] : rules) {
    NodeTable::Column c{name, op, op == ">" ? 80.0 : 100.0, op == ">" ? 60.0 : 200.0};
    c.unit = ValueUnit::kPercent;
    t.rules.push_back(c);
  }
  for (const auto& [name, values] : rows) {
    t.names.push_back(name);
    t.values.insert(t.values.end(), values.begin(), values.end());
    t.states.push_back(NodeTable::State::kCold);
    t.since_wall.push_back(0);
  }
  return t;
}

rapidjson::Document Parse(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str());
  EXPECT_FALSE(d.HasParseError()) << body;
  return d;
}

// The node's series of `rule` (index), oldest minute first.
std::vector<double> SeriesOf(const ValueHistory& h, const std::string& node, size_t rule) {
  rapidjson::Document d = Parse(h.RenderJson({node}));
  std::vector<double> out;
  if (!d["nodes"].HasMember(node.c_str())) return out;
  for (const auto& v : d["nodes"][node.c_str()][static_cast<rapidjson::SizeType>(rule)].GetArray())
    out.push_back(v.IsNull() ? std::nan("") : v.GetDouble());
  return out;
}

TEST(ValueHistory, KeepsEachMinutesWorstValue) {
  ValueHistory h;
  const std::vector<std::pair<std::string, std::string>> rules = {{"cpu", ">"}, {"mem", "<"}};
  NodeTable a = Table(rules, {{"n1", {50, 500}}});
  NodeTable b = Table(rules, {{"n1", {90, 300}}});
  NodeTable c = Table(rules, {{"n1", {70, 400}}});
  h.Record(&a, kT0 + 1, 0, 0);
  h.Record(&b, kT0 + 20, 0, 0);
  h.Record(&c, kT0 + 40, 0, 0);
  std::vector<double> cpu = SeriesOf(h, "n1", 0), mem = SeriesOf(h, "n1", 1);
  ASSERT_EQ(cpu.size(), ValueHistory::kNodeMinutes);
  // The current minute is the last; the ones before it had no cycle.
  EXPECT_NEAR(cpu.back(), 90, 0.5);   // '>': the highest of the minute
  EXPECT_NEAR(mem.back(), 300, 1.5);  // '<': the lowest
  EXPECT_TRUE(std::isnan(cpu.front()));
}

TEST(ValueHistory, AValueKeepsItsPlaceWithinItsSeriesRange) {
  ValueHistory h;
  for (int m = 0; m < 60; ++m) {
    NodeTable t = Table({{"cpu", ">"}}, {{"n1", {static_cast<double>(m) * 100.0 / 59}}});
    h.Record(&t, kT0 + 60.0 * m, 0, 0);
  }
  std::vector<double> cpu = SeriesOf(h, "n1", 0);
  ASSERT_EQ(cpu.size(), 60u);
  // 255 levels over 0..100 (and the range widened as the line rose, each widening rounding the
  // minutes held once more): each minute within one level of its value.
  for (int m = 0; m < 60; ++m) EXPECT_NEAR(cpu[static_cast<size_t>(m)], m * 100.0 / 59, 0.4) << m;
}

TEST(ValueHistory, MinutesOlderThanAnHourAreGone) {
  ValueHistory h;
  NodeTable t = Table({{"cpu", ">"}}, {{"n1", {95}}});
  h.Record(&t, kT0, 0, 0);
  NodeTable later = Table({{"cpu", ">"}}, {{"n1", {10}}});
  h.Record(&later, kT0 + 59 * 60, 0, 0);
  EXPECT_NEAR(SeriesOf(h, "n1", 0).front(), 95, 0.5);  // 59 minutes ago: still in the hour
  h.Record(&later, kT0 + 60 * 60, 0, 0);
  // Only the 10s are left (to a level of the range they shared with the 95: 0.4).
  for (double v : SeriesOf(h, "n1", 0)) EXPECT_TRUE(std::isnan(v) || std::fabs(v - 10) < 0.5) << v;
}

TEST(ValueHistory, ANodeThatLeftKeepsItsLineForTenMinutesThenGoes) {
  ValueHistory h;
  NodeTable both = Table({{"cpu", ">"}}, {{"gone", {85}}, {"stays", {40}}});
  NodeTable one = Table({{"cpu", ">"}}, {{"stays", {40}}});
  h.Record(&both, kT0, 0, 0);
  h.Record(&one, kT0 + 10 * 60, 0, 0);
  EXPECT_EQ(SeriesOf(h, "gone", 0).size(), 60u);  // back within 10 minutes, it keeps its line
  h.Record(&one, kT0 + 11 * 60, 0, 0);
  EXPECT_TRUE(SeriesOf(h, "gone", 0).empty()) << "an hour of departed nodes grew with churn";
  EXPECT_EQ(SeriesOf(h, "stays", 0).size(), 60u);
}

TEST(ValueHistory, ANodeGetsItsLinesWithItsFirstValueAndLosesThemWhenTheHourHasNone) {
  ValueHistory h;
  const double none = std::nan("");
  std::vector<std::pair<std::string, std::vector<double>>> rows;
  for (int i = 0; i < 1000; ++i) rows.push_back({"quiet-" + std::to_string(1000 + i), {none}});
  rows.push_back({"valued", {50}});
  NodeTable t = Table({{"cpu", ">"}}, rows);
  h.Record(&t, kT0, 0, 0);
  const size_t one_line = h.Bytes();
  EXPECT_LT(one_line, 1000u * 60) << "a thousand nodes without a value hold no line";
  EXPECT_TRUE(SeriesOf(h, "quiet-1000", 0).empty());
  EXPECT_EQ(SeriesOf(h, "valued", 0).size(), 60u);

  rows[0].second = {70};  // quiet-1000's first value, in the next minute
  t = Table({{"cpu", ">"}}, rows);
  h.Record(&t, kT0 + 60, 0, 0);
  const std::vector<double> joined = SeriesOf(h, "quiet-1000", 0);
  ASSERT_EQ(joined.size(), 60u);
  EXPECT_NEAR(joined.back(), 70, 0.01);
  EXPECT_TRUE(std::isnan(joined[58]));

  // Both still in the cluster, without values for an hour: their lines go.
  rows[0].second = {none};
  rows.back().second = {none};
  t = Table({{"cpu", ">"}}, rows);
  for (int m = 2; m <= 60; ++m) h.Record(&t, kT0 + 60.0 * m, 0, 0);
  EXPECT_FALSE(SeriesOf(h, "quiet-1000", 0).empty()) << "its value of minute 1 is in the hour";
  h.Record(&t, kT0 + 60.0 * 61, 0, 0);
  EXPECT_TRUE(SeriesOf(h, "quiet-1000", 0).empty());
  EXPECT_TRUE(SeriesOf(h, "valued", 0).empty());
}

TEST(ValueHistory, TheRoomOfNodesThatLeftIsGivenBack) {
  // A churn of nodes that come and go leaves far fewer rows than it had: the storage shrinks back.
  ValueHistory h;
  std::vector<std::pair<std::string, std::vector<double>>> rows;
  for (int i = 0; i < 4000; ++i) rows.push_back({"node-" + std::to_string(10000 + i), {50}});
  NodeTable t = Table({{"cpu", ">"}}, rows);
  h.Record(&t, kT0, 0, 0);
  const size_t all = h.Bytes();
  rows.resize(1000);
  t = Table({{"cpu", ">"}}, rows);
  for (int m = 1; m <= 11; ++m) h.Record(&t, kT0 + 60.0 * m, 0, 0);
  EXPECT_LT(h.Bytes(), all / 3) << all;
  EXPECT_EQ(SeriesOf(h, "node-10999", 0).size(), 60u);
  EXPECT_TRUE(SeriesOf(h, "node-11000", 0).empty());
}

TEST(ValueHistory, NodesJoiningAmongOthersKeepEveryLine) {
  ValueHistory h;
  NodeTable first = Table({{"cpu", ">"}, {"avail", "<"}}, {{"b", {10, 500}}, {"d", {30, 700}}});
  h.Record(&first, kT0, 0, 0);
  // Joining before, between and after the known nodes, in one cycle; "d" is absent this cycle.
  NodeTable next = Table({{"cpu", ">"}, {"avail", "<"}},
                         {{"a", {1, 100}}, {"b", {11, 510}}, {"c", {21, 620}}, {"e", {41, 840}}});
  h.Record(&next, kT0 + 60, 0, 0);
  auto last = [&](const std::string& node, size_t rule) { return SeriesOf(h, node, rule).back(); };
  auto before = [&](const std::string& node, size_t rule) {
    const std::vector<double> s = SeriesOf(h, node, rule);
    return s[s.size() - 2];
  };
  EXPECT_NEAR(last("a", 0), 1, 0.01);
  EXPECT_NEAR(last("a", 1), 100, 0.5);
  EXPECT_TRUE(std::isnan(before("a", 0))) << "a joined in the second minute";
  EXPECT_NEAR(before("b", 0), 10, 0.01);
  EXPECT_NEAR(last("b", 0), 11, 0.01);
  EXPECT_NEAR(last("b", 1), 510, 0.5);
  EXPECT_NEAR(last("c", 1), 620, 0.5);
  EXPECT_NEAR(before("d", 0), 30, 0.01);
  EXPECT_NEAR(before("d", 1), 700, 0.5);
  EXPECT_TRUE(std::isnan(last("d", 0)));
  EXPECT_NEAR(last("e", 0), 41, 0.01);
  EXPECT_NEAR(last("e", 1), 840, 0.5);
}

TEST(ValueHistory, NodesJoiningOneByOneReuseTheRoomLeftForThem) {
  // A joining node must not make a new copy of every series (megabytes at 10,000 nodes): after
  // the first join, the storage has room for more.
  ValueHistory h;
  std::vector<std::pair<std::string, std::vector<double>>> rows;
  for (int i = 0; i < 1000; ++i) rows.push_back({"node-" + std::to_string(1000 + i), {50}});
  NodeTable t = Table({{"cpu", ">"}}, rows);
  h.Record(&t, kT0, 0, 0);
  const size_t at_start = h.Bytes();
  rows.push_back({"node-0000", {60}});
  std::sort(rows.begin(), rows.end());  // a table's names are sorted
  t = Table({{"cpu", ">"}}, rows);
  h.Record(&t, kT0 + 1, 0, 0);
  const size_t after_one = h.Bytes();
  EXPECT_GT(after_one, at_start);
  for (int i = 1; i < 50; ++i) {
    rows.push_back({"node-000" + std::to_string(i), {60}});
    std::sort(rows.begin(), rows.end());
    t = Table({{"cpu", ">"}}, rows);
    h.Record(&t, kT0 + 1 + i, 0, 0);
  }
  EXPECT_EQ(h.Bytes(), after_one);
  EXPECT_NEAR(SeriesOf(h, "node-00049", 0).back(), 60, 0.01);
  EXPECT_NEAR(SeriesOf(h, "node-1999", 0).back(), 50, 0.01);
}

TEST(ValueHistory, ASpikeThatLeftTheHourNoLongerFlattensTheLine) {
  ValueHistory h;
  NodeTable spike = Table({{"mem", "<"}}, {{"n1", {64e9}}});
  h.Record(&spike, kT0, 0, 0);
  for (int m = 1; m <= 61; ++m) {
    NodeTable t = Table({{"mem", "<"}}, {{"n1", {100e6 + (m % 2) * 1e6}}});
    h.Record(&t, kT0 + 60.0 * m, 0, 0);
  }
  // Over 0..64 GB a level is 250 MB: 100 and 101 MB would read the same. With the spike gone
  // the range is theirs again.
  std::vector<double> mem = SeriesOf(h, "n1", 0);
  EXPECT_NEAR(mem[58], 100e6, 0.1e6);
  EXPECT_NEAR(mem[59], 101e6, 0.1e6);
}

TEST(ValueHistory, AReloadKeepsARulesLineByName) {
  ValueHistory h;
  NodeTable before = Table({{"cpu", ">"}, {"mem", "<"}}, {{"n1", {90, 150}}});
  h.Record(&before, kT0, 0, 0);
  NodeTable after = Table({{"mem", "<"}, {"disk", ">"}}, {{"n1", {140, 70}}});
  h.Record(&after, kT0 + 60, 0, 0);
  rapidjson::Document d = Parse(h.RenderJson({"n1"}));
  ASSERT_EQ(d["rules"].Size(), 2u);
  EXPECT_STREQ(d["rules"][0]["name"].GetString(), "mem");
  EXPECT_STREQ(d["rules"][1]["name"].GetString(), "disk");
  std::vector<double> mem = SeriesOf(h, "n1", 0), disk = SeriesOf(h, "n1", 1);
  EXPECT_NEAR(mem[58], 150, 0.1);  // the minute before the reload, under its old index
  EXPECT_NEAR(mem[59], 140, 0.1);
  EXPECT_TRUE(std::isnan(disk[58]));
  EXPECT_NEAR(disk[59], 70, 0.1);
}

TEST(ValueHistory, ThresholdsPerMinuteAndTheCluster) {
  ValueHistory h;
  NodeTable t = Table({{"cpu", ">"}}, {{"n1", {90}}, {"n2", {20}}});
  t.states[0] = NodeTable::State::kHot;
  h.Record(&t, kT0, 1, 10);
  h.Record(&t, kT0 + 10, 2, 13);       // three evictions this minute
  h.Record(nullptr, kT0 + 60, 2, 14);  // a cycle that judged nothing (standby)
  h.Record(&t, kT0 + 120, 1, 2);       // a new rebalancer's counter: starts over, counts nothing
  rapidjson::Document d = Parse(h.RenderJson({}));
  EXPECT_EQ(d["start"].GetInt64(), static_cast<int64_t>(kT0) + 120 - 59 * 60);
  const auto& thr = d["rules"][0]["threshold"];
  EXPECT_TRUE(thr[57].IsNull() ? false : thr[57].GetDouble() == 80);
  EXPECT_TRUE(thr[58].IsNull());  // the standby minute judged no node
  const auto& cl = d["cluster"];
  const rapidjson::SizeType last = cl["marked"].Size() - 1;
  EXPECT_EQ(cl["marked"][last - 2].GetInt(), 2);  // the most of the minute
  EXPECT_EQ(cl["hot"][last - 2].GetInt(), 1);
  EXPECT_EQ(cl["evictions"][last - 2].GetUint(), 3u);
  EXPECT_EQ(cl["evictions"][last - 1].GetUint(), 1u);
  EXPECT_TRUE(cl["hot"][last - 1].IsNull());
  EXPECT_EQ(cl["evictions"][last].GetUint(), 0u);
  EXPECT_TRUE(cl["marked"][0].IsNull());  // six hours ago: no cycle
}

TEST(ValueHistory, CappedNodesCountAsHot) {
  ValueHistory h;
  NodeTable t = Table({{"cpu", ">"}}, {{"n1", {90}}, {"n2", {95}}});
  t.states = {NodeTable::State::kHot, NodeTable::State::kCapped};
  h.Record(&t, kT0, 1, 0);
  rapidjson::Document d = Parse(h.RenderJson({}));
  const auto& hot = d["cluster"]["hot"];
  EXPECT_EQ(hot[hot.Size() - 1].GetInt(), 2) << "as the page's hot card: capped nodes are hot";
}

TEST(ValueHistory, AClockThatWentFarBackStartsOver) {
  ValueHistory h;
  NodeTable t = Table({{"cpu", ">"}}, {{"n1", {90}}});
  h.Record(&t, kT0, 0, 0);
  h.Record(&t, kT0 + 86400, 0, 0);  // a bad step forward...
  NodeTable later = Table({{"cpu", ">"}}, {{"n1", {20}}});
  h.Record(&later, kT0 + 60, 0, 0);  // ...and back: not folded into the minute a day ahead
  rapidjson::Document d = Parse(h.RenderJson({"n1"}));
  EXPECT_EQ(d["start"].GetInt64(), static_cast<int64_t>(kT0) + 60 - 59 * 60);
  std::vector<double> cpu = SeriesOf(h, "n1", 0);
  EXPECT_NEAR(cpu.back(), 20, 0.01);
  // A step back within a few minutes keeps the history (it goes into the current minute).
  h.Record(&t, kT0 + 61, 0, 0);
  h.Record(&later, kT0 - 60, 0, 0);
  EXPECT_NEAR(SeriesOf(h, "n1", 0).back(), 90, 0.5);
}

TEST(ValueHistory, ValuesAtTheRangesFloatEdgeAndBeyondAFloat) {
  ValueHistory h;
  NodeTable a = Table({{"bytes", ">"}}, {{"n1", {1e10}}});
  NodeTable b = Table({{"bytes", ">"}}, {{"n1", {1e10 + 1028}}});
  h.Record(&a, kT0, 0, 0);
  h.Record(&b, kT0 + 60, 0, 0);  // its float bound rounds to below the value
  std::vector<double> v = SeriesOf(h, "n1", 0);
  EXPECT_NEAR(v[58], 1e10, 2048);
  EXPECT_NEAR(v[59], 1e10 + 1028, 2048)
      << "a value past the float bound is the top code, not empty";
  NodeTable huge = Table({{"bytes", ">"}}, {{"n2", {1e300}}});
  h.Record(&huge, kT0 + 120, 0, 0);
  EXPECT_TRUE(SeriesOf(h, "n2", 0).empty()) << "beyond a float: no value, so no line yet";
}

TEST(ValueHistory, EachNodeOnceHoweverOftenItIsAskedFor) {
  ValueHistory h;
  NodeTable t = Table({{"cpu", ">"}}, {{"n1", {90}}});
  h.Record(&t, kT0, 0, 0);
  std::vector<std::string> many(500, "n1");
  const std::string body = h.RenderJson(many);
  EXPECT_EQ(Parse(body)["nodes"].MemberCount(), 1u);
  EXPECT_EQ(body, h.RenderJson({"n1"}));
}

TEST(ValueHistory, TenThousandNodesAndFourRulesStayWithinAFewMegabytes) {
  ValueHistory h;
  std::vector<std::pair<std::string, std::vector<double>>> rows;
  for (int i = 0; i < 10000; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "node-%05d", i);
    rows.push_back({name, {50.0 + i % 40, 40, 1e9, 3}});
  }
  NodeTable t = Table({{"cpu", ">"}, {"mem", ">"}, {"avail", "<"}, {"load", ">"}}, rows);
  for (int m = 0; m < 90; ++m) h.Record(&t, kT0 + 60.0 * m, 100, 0);
  EXPECT_LT(h.Bytes(), 3u << 20) << h.Bytes();
  EXPECT_NEAR(SeriesOf(h, "node-00007", 0).back(), 57, 0.01);
}

TEST(ValueHistory, TheEndpointTakesANodeListAndRefusesAMalformedOne) {
  ValueHistory h;
  NodeTable t = Table({{"cpu", ">"}}, {{"a.example", {90}}, {"b", {20}}});
  h.Record(&t, kT0, 0, 0);
  ControllerView view;
  WebRequest req;
  req.method = "GET";
  req.path = "/api/v1/history";
  req.query = "nodes=a%2Eexample,b,unknown&other=1";
  EXPECT_EQ(HandleRequest(req, view, [] {}).status, 404);  // no history kept
  view.history = &h;
  WebResponse r = HandleRequest(req, view, [] {});
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document d = Parse(r.body);
  EXPECT_TRUE(d["nodes"].HasMember("a.example"));
  EXPECT_TRUE(d["nodes"].HasMember("b"));
  EXPECT_FALSE(d["nodes"].HasMember("unknown"));
  req.query = "nodes=a%2";
  EXPECT_EQ(HandleRequest(req, view, [] {}).status, 400);
  req.query = "nodes=";
  for (size_t i = 0; i <= ValueHistory::kMaxNodesPerRequest; ++i)
    req.query += "n" + std::to_string(i) + ",";
  r = HandleRequest(req, view, [] {});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("too many nodes"), std::string::npos);
}

}  // namespace
}  // namespace ds
