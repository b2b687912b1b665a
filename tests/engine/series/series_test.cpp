#include "engine/series/series.hpp"

#include <gtest/gtest.h>

namespace perfscope {
namespace {

TEST(SeriesKey, CanonicalSortsAndEscapesLabels) {
  SeriesKey key("m", {{"z", "1"}, {"a", "x\"y\\z\nw"}});
  EXPECT_EQ(key.canonical(), R"(m{a="x\"y\\z\nw",z="1"})");
  EXPECT_EQ(SeriesKey("plain", {}).canonical(), "plain");
}

TEST(Labels, ParseIsTheInverseOfFormat) {
  Labels labels = {{"cpu", "total"}, {"path", "a\"b\\c\nd"}, {"x", ""}};
  auto parsed = parse_labels(format_labels(labels));
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, labels);
}

TEST(Labels, ParseRejectsMalformedText) {
  EXPECT_FALSE(parse_labels("cpu=0").ok());
  EXPECT_FALSE(parse_labels(R"(cpu="0)").ok());
  EXPECT_FALSE(parse_labels(R"(1cpu="0")").ok());
  EXPECT_FALSE(parse_labels(R"(a="1"b="2")").ok());
  EXPECT_TRUE(parse_labels("").ok());
}

TEST(Names, FollowPrometheusRules) {
  EXPECT_TRUE(is_valid_metric_name("host_cpu_utilization_ratio"));
  EXPECT_TRUE(is_valid_metric_name("a:b"));
  EXPECT_FALSE(is_valid_metric_name("9lives"));
  EXPECT_FALSE(is_valid_metric_name(""));
  EXPECT_FALSE(is_valid_label_name("a:b"));
  EXPECT_FALSE(is_valid_label_name("a-b"));
}

TEST(Glob, MatchesStarsAndQuestionMarks) {
  EXPECT_TRUE(glob_match("host_*", "host_load1"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("host_load?", "host_load1"));
  EXPECT_FALSE(glob_match("host_load?", "host_load15"));
  EXPECT_TRUE(glob_match("*_bytes", "host_memory_used_bytes"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
  EXPECT_FALSE(glob_match("process_*", "host_process"));
}

TEST(SeriesPattern, BraceMatchesCanonicalKeyOtherwiseName) {
  SeriesKey total("host_cpu_utilization_ratio", {{"cpu", "total"}});
  SeriesKey core("host_cpu_utilization_ratio", {{"cpu", "0"}});
  SeriesPattern by_name("host_cpu_*");
  SeriesPattern by_key(R"(host_cpu_utilization_ratio{cpu="total"})");
  EXPECT_TRUE(by_name.matches(total, total.canonical()));
  EXPECT_TRUE(by_name.matches(core, core.canonical()));
  EXPECT_TRUE(by_key.matches(total, total.canonical()));
  EXPECT_FALSE(by_key.matches(core, core.canonical()));
}

}  // namespace
}  // namespace perfscope
