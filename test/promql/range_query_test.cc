#include "promql/range_query.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "promql/prometheus_client.h"
#include "test/fakes/fake_http_transport.h"

namespace ds {
namespace {

constexpr char kMatrix[] =
    R"({"status":"success","data":{"resultType":"matrix","result":[)"
    R"({"metric":{"__name__":"cpu","node":"n1","job":"j"},"values":[[100,"1"],[110,"2.5"],[130,"NaN"]]},)"
    R"({"metric":{"node":"n2"},"values":[[110,"+Inf"]]}]},"warnings":["w1"]})";

TEST(DecodeRangeResponse, KeepsEverySeriesAndPoint) {
  LabelFilter keep{"node"};
  auto r = DecodeRangeResponse(kMatrix, 200, &keep);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->series.size(), 2u);
  EXPECT_EQ(r->series[0].metric, (Labels{{"node", "n1"}}));
  EXPECT_EQ(r->series[0].times, (std::vector<double>{100, 110, 130}));
  EXPECT_EQ(r->series[0].values[1], 2.5);
  EXPECT_TRUE(std::isnan(r->series[0].values[2]));
  EXPECT_TRUE(std::isinf(r->series[1].values[0]));
  EXPECT_EQ(r->points, 4u);
  EXPECT_EQ(r->warnings, std::vector<std::string>{"w1"});
}

TEST(DecodeRangeResponse, BadAnswersNameTheProblem) {
  struct Case {
    const char* body;
    int http;
    StatusCode code;
    const char* says;
  } cases[] = {
      {"<html>bad gateway</html>", 502, StatusCode::kUnavailable, "HTTP 502"},
      {"{not json", 200, StatusCode::kUnavailable, "malformed"},
      {R"({"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries"})",
       400, StatusCode::kInvalidArgument, "11,000 points"},
      {R"({"status":"error","errorType":"timeout","error":"query timed out"})", 503,
       StatusCode::kUnavailable, "timed out"},
      {R"({"status":"success","data":{"resultType":"vector","result":[]}})", 200,
       StatusCode::kUnavailable, "resultType is \"vector\""},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,2]]}]}})",
       200, StatusCode::kUnavailable, "result[0]: a point"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[2,"1"],[1,"1"]]}]}})",
       200, StatusCode::kUnavailable, "do not ascend"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":1},"values":[]}]}})",
       200, StatusCode::kUnavailable, "not a string"},
  };
  for (const auto& c : cases) {
    auto r = DecodeRangeResponse(c.body, c.http);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), c.code) << c.body;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().ToString();
  }
}

TEST(PlanRangeChunks, CoversEveryStepOnceWithinTheLimit) {
  // 7 days at 60 s: 10,081 steps fit in one chunk; at 30 s two are needed.
  auto one = PlanRangeChunks(0, 7 * 86400, 60);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].steps, 10081u);
  auto two = PlanRangeChunks(0, 7 * 86400, 30);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].steps, kMaxPointsPerSeries);
  EXPECT_EQ(two[0].end, 30.0 * (kMaxPointsPerSeries - 1));
  EXPECT_EQ(two[1].start, two[0].end + 30);
  EXPECT_EQ(two[1].end, 7 * 86400);
  EXPECT_EQ(two[0].steps + two[1].steps, 20161u);
  // A window that is not a whole number of steps ends at the last step inside it.
  auto c = PlanRangeChunks(10, 45, 10, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].start, 10);
  EXPECT_EQ(c[0].end, 20);
  EXPECT_EQ(c[1].start, 30);
  EXPECT_EQ(c[1].end, 40);
  EXPECT_EQ(c[1].steps, 2u);
  EXPECT_TRUE(PlanRangeChunks(10, 9, 1).empty());
  EXPECT_EQ(PlanRangeChunks(10, 10, 1).size(), 1u);
}

// Records what a step fed: (label "node", value, timestamp).
class Collect : public SampleSink {
 public:
  void Reset() override { got.clear(); }
  void Add(const LabelViews& labels, double value) override { AddAt(labels, value, 0); }
  void AddAt(const LabelViews& labels, double value, double t) override {
    got.emplace_back(std::string(*FindLabel(labels, "node")), value, t);
  }
  std::vector<std::tuple<std::string, double, double>> got;
};

// The replay and a one-pass run's history read a range answer step by step: a series' point at
// the step it equals (within a millisecond), none where it has a gap.
TEST(RangeStepReader, FeedsEachSeriesPointAtItsStep) {
  std::vector<RangeSeries> series = {
      {{{"node", "a"}}, {100, 110, 120}, {1, 2, 3}},
      {{{"node", "b"}}, {110.0004}, {7}},  // a gap at 100 and after 110
  };
  RangeStepReader reader(&series);
  struct Step {
    double t;
    std::vector<std::tuple<std::string, double, double>> want;
  } steps[] = {
      {100, {{"a", 1, 100}}},
      {110, {{"a", 2, 110}, {"b", 7, 110.0004}}},
      {115, {}},  // between two points: none
      {120, {{"a", 3, 120}}},
      {130, {}},
  };
  for (const Step& s : steps) {
    Collect c;
    EXPECT_EQ(reader.Feed(s.t, &c), !s.want.empty()) << s.t;
    EXPECT_EQ(c.got, s.want) << s.t;
  }
}

TEST(HttpPrometheusClient, QueryRangeCarriesTheWindowAndDecodesTheMatrix) {
  FakeHttpTransport t;
  t.AddResponse(200, kMatrix);
  HttpPrometheusClient client(&t, "http://prom:9090", 10);
  auto r = client.QueryRange("up == 1", 100, 130, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->series.size(), 2u);
  EXPECT_EQ(t.last_request().request.url,
            "http://prom:9090/api/v1/query_range?query=up%20%3D%3D%201&start=100.000&end=130.000"
            "&step=10.000&timeout=10.000");
  EXPECT_EQ(r->body_bytes, std::string(kMatrix).size());
}

TEST(HttpPrometheusClient, QueryRangeRefusedCredentialsAreNamed) {
  FakeHttpTransport t;
  t.AddResponse(401, "Unauthorized");
  HttpPrometheusClient client(&t, "http://prom:9090", 10);
  auto r = client.QueryRange("up", 0, 10, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("401 Unauthorized to no credentials"), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace ds
