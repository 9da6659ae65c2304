#include "k8s/client/time_format.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace fiber::k8s {
namespace {

using std::chrono::microseconds;
using std::chrono::seconds;

// 2024-02-29T23:59:58Z: a leap day near a day boundary.
const SystemTime kLeapDay{seconds(1709251198)};

TEST(TimeFormat, FormatsWholeSecondsInUtc) {
  EXPECT_EQ(format_time(kLeapDay), "2024-02-29T23:59:58Z");
  EXPECT_EQ(format_time(kLeapDay + microseconds(999'999)), "2024-02-29T23:59:58Z");
  EXPECT_EQ(format_time(SystemTime{}), "1970-01-01T00:00:00Z");
}

TEST(TimeFormat, FormatsMicroTimeWithSixDigits) {
  EXPECT_EQ(format_micro_time(kLeapDay), "2024-02-29T23:59:58.000000Z");
  EXPECT_EQ(format_micro_time(kLeapDay + microseconds(250'001)), "2024-02-29T23:59:58.250001Z");
}

TEST(TimeFormat, RoundTripsMicroTime) {
  const SystemTime time = kLeapDay + microseconds(123'456);
  EXPECT_EQ(parse_time(format_micro_time(time)), time);
  EXPECT_EQ(parse_time(format_time(time)), kLeapDay);
}

TEST(TimeFormat, ParsesOffsetsAndFractions) {
  EXPECT_EQ(parse_time("2024-03-01T01:59:58+02:00"), kLeapDay);
  EXPECT_EQ(parse_time("2024-02-29T20:29:58-03:30"), kLeapDay);
  EXPECT_EQ(parse_time("2024-02-29T23:59:58.5Z"), kLeapDay + microseconds(500'000));
  // Digits past the microsecond are dropped, not rounded.
  EXPECT_EQ(parse_time("2024-02-29T23:59:58.123456789Z"), kLeapDay + microseconds(123'456));
  EXPECT_EQ(parse_time("2024-02-29t23:59:58z"), kLeapDay);
}

// Regression (fuzz_k8s_client, UBSan "signed integer overflow: 175486077660123456 * 1000"): a
// valid RFC 3339 date past what a time point holds (2262) is refused, not wrapped around.
TEST(TimeFormat, RefusesADateATimePointCannotHold) {
  EXPECT_FALSE(parse_time("7530-12-07T20:41:00.123456Z").has_value());
  EXPECT_FALSE(parse_time("9999-12-31T23:59:59Z").has_value());
  EXPECT_FALSE(parse_time("1600-01-01T00:00:00Z").has_value());
  EXPECT_TRUE(parse_time("2262-01-01T00:00:00Z").has_value());
}

TEST(TimeFormat, RefusesWhatIsNotATimestamp) {
  for (const char* bad :
       {"", "2024-02-29", "2024-02-30T00:00:00Z", "2024-02-29T24:00:00Z", "2024-02-29T23:59:58",
        "2024-02-29T23:59:58.Z", "2024-02-29T23:59:58Zjunk", "2024-2-29T23:59:58Z",
        "2024-02-29T23:59:58+0200"}) {
    EXPECT_FALSE(parse_time(bad).has_value()) << bad;
  }
  try {
    parse_time_or_throw("yesterday");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("\"yesterday\""), std::string::npos);
  }
}

}  // namespace
}  // namespace fiber::k8s
