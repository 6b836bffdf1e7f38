#include "common/label_selector.h"

#include <gtest/gtest.h>

namespace ds {
namespace {

struct Case {
  const char* selector;
  bool matches;
};

TEST(LabelSelector, Table) {
  Labels labels = {{"a", "1"}, {"b", "2"}, {"node-role.kubernetes.io/control-plane", ""}};
  std::vector<Case> cases = {{"", true},
                             {"a=1", true},
                             {"a==1", true},
                             {"a=2", false},
                             {"a!=2", true},
                             {"c!=2", true},
                             {"a", true},
                             {"c", false},
                             {"!c", true},
                             {"!a", false},
                             {"a in (1,3)", true},
                             {"a in (3)", false},
                             {"a notin (3)", true},
                             {"a notin (1)", false},
                             {"a=1,b=2", true},
                             {"a=1, b=3", false},
                             {"!node-role.kubernetes.io/control-plane", false},
                             {"node-role.kubernetes.io/control-plane", true}};
  for (const auto& c : cases) {
    auto s = LabelSelector::Parse(c.selector);
    ASSERT_TRUE(s.ok()) << c.selector << ": " << s.status().ToString();
    EXPECT_EQ(s->Matches(labels), c.matches) << c.selector;
  }
}

TEST(LabelSelector, Errors) {
  for (const char* bad : {"a in (1", "a,", "a foo (1)", "bad key=1", "a=b c"}) {
    EXPECT_FALSE(LabelSelector::Parse(bad).ok()) << bad;
  }
}

TEST(LabelValidation, KeysAndValues) {
  EXPECT_EQ(ValidateLabelKey("status"), "");
  EXPECT_EQ(ValidateLabelKey("example.com/pressure"), "");
  EXPECT_NE(ValidateLabelKey(""), "");
  EXPECT_NE(ValidateLabelKey("Example.com/x"), "");
  EXPECT_NE(ValidateLabelKey("-x"), "");
  EXPECT_NE(ValidateLabelKey(std::string(64, 'a')), "");
  EXPECT_EQ(ValidateLabelValue(""), "");
  EXPECT_EQ(ValidateLabelValue("presure"), "");
  EXPECT_NE(ValidateLabelValue("a b"), "");
  EXPECT_NE(ValidateLabelValue(std::string(64, 'a')), "");
}

}  // namespace
}  // namespace ds
