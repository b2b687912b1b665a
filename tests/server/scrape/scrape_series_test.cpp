#include "server/scrape/scrape_series.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace perfscope::server {
namespace {

Exposition parse(const std::string& text) {
  auto r = parse_exposition(text, false);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Exposition{};
}

std::map<std::string, double> by_key(const std::vector<Reading>& readings) {
  std::map<std::string, double> out;
  for (const Reading& r : readings) out[r.key.canonical()] = r.value;
  return out;
}

ScrapeSeries target(std::size_t series_limit = 20000) {
  return ScrapeSeries({"vllm", "10.0.0.5:8000", {{"node", "a"}}}, 1000, series_limit);
}

constexpr TimestampNs kT0 = 1'700'000'000'000'000'000;

TEST(ScrapeSeries, EverySampleBecomesASeriesWithTheTargetsLabels) {
  ScrapeSeries s = target();
  auto r = s.convert(parse("# TYPE vllm:num_requests_running gauge\n"
                           "vllm:num_requests_running{model_name=\"llama\"} 3\n"),
                     kT0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(by_key(*r), (std::map<std::string, double>{
                            {"vllm:num_requests_running{instance=\"10.0.0.5:8000\",job=\"vllm\",model_name=\"llama\","
                             "node=\"a\"}",
                             3.0}}));
  ASSERT_EQ(s.families().size(), 1u);
  EXPECT_EQ(s.families()[0].type, MetricType::kGauge);
}

TEST(ScrapeSeries, ALabelTheTargetAlsoSetsIsKeptAsExported) {
  ScrapeSeries s = target();
  auto r = s.convert(parse("up_like{job=\"inner\",instance=\"x\",model=\"m\"} 1\n"), kT0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->at(0).key.canonical(),
            "up_like{exported_instance=\"x\",exported_job=\"inner\",instance=\"10.0.0.5:8000\",job=\"vllm\",model=\"m\","
            "node=\"a\"}");
}

TEST(ScrapeSeries, CountersGiveRatesAndResetsReadAsRateDoes) {
  ScrapeSeries s = target();
  const std::string head = "# TYPE vllm:generation_tokens_total counter\n";
  ASSERT_TRUE(s.convert(parse(head + "vllm:generation_tokens_total 1000\n"), kT0).ok());
  auto second = s.convert(parse(head + "vllm:generation_tokens_total 1500\n"), kT0 + 5'000'000'000);
  ASSERT_TRUE(second.ok());
  auto values = by_key(*second);
  const std::string labels = "{instance=\"10.0.0.5:8000\",job=\"vllm\",node=\"a\"}";
  EXPECT_EQ(values.at("vllm:generation_tokens_total" + labels), 1500.0);
  EXPECT_DOUBLE_EQ(values.at("vllm:generation_tokens_per_second" + labels), 100.0);
  // The server restarted: 200 tokens since, over the 2 s between the scrapes.
  auto third = s.convert(parse(head + "vllm:generation_tokens_total 200\n"), kT0 + 7'000'000'000);
  ASSERT_TRUE(third.ok());
  EXPECT_DOUBLE_EQ(by_key(*third).at("vllm:generation_tokens_per_second" + labels), 100.0);
  EXPECT_EQ(s.families().size(), 2u);
}

TEST(ScrapeSeries, HistogramsKeepTheirBucketsAndSummariesTheirQuantiles) {
  ScrapeSeries s = target();
  auto r = s.convert(parse("# TYPE ttft_seconds histogram\n"
                           "ttft_seconds_bucket{le=\"0.1\"} 3\n"
                           "ttft_seconds_bucket{le=\"+Inf\"} 5\n"
                           "ttft_seconds_sum 0.9\n"
                           "ttft_seconds_count 5\n"
                           "# TYPE req_us summary\n"
                           "req_us{quantile=\"0.5\"} NaN\n"
                           "req_us{quantile=\"0.9\"} 120\n"
                           "req_us_count 4\n"),
                     kT0);
  ASSERT_TRUE(r.ok());
  auto values = by_key(*r);
  EXPECT_EQ(values.size(), 6u);  // the NaN quantile is left out
  const std::string labels = "instance=\"10.0.0.5:8000\",job=\"vllm\"";
  EXPECT_EQ(values.at("ttft_seconds_bucket{" + labels + ",le=\"+Inf\",node=\"a\"}"), 5.0);
  EXPECT_EQ(values.at("req_us{" + labels + ",node=\"a\",quantile=\"0.9\"}"), 120.0);
  std::map<std::string, MetricType> types;
  for (const auto& f : s.families()) types[f.name] = f.type;
  EXPECT_EQ(types.at("ttft_seconds_bucket"), MetricType::kCounter);
  EXPECT_EQ(types.at("req_us"), MetricType::kGauge);
  EXPECT_EQ(types.at("req_us_count"), MetricType::kCounter);
}

TEST(ScrapeSeries, AScrapePastTheSampleLimitIsRefusedWhole) {
  ScrapeSeries s({"vllm", "h:1", {}}, 2, 100);
  auto r = s.convert(parse("a 1\nb 2\nc 3\n"), kT0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "sample_limit");
  EXPECT_NE(r.status().message().find("3 samples"), std::string::npos);
  EXPECT_TRUE(s.families().empty());
}

TEST(ScrapeSeries, NewSeriesPastTheSeriesLimitAreDroppedAndTheKnownOnesGoOn) {
  // A request id in a label: every scrape brings series never seen before.
  ScrapeSeries s = target(/*series_limit=*/5);
  auto first = s.convert(parse("up 1\nlat{id=\"1\"} 1\nlat{id=\"2\"} 2\n"), kT0);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->size(), 3u);
  EXPECT_EQ(s.dropped_last(), 0u);
  auto second = s.convert(parse("up 1\nlat{id=\"1\"} 1\nlat{id=\"3\"} 3\nlat{id=\"4\"} 4\nlat{id=\"5\"} 5\n"), kT0 + 1);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->size(), 4u);  // up, id 1, and two new ones up to the limit of five
  EXPECT_EQ(s.dropped_last(), 1u);
  auto third = s.convert(parse("up 0\nlat{id=\"6\"} 6\n"), kT0 + 2);
  ASSERT_TRUE(third.ok());
  ASSERT_EQ(third->size(), 1u);
  EXPECT_EQ(third->front().key.name, "up");
  EXPECT_EQ(third->front().value, 0);
  EXPECT_EQ(s.dropped_last(), 1u);
  EXPECT_EQ(s.dropped_total(), 2u);
  EXPECT_EQ(s.series_count(), 5u);
}

TEST(ScrapeSeries, TheVllmFixtureBecomesSeries) {
  std::ifstream in(std::string(PERFSCOPE_FIXTURES) + "/scrape/vllm.prom");
  std::stringstream text;
  text << in.rdbuf();
  ScrapeSeries s({"vllm", "127.0.0.1:8000", {}}, 10'000, 20'000);
  auto r = s.convert(parse(text.str()), kT0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 61u);  // every sample once; rates only from the second scrape on
  auto again = s.convert(parse(text.str()), kT0 + 1'000'000'000);
  ASSERT_TRUE(again.ok());
  // Four counters (prompt, generation and two request_success series) now have a rate of 0.
  EXPECT_EQ(again->size(), 65u);
}

}  // namespace
}  // namespace perfscope::server
