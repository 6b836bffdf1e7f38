#include "common/json_log_sink.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "common/log_fields.h"

namespace ds {
namespace {

constexpr double kT = 1715940000.123456;  // seconds since the epoch

std::string Line(google::LogSeverity s, const std::string& message,
                 const std::string& file = "/src/controller/node_writer.cc", int line = 203) {
  return FormatJsonLogLine(s, file, line, kT, message);
}

// The line parsed, failing the test if it is not one JSON object.
rapidjson::Document Parse(const std::string& line) {
  rapidjson::Document d;
  d.Parse(line.c_str(), line.size());
  EXPECT_FALSE(d.HasParseError()) << line;
  EXPECT_TRUE(d.IsObject()) << line;
  return d;
}

std::string WithFields(const std::string& text, const LogFields& f) {
  std::ostringstream os;
  os << text << f;
  return os.str();
}

TEST(JsonLogSink, KubernetesKeysInTheirOrder) {
  EXPECT_EQ(Line(google::GLOG_INFO, "listening"),
            "{\"ts\":1715940000123.456,\"caller\":\"controller/node_writer.cc:203\","
            "\"msg\":\"listening\",\"v\":0}");
}

TEST(JsonLogSink, CallerIsFolderAndFile) {
  EXPECT_EQ(Parse(Line(google::GLOG_INFO, "m", "node_writer.cc", 7))["caller"].GetString(),
            std::string("node_writer.cc:7"));
  EXPECT_EQ(Parse(Line(google::GLOG_INFO, "m", "/a/b/c/d.cc", 9))["caller"].GetString(),
            std::string("c/d.cc:9"));
}

TEST(JsonLogSink, FieldsBecomeTopLevelKeys) {
  auto d = Parse(
      Line(google::GLOG_INFO, WithFields("label set", Fields("node", "n1", "rule", "cpu", "value",
                                                             93.5, "term", 3, "dry", true))));
  EXPECT_STREQ(d["msg"].GetString(), "label set");
  EXPECT_STREQ(d["node"].GetString(), "n1");
  EXPECT_STREQ(d["rule"].GetString(), "cpu");
  EXPECT_DOUBLE_EQ(d["value"].GetDouble(), 93.5);
  EXPECT_EQ(d["term"].GetInt(), 3);
  EXPECT_TRUE(d["dry"].GetBool());
}

TEST(JsonLogSink, WarningIsAnInfoLineAtV0) {
  auto d = Parse(Line(google::GLOG_WARNING, "careful"));
  ASSERT_TRUE(d.HasMember("v"));
  EXPECT_EQ(d["v"].GetInt(), 0);
}

// klog's JSON marks an error by leaving "v" out; the error itself goes last under "err".
TEST(JsonLogSink, ErrorsHaveNoVerbosityAndErrLast) {
  for (google::LogSeverity s : {google::GLOG_ERROR, google::GLOG_FATAL}) {
    const std::string line =
        Line(s, WithFields("could not write", Fields("err", "refused", "node", "n1", "v", 2)));
    EXPECT_EQ(line,
              "{\"ts\":1715940000123.456,\"caller\":\"controller/node_writer.cc:203\","
              "\"msg\":\"could not write\",\"node\":\"n1\",\"err\":\"refused\"}");
  }
}

TEST(JsonLogSink, VerbosityComesFromTheVField) {
  auto d = Parse(Line(google::GLOG_INFO, WithFields("cycle", Fields("v", 1, "nodes", 8))));
  EXPECT_EQ(d["v"].GetInt(), 1);
  EXPECT_EQ(d["nodes"].GetInt(), 8);
  EXPECT_EQ(d.MemberCount(), 5u);  // ts caller msg v nodes: "v" once
  // A "v" that is no verbosity is a field like any other, renamed off the key.
  auto e = Parse(Line(google::GLOG_INFO, WithFields("x", Fields("v", "high", "msg", "m2"))));
  EXPECT_EQ(e["v"].GetInt(), 0);
  EXPECT_STREQ(e["v_"].GetString(), "high");
  EXPECT_STREQ(e["msg"].GetString(), "x");
  EXPECT_STREQ(e["msg_"].GetString(), "m2");
}

TEST(JsonLogSink, EscapesQuotesNewlinesAndControlCharacters) {
  const std::string awkward = "say \"hi\"\\ \nnext\tline\r\x01\x1f end";
  const std::string line =
      Line(google::GLOG_INFO, awkward + WithFields("", Fields("err", awkward)));
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;  // one line
  auto d = Parse(line);
  EXPECT_EQ(std::string(d["msg"].GetString()), awkward);
  EXPECT_EQ(std::string(d["err"].GetString()), awkward);
  EXPECT_NE(line.find("\\u0001"), std::string::npos) << line;
  EXPECT_NE(line.find("\\n"), std::string::npos) << line;
}

TEST(JsonLogSink, Utf8KeptInvalidBytesReplaced) {
  const std::string line = Line(google::GLOG_INFO, WithFields("nœud ✓", Fields("node", "ü\xff")));
  EXPECT_NE(line.find("nœud ✓"), std::string::npos) << line;  // not \u-escaped
  auto d = Parse(line);
  EXPECT_EQ(std::string(d["node"].GetString()), "ü\xEF\xBF\xBD");
}

TEST(JsonLogSink, MessageWithoutFieldsIsKeptWhole) {
  auto d = Parse(Line(google::GLOG_INFO, "brace {not=\"a\" field"));
  EXPECT_STREQ(d["msg"].GetString(), "brace {not=\"a\" field");
  EXPECT_EQ(d.MemberCount(), 4u);
}

TEST(JsonLogSink, ParseLogFormatNamesTheFlag) {
  EXPECT_EQ(*ParseLogFormat("text", "log_format"), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("json", "log_format"), LogFormat::kJson);
  auto bad = ParseLogFormat("JSON ", "log_format");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("-log_format"), std::string::npos);
  EXPECT_NE(bad.status().message().find("JSON "), std::string::npos);
}

// The sink writes whole lines to its descriptor.
TEST(JsonLogSink, SendWritesOneLine) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  JsonLogSink sink(fds[1]);
  const std::string msg = WithFields("hello", Fields("node", "n1"));
  google::LogMessageTime t(std::time_t{1715940000}, 1715940000.5);
  sink.send(google::GLOG_WARNING, "/x/app/main.cc", "main.cc", 12, t, msg.data(), msg.size());
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fds[0]);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n');
  auto d = Parse(out.substr(0, out.size() - 1));
  EXPECT_STREQ(d["caller"].GetString(), "app/main.cc:12");
  EXPECT_STREQ(d["node"].GetString(), "n1");
  EXPECT_NEAR(d["ts"].GetDouble(), 1715940000500.0, 1.0);
}

}  // namespace
}  // namespace ds
