// A value as people read it, in its rule's unit.
#include "common/value_format.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ds {
namespace {

TEST(ValueFormat, EachUnitAsPeopleReadIt) {
  EXPECT_EQ(FormatValue(91.5, ValueUnit::kPercent), "91.5 %");
  EXPECT_EQ(FormatValue(80, ValueUnit::kPercent), "80 %");
  EXPECT_EQ(FormatValue(125169277, ValueUnit::kBytes), "119.4 MiB");
  EXPECT_EQ(FormatValue(500000000, ValueUnit::kBytes), "476.8 MiB");
  EXPECT_EQ(FormatValue(100 * 1024 * 1024, ValueUnit::kBytes), "100 MiB");
  EXPECT_EQ(FormatValue(512, ValueUnit::kBytes), "512 B");
  EXPECT_EQ(FormatValue(3.5 * 1024 * 1024 * 1024 * 1024 * 1024, ValueUnit::kBytes), "3584 TiB")
      << "no prefix past Ti";
  EXPECT_EQ(FormatValue(1.25, ValueUnit::kCores), "1.25 cores");
  EXPECT_EQ(FormatValue(1, ValueUnit::kCores), "1 core");
  EXPECT_EQ(FormatValue(90, ValueUnit::kSeconds), "90 s");
  EXPECT_EQ(FormatValue(229.7e6, ValueUnit::kNone), "229.7 M");
  EXPECT_EQ(FormatValue(9999, ValueUnit::kNone), "9999") << "prefixes from 10,000 up";
  EXPECT_EQ(FormatValue(0.123456, ValueUnit::kNone), "0.12");
  EXPECT_EQ(FormatValue(-0.001, ValueUnit::kNone), "0");
  EXPECT_EQ(FormatValue(std::nan(""), ValueUnit::kPercent), "NaN");
  EXPECT_EQ(FormatValue(-INFINITY, ValueUnit::kBytes), "-Inf");
}

TEST(ValueFormat, UnitNamesRoundTrip) {
  for (ValueUnit u : {ValueUnit::kNone, ValueUnit::kPercent, ValueUnit::kBytes, ValueUnit::kCores,
                      ValueUnit::kSeconds}) {
    ValueUnit back = ValueUnit::kNone;
    ASSERT_TRUE(ParseValueUnit(ValueUnitName(u), &back));
    EXPECT_EQ(back, u);
  }
  ValueUnit u = ValueUnit::kPercent;
  EXPECT_FALSE(ParseValueUnit("MiB", &u));
  EXPECT_EQ(u, ValueUnit::kPercent) << "unchanged";
}

}  // namespace
}  // namespace ds
