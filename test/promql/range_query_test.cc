#include "promql/range_query.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
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

// The fast path's answer is the DOM's, bit for bit.
void ExpectSameResult(const RangeResult& fast, const RangeResult& ref, const std::string& body) {
  ASSERT_EQ(fast.series.size(), ref.series.size()) << body;
  EXPECT_EQ(fast.points, ref.points) << body;
  EXPECT_EQ(fast.warnings, ref.warnings) << body;
  for (size_t i = 0; i < ref.series.size(); ++i) {
    EXPECT_EQ(fast.series[i].metric, ref.series[i].metric) << body;
    ASSERT_EQ(fast.series[i].times.size(), ref.series[i].times.size()) << body;
    ASSERT_EQ(fast.series[i].values.size(), ref.series[i].values.size()) << body;
    for (size_t j = 0; j < ref.series[i].times.size(); ++j) {
      EXPECT_EQ(std::memcmp(&fast.series[i].times[j], &ref.series[i].times[j], sizeof(double)), 0)
          << body << " series " << i << " point " << j;
      EXPECT_EQ(std::memcmp(&fast.series[i].values[j], &ref.series[i].values[j], sizeof(double)), 0)
          << body << " series " << i << " point " << j;
    }
  }
}

// Everything a successful matrix may look like: the fast path takes it and gives what the DOM
// gives.
TEST(FastDecodeMatrix, TakesEveryFormOfAMatrixAsTheDomReadsIt) {
  const char* bodies[] = {
      kMatrix,
      // whitespace between every token, members in another order
      " {\n \"data\" : { \"result\" : [ { \"values\" : [ [ 100 , \"1\" ] , [ 160.5 , \"2\" ] ] ,"
      " \"metric\" : { \"node\" : \"n1\" } } ] , \"resultType\" : \"matrix\" } , \"status\" :"
      " \"success\" } \n",
      // escapes in label names and values, unknown members, the first of duplicates counts
      R"({"status":"success","status":"error","data":{"resultType":"matrix","resultType":"vector",)"
      R"("result":[{"metric":{"no\"de":"a\\b","node":"n\/1\n","job":"x"},"values":[[1,"5"]],)"
      R"("values":[[0,"0"]],"histograms":[[2,{"count":"1"}]]}],"extra":{"a":[1,true,null]}},)"
      R"("infos":["i"],"warnings":["w\"1","w2"],"warnings":["ignored"]})",
      // every value form: NaN, infinities, exponents, long decimals, negatives, integers
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"node":"n"},)"
      R"("values":[[1,"NaN"],[2,"+Inf"],[3,"-Inf"],[4,"1e-300"],[5,"-3.25"],)"
      R"([6,"56.733333333333334"],[7,"0"],[8,"1795303219.437"],[9,"12345678901234567890"],)"
      R"([10,"-0"],[11,"2.5E+3"]]}]}})",
      // every time form Prometheus and VictoriaMetrics write: whole seconds, fractions, zero
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},)"
      R"("values":[[0,"1"],[0.5,"1"],[150.25,"1"],[1795303219.437,"1"],[1800000000,"1"]]}]}})",
      // no series, a series without points, a metric without labels
      R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[]},)"
      R"({"metric":{"node":"b"},"values":[[1,"1"],[2,"2"],[3,"3"]]},{"metric":{"node":"c"},)"
      R"("values":[[2,"7"]]}]}})",
  };
  const LabelFilter node{"node"};
  for (const char* body : bodies) {
    for (const LabelFilter* keep : {static_cast<const LabelFilter*>(nullptr), &node}) {
      RangeResult fast;
      ASSERT_TRUE(FastDecodeMatrix(body, keep, &fast)) << body;
      auto ref = DecodeRangeResponseReference(body, 200, keep);
      ASSERT_TRUE(ref.ok()) << ref.status().ToString();
      ExpectSameResult(fast, *ref, body);
      auto both = DecodeRangeResponse(body, 200, keep);
      ASSERT_TRUE(both.ok()) << both.status().ToString();
      ExpectSameResult(*both, *ref, body);
    }
  }
  RangeResult escaped;
  ASSERT_TRUE(FastDecodeMatrix(bodies[2], nullptr, &escaped));
  EXPECT_EQ(escaped.series[0].metric,
            (Labels{{"no\"de", "a\\b"}, {"node", "n/1\n"}, {"job", "x"}}));
  EXPECT_EQ(escaped.series[0].times, std::vector<double>{1});
  EXPECT_EQ(escaped.warnings, (std::vector<std::string>{"w\"1", "w2"}));
}

// The fuzzer's seed (test/testdata/prom_matrix.json): a Prometheus answer with NaN, +Inf, an
// escaped label value, fractional times and a warning.
TEST(FastDecodeMatrix, TakesTheSeedAnswer) {
  std::ifstream in(std::string(TESTDATA_DIR) + "/prom_matrix.json");
  const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(body.empty());
  const LabelFilter keep{"node", "instance"};
  RangeResult fast;
  ASSERT_TRUE(FastDecodeMatrix(body, &keep, &fast));
  auto ref = DecodeRangeResponseReference(body, 200, &keep);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  ExpectSameResult(fast, *ref, body);
  ASSERT_EQ(fast.series.size(), 2u);
  EXPECT_EQ(fast.series[0].metric, (Labels{{"node", "n1"}, {"instance", "10.0.0.1:9100"}}));
  EXPECT_EQ(fast.series[0].times, (std::vector<double>{1795303200, 1795303260, 1795303320.5}));
  EXPECT_EQ(fast.series[1].metric, (Labels{{"node", "n\"2"}}));
  EXPECT_EQ(fast.points, 5u);
}

// What the fast path does not take it declines, leaving nothing; DecodeRangeResponse then gives
// the DOM's answer or its error, which names the problem.
TEST(FastDecodeMatrix, DeclinesAnythingElseAndTheDomDecides) {
  struct Case {
    const char* body;
    const char* dom_says;  // nullptr: the DOM takes it
  } cases[] = {
      {R"({"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries"})",
       "11,000 points"},
      {R"({"status":"success","data":{"resultType":"vector","result":[]}})", "resultType"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,2]]}]}})",
       "a point"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[2,"1"],[1,"1"]]}]}})",
       "do not ascend"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[1,"1"]]}]}})",
       "do not ascend"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":1},"values":[]}]}})",
       "not a string"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{}}]}})",
       "values is not an array"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[]}]}})",
       "metric is not an object"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[01,"1"]]}]}})",
       "malformed"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}})",
       "a point"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[]}} trailing)", "malformed"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[]})", "malformed"},
      {R"({"status":"success"})", "no \"data\" object"},
      // times in exponent form or with more than 19 digits (where the DOM's conversion is not
      // the correctly rounded one), \u escapes and a warning that is not a string are left to the
      // DOM, which takes them
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1e2,"1"]]}]}})",
       nullptr},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1795303219.4375000001,"1"]]}]}})",
       nullptr},
      {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"node":"n\u0031"},"values":[[1,"1"]]}]}})",
       nullptr},
      {R"({"status":"success","data":{"resultType":"matrix","result":[]},"warnings":[1,"w"]})",
       nullptr},
  };
  for (const Case& c : cases) {
    RangeResult fast;
    EXPECT_FALSE(FastDecodeMatrix(c.body, nullptr, &fast)) << c.body;
    EXPECT_TRUE(fast.series.empty() && fast.warnings.empty() && fast.points == 0) << c.body;
    auto r = DecodeRangeResponse(c.body, 200);
    if (c.dom_says == nullptr) {
      ASSERT_TRUE(r.ok()) << c.body << ": " << r.status().ToString();
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_NE(r.status().message().find(c.dom_says), std::string::npos) << r.status().ToString();
  }
  auto u = DecodeRangeResponse(cases[15].body, 200);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->series[0].metric, (Labels{{"node", "n1"}}));
  auto w = DecodeRangeResponse(cases[16].body, 200);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->warnings, std::vector<std::string>{"w"});
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

// Series on one grid of times are read row by row (by_step), gaps included; a step between
// rows or past them has no point.
TEST(RangeStepReader, ReadsSeriesOnOneGridByStep) {
  std::vector<RangeSeries> full = {
      {{{"node", "a"}}, {100, 110, 120}, {1, 2, 3}},
      {{{"node", "b"}}, {100, 110, 120}, {4, NAN, 6}},
  };
  std::vector<RangeSeries> gaps = {
      {{{"node", "a"}}, {100, 120, 130}, {1, 3, 4}},
      {{{"node", "b"}}, {100, 110, 120, 130}, {4, 5, 6, 7}},
      {{{"node", "c"}}, {}, {}},
      {{{"node", "d"}}, {110, 130}, {8, 9}},
  };
  RangeStepReader f(&full), g(&gaps);
  EXPECT_TRUE(f.by_step());
  EXPECT_TRUE(g.by_step());
  struct Step {
    double t;
    std::vector<std::tuple<std::string, double, double>> full, gaps;
  } steps[] = {
      {95, {}, {}},
      {100.0009, {{"a", 1, 100}, {"b", 4, 100}}, {{"a", 1, 100}, {"b", 4, 100}}},
      {105, {}, {}},
      {110, {{"a", 2, 110}, {"b", NAN, 110}}, {{"b", 5, 110}, {"d", 8, 110}}},
      {119.9991, {{"a", 3, 120}, {"b", 6, 120}}, {{"a", 3, 120}, {"b", 6, 120}}},
      {130, {}, {{"a", 4, 130}, {"b", 7, 130}, {"d", 9, 130}}},
      {140, {}, {}},
  };
  for (const Step& s : steps) {
    Collect cf, cg;
    EXPECT_EQ(f.Feed(s.t, &cf), !s.full.empty()) << s.t;
    EXPECT_EQ(g.Feed(s.t, &cg), !s.gaps.empty()) << s.t;
    ASSERT_EQ(cf.got.size(), s.full.size()) << s.t;
    for (size_t i = 0; i < s.full.size(); ++i) {
      EXPECT_EQ(std::get<0>(cf.got[i]), std::get<0>(s.full[i]));
      const double v = std::get<1>(cf.got[i]), want = std::get<1>(s.full[i]);
      EXPECT_TRUE(v == want || (std::isnan(v) && std::isnan(want))) << s.t;
      EXPECT_EQ(std::get<2>(cf.got[i]), std::get<2>(s.full[i])) << s.t;
    }
    EXPECT_EQ(cg.got, s.gaps) << s.t;
  }
}

// Times off the grid, rows closer than twice the tolerance, or a grid mostly empty: read
// series by series.
TEST(RangeStepReader, ReadsSeriesBySeriesWhenTheyFitNoGrid) {
  std::vector<RangeSeries> off = {{{{"node", "a"}}, {100, 110}, {1, 2}},
                                  {{{"node", "b"}}, {110.0004}, {7}}};
  std::vector<RangeSeries> close = {{{{"node", "a"}}, {100, 100.0015}, {1, 2}}};
  std::vector<RangeSeries> sparse = {{{{"node", "a"}}, {100, 110, 120, 130}, {1, 2, 3, 4}}};
  for (int i = 0; i < 4; ++i) sparse.push_back({{{"node", "s" + std::to_string(i)}}, {110}, {5}});
  EXPECT_FALSE(RangeStepReader(&off).by_step());
  EXPECT_FALSE(RangeStepReader(&close).by_step());
  RangeStepReader reader(&sparse);
  EXPECT_FALSE(reader.by_step());
  Collect c;
  EXPECT_TRUE(reader.Feed(110, &c));
  EXPECT_EQ(c.got.size(), 5u);
}

// Both ways of reading feed the same points: random series, on a grid with gaps or with some
// times off it, against the definition (each series' first point from t - tolerance on, if it is
// within t + tolerance).
TEST(RangeStepReader, FeedsWhatTheDefinitionSaysEitherWay) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const int steps = 1 + static_cast<int>(rng() % 30), n = 1 + static_cast<int>(rng() % 6);
    const bool jitter = round % 3 == 0;
    std::vector<RangeSeries> series(n);
    for (int s = 0; s < n; ++s) {
      series[s].metric = {{"node", "n" + std::to_string(s)}};
      for (int k = 0; k < steps; ++k) {
        if (rng() % 4 == 0) continue;  // a gap
        double t = 1000 + 60.0 * k;
        if (jitter && rng() % 5 == 0) t += (static_cast<int>(rng() % 5) - 2) * 0.0006;
        series[s].times.push_back(t);
        series[s].values.push_back(k + s / 10.0);
      }
    }
    RangeStepReader reader(&series);
    std::vector<size_t> cursor(n);
    for (int k = -1; k <= steps; ++k) {
      const double t = 1000 + 60.0 * k + (rng() % 3 == 0 ? 30 : 0);
      Collect got, want;
      for (int s = 0; s < n; ++s) {
        const RangeSeries& rs = series[s];
        while (cursor[s] < rs.times.size() && rs.times[cursor[s]] < t - kRangeStepTolerance)
          ++cursor[s];
        if (cursor[s] < rs.times.size() && rs.times[cursor[s]] <= t + kRangeStepTolerance)
          want.AddAt(RangeSeriesViews(rs), rs.values[cursor[s]], rs.times[cursor[s]]);
      }
      EXPECT_EQ(reader.Feed(t, &got), !want.got.empty()) << round << " " << t;
      EXPECT_EQ(got.got, want.got) << round << " " << t << " by_step " << reader.by_step();
    }
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
            "&step=10.000&timeout=10.000&nocache=1");
  EXPECT_EQ(r->body_bytes, std::string(kMatrix).size());
}

// Each range query's answer is expected to be about as large as the same query's last range
// answer (a replay asks for chunks of equal length), apart from instant queries' sizes.
TEST(HttpPrometheusClient, QueryRangeHintsItsLastAnswersSize) {
  FakeHttpTransport t;
  for (int i = 0; i < 4; ++i) t.AddResponse(200, kMatrix);
  HttpPrometheusClient client(&t, "http://prom:9090", 10);
  ASSERT_TRUE(client.QueryRange("cpu", 0, 10, 1).ok());
  EXPECT_EQ(t.last_request().request.body_bytes_hint, 0u);  // nothing known yet
  ASSERT_TRUE(client.QueryRange("cpu", 11, 20, 1).ok());
  const size_t n = std::string(kMatrix).size();
  EXPECT_EQ(t.last_request().request.body_bytes_hint, n + n / 16);
  ASSERT_TRUE(client.QueryRange("memory", 0, 10, 1).ok());  // another query: none yet
  EXPECT_EQ(t.last_request().request.body_bytes_hint, 0u);
  t.AddResponse(200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  ASSERT_TRUE(client.Query("cpu").ok());  // an instant query's size is its own
  EXPECT_EQ(t.last_request().request.body_bytes_hint, 0u);
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

// The range-query grid: multiples of the step in whole milliseconds, for times before 1970 too
// (a truncating division would round those down).
TEST(StepGrid, TheFirstMultipleOfTheStepAtOrAfter) {
  EXPECT_EQ(StepGridAtOrAfter(1795651230, 60), 1795651260);
  EXPECT_EQ(StepGridAtOrAfter(1795651260, 60), 1795651260);
  EXPECT_EQ(StepGridAtOrAfter(1000.2, 0.5), 1000.5);
  EXPECT_EQ(StepGridAtOrAfter(-90, 60), -60);
  EXPECT_EQ(StepGridAtOrAfter(-120, 60), -120);
  EXPECT_TRUE(WholeMilliseconds(0.25));
  EXPECT_TRUE(WholeMilliseconds(60));
  EXPECT_FALSE(WholeMilliseconds(0.3333));
  EXPECT_FALSE(WholeMilliseconds(0.0005));
}

}  // namespace
}  // namespace ds
