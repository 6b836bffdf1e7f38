#include "common/log_fields.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace ds {
namespace {

// Splits `message` and returns its fields; `text` receives the text before them.
std::vector<LogField> Split(const std::string& message, std::string* text = nullptr) {
  std::string_view t;
  std::vector<LogField> fields;
  SplitLogFields(message, &t, &fields);
  if (text != nullptr) *text = std::string(t);
  return fields;
}

TEST(LogFields, EncodesReadablyAfterTheMessage) {
  std::ostringstream os;
  os << "label set"
     << Fields("node", "node-1", "rule", std::string("cpu"), "value", 93.5, "count", 3, "dry",
               false);
  EXPECT_EQ(os.str(), "label set {node=\"node-1\" rule=\"cpu\" value=93.5 count=3 dry=false}");
}

TEST(LogFields, NoFieldsWriteNothing) {
  std::ostringstream os;
  os << "plain" << LogFields();
  EXPECT_EQ(os.str(), "plain");
}

TEST(LogFields, StatusIsItsText) {
  EXPECT_EQ(Fields("err", Status::NotFound("gone")).Encoded(),
            " {err=\"" + Status::NotFound("gone").ToString() + "\"}");
}

TEST(LogFields, QuotesBackslashesAndControlCharactersAreEscaped) {
  EXPECT_EQ(Fields("err", "a \"b\" c\\d\ne\tf\rg\x01h\x7f").Encoded(),
            " {err=\"a \\\"b\\\" c\\\\d\\ne\\tf\\rg\\u0001h\\u007f\"}");
}

TEST(LogFields, Utf8IsKept) {
  EXPECT_EQ(Fields("node", "nœud-ü-日本").Encoded(), " {node=\"nœud-ü-日本\"}");
}

TEST(LogFields, KeysAreSanitised) {
  EXPECT_EQ(Fields("a b", 1, "9x", 2, "", 3, "ok.key-1", 4).Encoded(),
            " {a_b=1 _x=2 _=3 ok.key-1=4}");
}

TEST(LogFields, NonFiniteNumbersAreStrings) {
  EXPECT_EQ(
      Fields("a", std::nan(""), "b", std::numeric_limits<double>::infinity(), "c", -1e300 * 1e300)
          .Encoded(),
      " {a=\"NaN\" b=\"+Inf\" c=\"-Inf\"}");
}

TEST(LogFields, SplitReturnsTextAndFields) {
  std::string text;
  auto f = Split("label set {node=\"n1\" value=93.5 dry=true}", &text);
  EXPECT_EQ(text, "label set");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].key, "node");
  EXPECT_EQ(f[0].value, "n1");
  EXPECT_FALSE(f[0].bare);
  EXPECT_EQ(f[1].key, "value");
  EXPECT_EQ(f[1].value, "93.5");
  EXPECT_TRUE(f[1].bare);
  EXPECT_EQ(f[2].value, "true");
}

// Every value survives the round trip, whatever it holds: the block's own syntax inside a value
// ends nothing.
TEST(LogFields, RoundTripOfAwkwardValues) {
  const std::vector<std::string> values = {"",
                                           " ",
                                           "\"",
                                           "\\",
                                           "}",
                                           " {",
                                           "a} {b=\"c\"}",
                                           "x\" y=\"z",
                                           "line1\nline2\r\n",
                                           "tab\there",
                                           std::string("nul\0byte", 8),
                                           "\x1f\x7f",
                                           "ünï €",
                                           "=",
                                           "{node=\"fake\"}"};
  for (const std::string& v : values) {
    std::ostringstream os;
    os << "msg with {braces} and \"quotes\"" << Fields("k", v, "n", 1);
    std::string text;
    auto f = Split(os.str(), &text);
    EXPECT_EQ(text, "msg with {braces} and \"quotes\"") << v;
    ASSERT_EQ(f.size(), 2u) << v;
    EXPECT_EQ(f[0].value, v);
    EXPECT_EQ(f[1].value, "1");
  }
}

TEST(LogFields, TextThatOnlyLooksLikeABlockStaysText) {
  for (const std::string m :
       {"a {b}", "a {b=c}", "a {b=\"c\"", "a {b=\"c\"} tail", "{b=\"c\"}", "a {b=\"c\\q\"}",
        "a {b=\"c\nd\"}", "a {b=1x}", "a {}", "a {b=\"c\"  d=1}"}) {
    std::string text;
    EXPECT_TRUE(Split(m, &text).empty()) << m;
    EXPECT_EQ(text, m);
  }
}

// A message whose text has a brace-and-quote before the block: the candidate in the text runs
// into the block's quotes, so the block is still found where it starts.
TEST(LogFields, CandidateInTheTextDoesNotSwallowTheBlock) {
  std::ostringstream os;
  os << "server said {reason=\"" << Fields("node", "n1");
  std::string text;
  auto f = Split(os.str(), &text);
  EXPECT_EQ(text, "server said {reason=\"");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].value, "n1");
}

TEST(ValidUtf8, KeepsValidAndReplacesInvalid) {
  EXPECT_EQ(ValidUtf8("plain ü € 日本 😀"), "plain ü € 日本 😀");
  EXPECT_EQ(ValidUtf8("a\xff"
                      "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ValidUtf8("\xC3"), "\xEF\xBF\xBD");                                  // truncated
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
}

}  // namespace
}  // namespace ds
