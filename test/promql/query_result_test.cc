#include "promql/query_result.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "promql/fast_vector_decoder.h"
#include "promql/reference_decoder.h"
#include "promql/response_decoder.h"

namespace ds {
namespace {

std::string Read(const std::string& name) {
  std::ifstream in(std::string(TESTDATA_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DecodeQueryResponse, RecordedVector) {
  auto r = DecodeQueryResponse(Read("prom_vector.json"), 200);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->result_type, "vector");
  ASSERT_EQ(r->samples.size(), 1u);
  EXPECT_EQ(r->samples[0].value, 4e9);
  EXPECT_DOUBLE_EQ(r->samples[0].timestamp, 1795303219.437);
  EXPECT_EQ(*FindLabel(r->samples[0].metric, "ip"), "10.0.0.2");
}

TEST(DecodeQueryResponse, SpecialValues) {
  auto r = DecodeQueryResponse(Read("prom_special.json"), 200);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->samples.size(), 5u);
  EXPECT_EQ(r->samples[0].value, 1.7976931348623157e308);
  EXPECT_TRUE(std::isnan(r->samples[1].value));
  EXPECT_EQ(r->samples[2].value, -INFINITY);
  EXPECT_EQ(r->samples[3].value, INFINITY);
  EXPECT_EQ(r->samples[4].value, 1e-300);
}

TEST(DecodeQueryResponse, Warnings) {
  auto r = DecodeQueryResponse(Read("prom_warnings.json"), 200);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("remote_read"), std::string::npos);
}

TEST(DecodeQueryResponse, ScalarAndMatrix) {
  auto s = DecodeQueryResponse(
      R"({"status":"success","data":{"resultType":"scalar","result":[1795303219.444,"2"]}})", 200);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->samples.size(), 1u);
  EXPECT_EQ(s->samples[0].value, 2);
  EXPECT_TRUE(s->samples[0].metric.empty());
  auto m = DecodeQueryResponse(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"ip":"a"},"values":[[1,"1"],[2,"5"]]},{"metric":{"ip":"b"},"values":[]}]}})",
      200);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->samples.size(), 1u) << "an empty series has no newest point";
  EXPECT_EQ(m->samples[0].value, 5) << "the newest point of a range is used";
}

TEST(DecodeQueryResponse, Errors) {
  struct Case {
    std::string body;
    int http;
    StatusCode code;
    const char* want;
  };
  std::vector<Case> cases = {
      {R"({"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:46: parse error"})",
       400, StatusCode::kInvalidArgument, "bad_data error: invalid parameter"},
      {R"({"status":"error","errorType":"timeout","error":"query timed out in query execution"})",
       503, StatusCode::kUnavailable, "timeout error"},
      {R"({"status":"error","errorType":"execution","error":"found duplicate series"})", 422,
       StatusCode::kUnavailable, "execution error"},
      {R"({"status":"success","data":{"resultType":"string","result":[1,"hello"]}})", 200,
       StatusCode::kInvalidArgument, "string"},
      {"<html>bad gateway</html>", 502, StatusCode::kUnavailable, "HTTP 502"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1,2]}]}})",
       200, StatusCode::kUnavailable, "result[0].value"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"2"]}]}})",
       200, StatusCode::kUnavailable, "metric"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"fast"]}]}})",
       200, StatusCode::kUnavailable, "value"},
      {R"({"status":"success","data":{"resultType":"vector","result":)", 200,
       StatusCode::kUnavailable, "invalid JSON"},
      {R"({"status":"success"})", 200, StatusCode::kUnavailable, "data"},
      {R"([1,2])", 200, StatusCode::kUnavailable, "not an object"},
      {"", 200, StatusCode::kUnavailable, "invalid JSON"},
  };
  for (const auto& c : cases) {
    auto r = DecodeQueryResponse(c.body, c.http);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), c.code) << c.body << " -> " << r.status().ToString();
    EXPECT_NE(r.status().ToString().find(c.want), std::string::npos) << r.status().ToString();
  }
}

TEST(ParsePromValue, Forms) {
  double v;
  EXPECT_TRUE(ParsePromValue("1.5", &v));
  EXPECT_EQ(v, 1.5);
  EXPECT_TRUE(ParsePromValue("+Inf", &v));
  EXPECT_EQ(v, INFINITY);
  EXPECT_TRUE(ParsePromValue("NaN", &v));
  EXPECT_TRUE(std::isnan(v));
  EXPECT_FALSE(ParsePromValue("", &v));
  EXPECT_FALSE(ParsePromValue("1.5x", &v));
  EXPECT_FALSE(ParsePromValue("nan", &v));
}

// The short-decimal fast path must give exactly what from_chars gives, and leave every other
// form (exponents, 17+ digits, ".5", "1.") to it.
TEST(ParsePromValue, FastPathIsBitExact) {
  std::vector<std::string> inputs = {"0",
                                     "-0",
                                     "0.0",
                                     "-0.0",
                                     "1",
                                     "7.5",
                                     "0.1",
                                     "0.3",
                                     "-2.675",
                                     "1795303219.437",
                                     "9007199254740992",
                                     "9007199254740993",
                                     "90071992547409.93",
                                     "1234567890123456789",
                                     "12345678901234567890",
                                     "0.0000000000000000000001",
                                     "0.00000000000000000000001",
                                     "123.4567890123456789",
                                     "00012.50",
                                     "1.",
                                     ".5",
                                     "1e-300",
                                     "1e309",
                                     "-1e309",
                                     "1e-400",
                                     "4.9e-324",
                                     "179769313486231570000000000000000000000.0",
                                     "-0.000001",
                                     "99.99999999999999"};
  for (unsigned i = 0; i < 2000; ++i) {  // and many ordinary ones
    inputs.push_back(std::to_string(i * 7919 % 100000) + "." + std::to_string(i * 104729 % 1000));
    inputs.push_back("-0." + std::to_string(i * 2654435761u));
  }
  for (const std::string& s : inputs) {
    double want = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), want);
    const bool plain = ec == std::errc() && ptr == s.data() + s.size();
    double got = 0;
    const bool ok = ParsePromValue(s, &got);
    if (!plain) continue;  // out of range and partial forms: covered by SpecialValues and Forms
    ASSERT_TRUE(ok) << s;
    EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << s << ": " << got << " vs " << want;
  }
  double v = 0;
  EXPECT_TRUE(ParsePromValue("1e309", &v));
  EXPECT_EQ(v, INFINITY);
  EXPECT_TRUE(ParsePromValue("-1e309", &v));
  EXPECT_EQ(v, -INFINITY);
  EXPECT_TRUE(ParsePromValue("1e-300", &v));
  EXPECT_EQ(v, 1e-300);
  EXPECT_TRUE(ParsePromValue("-0", &v));
  EXPECT_TRUE(std::signbit(v));
  for (const char* bad : {"-", "+1", "1..2", "1.2.3", "--1", " 1", "1 ", "0x10", "1,5", "inf"})
    EXPECT_FALSE(ParsePromValue(bad, &v)) << bad;
}

TEST(DecodeQueryResponse, TenThousandSamples) {
  std::string body = R"({"status":"success","data":{"resultType":"vector","result":[)";
  for (int i = 0; i < 10000; ++i) {
    if (i) body += ",";
    body += R"({"metric":{"__name__":"node_cpu_usage_percent","node":"node-)" + std::to_string(i) +
            R"("},"value":[1795303219.437,")" + std::to_string(i % 100) + "\"]}";
  }
  body += "]}}";
  auto r = DecodeQueryResponse(body, 200);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->samples.size(), 10000u);
  EXPECT_EQ(r->samples[9999].value, 99);
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

void ExpectSame(const std::string& body, const LabelFilter* keep) {
  auto ref = DecodeQueryResponseReference(body, 200, keep);
  QueryResult fast;
  bool ok = FastDecodeVector(body, keep, &fast);
  if (!ok) return;  // declining is always allowed; the reference then decides
  ASSERT_TRUE(ref.ok()) << "fast path accepted what the reference rejects: " << body;
  ASSERT_EQ(fast.samples.size(), ref->samples.size()) << body;
  for (size_t i = 0; i < fast.samples.size(); ++i) {
    EXPECT_EQ(fast.samples[i].metric, ref->samples[i].metric) << body;
    EXPECT_EQ(fast.samples[i].timestamp, ref->samples[i].timestamp) << body;
    if (std::isnan(ref->samples[i].value))
      EXPECT_TRUE(std::isnan(fast.samples[i].value));
    else
      EXPECT_EQ(fast.samples[i].value, ref->samples[i].value) << body;
  }
}

TEST(FastVectorDecoder, AgreesWithReference) {
  LabelFilter keep = {"node", "instance"};
  std::vector<std::string> bodies = {
      Read("prom_vector.json"),
      Read("prom_special.json"),
      Read("prom_warnings.json"),
      R"({"status":"success","data":{"resultType":"vector","result":[]}})",
      R"( { "data" : { "result" : [ { "value" : [ 1.5 , "2" ] , "metric" : { "node" : "a" } } ] , "resultType" : "vector" } , "status" : "success" } )",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"a\"b\\c\/d\n"},"value":[1,"3"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"\u00e9"},"value":[1,"3"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1e3,"-1.5e-7"]}]},"extra":{"a":[1,true,null,{"b":"c"}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"a"},"value":[1,"1e999"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"a"},"value":[1,"x"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"a"},"value":[1,"2"]}]}} trailing)",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"a"},"value":[1,"2"]},]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"a"},"value":[1,"2"]}]})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":1},"value":[1,"2"]}]}})",
      R"({"status":"error","errorType":"bad_data","error":"x"})",
      R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]}})",
      // Bytes of 0x80 and above (UTF-8) are no stop, in the sixteen-byte scan as in the bytewise.
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"néééééééééé-é"},"value":[1,"2"]}]}})",
      // Strings are scanned sixteen or eight bytes at a time: quotes, escapes and control
      // characters at every offset of a word, and numbers on and off the exact short-decimal path.
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"abcdefg\"hijklmnop\\q","instance":"0123456789abcdef"},"value":[1795303219.437,"12345678.87654321"]}]}})",
      "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
      "{\"node\":\"abcdefghij\tk\"},\"value\":[1,\"2\"]}]}}",
      "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
      "{\"node\":\"abc\x01\"},\"value\":[1,\"2\"]}]}}",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"a"},"value":[-0.0,"-0.0"]},{"metric":{"node":"b"},"value":[12345678901234567890.5,"0.30000000000000004"]},{"metric":{"node":"c"},"value":[1.5E+3,"123456789012345678901234567890"]}]}})",
  };
  for (int at = 0; at < 36; ++at) {  // a stop byte at each position of a long label value
    for (const char* stop : {"\\\"", "\\n", "\x1f", "\""}) {
      std::string value(36, 'x');
      value.insert(static_cast<size_t>(at), stop);
      QueryResult r;
      const std::string body =
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":")" +
          value + R"("},"value":[1,"2"]}]}})";
      // Escapes are decoded on the fast path; a raw control character or a bare quote (the
      // string ends early, then the JSON is malformed) is refused.
      EXPECT_EQ(FastDecodeVector(body, nullptr, &r), stop[0] == '\\') << body;
      bodies.push_back(
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":")" +
          value + R"("},"value":[1,"2"]}]}})");
    }
  }
  for (const auto& b : bodies) {
    ExpectSame(b, nullptr);
    ExpectSame(b, &keep);
    // Every prefix (a truncated body) must be declined or decoded consistently, never crash.
    for (size_t n = 0; n < b.size(); n += 7) ExpectSame(b.substr(0, n), &keep);
  }
}

TEST(FastVectorDecoder, DeclinesWhatItDoesNotHandle) {
  QueryResult r;
  EXPECT_FALSE(FastDecodeVector(Read("prom_warnings.json"), nullptr, &r))
      << "warnings go through the reference";
  EXPECT_FALSE(FastDecodeVector(
      R"({"status":"success","data":{"resultType":"matrix","result":[]}})", nullptr, &r));
  EXPECT_FALSE(FastDecodeVector(std::string(100, '['), nullptr, &r));
  EXPECT_TRUE(FastDecodeVector(Read("prom_vector.json"), nullptr, &r));
  EXPECT_EQ(r.samples.size(), 1u);
}

TEST(DecodeQueryResponse, LabelFilterKeepsOnlyMatchingLabels) {
  LabelFilter keep = {"ip"};
  for (bool fast : {true, false}) {
    auto r = fast ? DecodeQueryResponse(Read("prom_vector.json"), 200, &keep)
                  : DecodeQueryResponseReference(Read("prom_vector.json"), 200, &keep);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->samples[0].metric, (Labels{{"ip", "10.0.0.2"}}));
  }
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

TEST(DecodeQueryResponse, FiftyMegabyteBodyDecodes) {
  // ~450,000 series: far beyond any real cluster, but a body this size must not crash.
  std::string body = R"({"status":"success","data":{"resultType":"vector","result":[)";
  const std::string one =
      R"({"metric":{"node":"node-00001","job":"j"},"value":[1795303219.437,"1.5"]})";
  while (body.size() < (50u << 20)) body += one + ",";
  body.back() = ']';
  body += "}}";
  LabelFilter keep = {"node"};
  auto r = DecodeQueryResponse(body, 200, &keep);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->samples.size(), 400000u);
}

TEST(DecodeQueryResponse, NonUtf8LabelValuesPassThrough) {
  std::string body =
      std::string(
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"n)") +
      "\xff\xfe" + R"("},"value":[1,"2"]}]}})";
  for (bool fast : {true, false}) {
    auto r = fast ? DecodeQueryResponse(body, 200) : DecodeQueryResponseReference(body, 200);
    ASSERT_TRUE(r.ok()) << fast;
    EXPECT_EQ(r->samples[0].metric[0].second, std::string("n\xff\xfe"))
        << "bytes kept; they simply match no node";
  }
}

// Records what reaches a SampleSink; Reset forgets, as the contract says.
class RecordingSink : public SampleSink {
 public:
  void Reset() override {
    samples.clear();
    ++resets;
  }
  void Add(const LabelViews& labels, double value) override { AddAt(labels, value, -1); }
  void AddAt(const LabelViews& labels, double value, double timestamp) override {
    Labels copy;
    for (const auto& [k, v] : labels) copy.emplace_back(std::string(k), std::string(v));
    samples.push_back(Sample{std::move(copy), value, timestamp});
  }
  std::vector<Sample> samples;
  int resets = 0;
};

TEST(DecodeQueryResponse, SinkSeesEachSampleOnceOnEitherPath) {
  LabelFilter keep = {"ip"};
  {
    RecordingSink sink;  // a plain vector: streamed by the fast path, no Reset needed
    auto r = DecodeQueryResponse(Read("prom_vector.json"), 200, &keep, &sink);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->result_type, "vector");
    EXPECT_TRUE(r->samples.empty());
    EXPECT_EQ(r->sample_count, 1u);
    EXPECT_EQ(sink.resets, 0);
    ASSERT_EQ(sink.samples.size(), 1u);
    EXPECT_EQ(sink.samples[0].metric, (Labels{{"ip", "10.0.0.2"}}));
    EXPECT_EQ(sink.samples[0].value, 4e9);
    EXPECT_EQ(sink.samples[0].timestamp, 1795303219.437) << "a rule's maxAge needs it";
  }
  {
    // "warnings" follows "data": the scanner has fed the sample before it declines, so the sink
    // must be Reset before the reference decoder's samples are fed.
    RecordingSink sink;
    auto r = DecodeQueryResponse(Read("prom_warnings.json"), 200, &keep, &sink);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->warnings.size(), 1u);
    EXPECT_TRUE(r->samples.empty());
    EXPECT_EQ(r->sample_count, 1u);
    EXPECT_GE(sink.resets, 1);
    ASSERT_EQ(sink.samples.size(), 1u);
    EXPECT_TRUE(sink.samples[0].metric.empty()) << "that series has no \"ip\" label";
    EXPECT_EQ(sink.samples[0].timestamp, 1795303241.099) << "the fallback keeps it too";
  }
  {
    RecordingSink sink;  // an error leaves nothing in the sink
    auto r = DecodeQueryResponse(
        R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]},{"metric":{},"value":[1,"x"]}]}})",
        200, &keep, &sink);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(sink.samples.empty());
  }
}

TEST(DecodeQueryResponse, ProxyErrorPageIsNotParsed) {
  auto r = DecodeQueryResponse("<html>502 Bad Gateway</html>", 502);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().http_status(), 502);
  EXPECT_EQ(r.status().message(), "Prometheus answered HTTP 502");
  // A 5xx that does carry Prometheus' error JSON is decoded for its errorType.
  auto t = DecodeQueryResponse(R"({"status":"error","errorType":"bad_data","error":"x"})", 503);
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ds
