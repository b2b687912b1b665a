#include "server/service/query_time.hpp"

#include <gtest/gtest.h>

namespace perfscope::server {
namespace {

TEST(QueryTime, AbsoluteRelativeAndErrors) {
  const TimestampNs now = 1'000'000'000'000;
  EXPECT_EQ(*parse_time_ns("now", now, "from"), now);
  EXPECT_EQ(*parse_time_ns("123", now, "from"), 123);
  EXPECT_EQ(*parse_time_ns("now-5m", now, "from"), now - 300'000'000'000);
  EXPECT_EQ(*parse_time_ns("-30s", now, "from"), now - 30'000'000'000);
  EXPECT_EQ(*parse_time_ns("now-1.5s", now, "from"), now - 1'500'000'000);
  EXPECT_EQ(*parse_duration_ns("250ms", "window"), 250'000'000);
  EXPECT_EQ(*parse_duration_ns("2d", "window"), 172'800'000'000'000);
  auto bad = parse_time_ns("yesterday", now, "to");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "to");
  EXPECT_FALSE(parse_time_ns("now-5", now, "from").ok());
  EXPECT_FALSE(parse_time_ns("-1", now, "from").ok());
  EXPECT_FALSE(parse_duration_ns("5 weeks", "window").ok());
}

}  // namespace
}  // namespace perfscope::server
