// Serving figures from scraped server metrics: increases over a window with restarts, vLLM
// histograms summed over two targets, Triton's counters and summaries, and the rules that
// keep one quantity counted once.
#include "engine/analysis/scraped_serving.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace perfscope::analysis {
namespace {

constexpr TimestampNs kS = 1'000'000'000;
constexpr double kInf = std::numeric_limits<double>::infinity();

SeriesSamples series(std::string name, Labels labels, std::vector<std::pair<int, double>> points) {
  sort_labels(labels);
  SeriesSamples s{SeriesKey(std::move(name), std::move(labels)), {}};
  for (auto [t, v] : points) s.samples.push_back({t * kS, v});
  return s;
}

TEST(CounterIncrease, RunsFromTheLastScrapeBeforeTheWindow) {
  std::vector<Sample> s = {{10 * kS, 100}, {20 * kS, 130}, {30 * kS, 170}, {40 * kS, 200}};
  auto inc = counter_increase(s, 25 * kS, 40 * kS).value();
  EXPECT_EQ(inc.value, 70);  // 130 → 200
  EXPECT_EQ(inc.first_ns, 20 * kS);
  EXPECT_EQ(inc.last_ns, 40 * kS);
  // No scrape before the window: from the first one inside it.
  EXPECT_EQ(counter_increase(s, 5 * kS, 30 * kS)->value, 70);
  // Nothing up to the window's end.
  EXPECT_FALSE(counter_increase(s, 0, 5 * kS));
  EXPECT_FALSE(counter_increase(std::vector<Sample>{}, 0, 50 * kS));
}

TEST(CounterIncrease, ARestartCountsWhole) {
  std::vector<Sample> s = {{0, 50}, {10 * kS, 80}, {20 * kS, 5}, {30 * kS, 25}};
  auto inc = counter_increase(s, 0, 30 * kS).value();
  EXPECT_EQ(inc.value, 30 + 5 + 20);
  EXPECT_EQ(inc.resets, 1u);
}

// Two vLLM instances of one model; the second restarts mid-window.
std::vector<SeriesSamples> vllm_two_targets() {
  const Labels a = {{"model_name", "llama"}, {"job", "vllm"}, {"instance", "a:8000"}};
  const Labels b = {{"model_name", "llama"}, {"job", "vllm"}, {"instance", "b:8000"}};
  auto with = [](Labels l, std::string k, std::string v) {
    l.emplace_back(std::move(k), std::move(v));
    return l;
  };
  const std::string h = "vllm:e2e_request_latency_seconds";
  std::vector<SeriesSamples> out = {
      // a: 10 requests in the window, 6 within 0.5 s, 9 within 1 s.
      series(h + "_bucket", with(a, "le", "0.5"), {{0, 100}, {60, 106}}),
      series(h + "_bucket", with(a, "le", "1.0"), {{0, 150}, {60, 159}}),
      series(h + "_bucket", with(a, "le", "+Inf"), {{0, 200}, {60, 210}}),
      series(h + "_sum", a, {{0, 150}, {60, 157}}),
      series(h + "_count", a, {{0, 200}, {60, 210}}),
      // b restarted: 30 → 4 → 10 (the +Inf count); 10 requests after the restart, 4 + 6.
      series(h + "_bucket", with(b, "le", "0.5"), {{0, 20}, {30, 2}, {60, 6}}),
      series(h + "_bucket", with(b, "le", "1.0"), {{0, 25}, {30, 3}, {60, 8}}),
      series(h + "_bucket", with(b, "le", "+Inf"), {{0, 30}, {30, 4}, {60, 10}}),
      series(h + "_sum", b, {{0, 20}, {30, 3}, {60, 8}}),
      series(h + "_count", b, {{0, 30}, {30, 4}, {60, 10}}),
      series("vllm:request_success_total", with(a, "finished_reason", "stop"), {{0, 190}, {60, 199}}),
      series("vllm:request_success_total", with(a, "finished_reason", "abort"), {{0, 10}, {60, 11}}),
      series("vllm:request_success_total", with(b, "finished_reason", "stop"), {{0, 30}, {30, 4}, {60, 10}}),
      series("vllm:generation_tokens_total", a, {{0, 1000}, {60, 2200}}),
      series("vllm:generation_tokens_total", b, {{0, 500}, {30, 100}, {60, 400}}),
      series("vllm:num_requests_running", a, {{0, 1}, {60, 3}}),
      series("vllm:num_requests_running", b, {{0, 1}, {60, 2}}),
      series("vllm:kv_cache_usage_perc", a, {{60, 0.5}}),
      series("vllm:kv_cache_usage_perc", b, {{60, 0.3}}),
      series("vllm:gpu_cache_usage_perc", a, {{60, 0.9}}),  // the older name of the same gauge
      // Another server's model and an unrelated family: not this group.
      series("vllm:num_requests_running", {{"model_name", "qwen"}}, {{60, 7}}),
      series("node_load1", a, {{60, 1}}),
  };
  return out;
}

TEST(ScrapedServing, SumsTargetsAndReadsRestarts) {
  auto series = vllm_two_targets();
  auto all = scraped_serving(series, 0, 60 * kS);
  ASSERT_EQ(all.size(), 2u);
  const ScrapedServing& m = all[0];
  EXPECT_EQ(m.server, "vllm");
  EXPECT_EQ(m.model, "llama");
  EXPECT_EQ(m.targets, (std::vector<std::string>{"vllm/a:8000", "vllm/b:8000"}));
  EXPECT_DOUBLE_EQ(m.window_s, 60);
  EXPECT_EQ(m.resets, 3u);  // b's _count, its successes and its tokens (buckets and sums not counted again)
  ASSERT_TRUE(m.fields.contains("latency_ms"));
  const ScrapedDistribution& lat = m.fields.at("latency_ms");
  EXPECT_EQ(lat.metric, "vllm:e2e_request_latency_seconds");
  ASSERT_EQ(lat.buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(lat.buckets[0].le, 500);
  EXPECT_DOUBLE_EQ(lat.buckets[0].count, 6 + 2 + 4);
  EXPECT_DOUBLE_EQ(lat.buckets[1].count, 9 + 3 + 5);
  EXPECT_DOUBLE_EQ(lat.buckets[2].count, 20);
  EXPECT_DOUBLE_EQ(lat.count, 20);
  EXPECT_DOUBLE_EQ(lat.sum_ms, (7 + 3 + 5) * 1000.0);
  // p50: rank 10 of 20 inside the first bucket (12 of them in 0–500 ms).
  auto p50 = scraped_quantile(lat, 0.5).value();
  EXPECT_NEAR(p50.value, 500.0 * 10 / 12, 1e-9);
  EXPECT_EQ(p50.lower, 0);
  EXPECT_EQ(p50.upper, 500);
  // 750 ms: 12 below 500, half of the 5 in (500, 1000].
  EXPECT_NEAR(scraped_share_at_most(lat, 750)->value, (12 + 2.5) / 20, 1e-12);
  EXPECT_DOUBLE_EQ(*m.requests, 9 + 1 + 4 + 6);  // success counter over both, restart read
  EXPECT_DOUBLE_EQ(*m.errors, 1);
  EXPECT_DOUBLE_EQ(*m.error_rate, 1.0 / 20);
  EXPECT_DOUBLE_EQ(*m.requests_per_second, 20.0 / 60);
  EXPECT_DOUBLE_EQ(*m.output_tokens, 1200 + 100 + 300);
  EXPECT_DOUBLE_EQ(*m.mean_latency_ms, 15000.0 / 20);
  EXPECT_DOUBLE_EQ(*m.running, 5);
  EXPECT_DOUBLE_EQ(*m.kv_cache_usage, 0.4);  // the newer name wins; the mean over targets
  EXPECT_FALSE(m.queue_share);
  EXPECT_EQ(all[1].model, "qwen");
  EXPECT_DOUBLE_EQ(*all[1].running, 7);
  EXPECT_FALSE(all[1].requests);
}

TEST(ScrapedServing, TheWindowBoundsWhatCounts) {
  auto series = vllm_two_targets();
  // (30, 60]: a from 0 (its last scrape before 30), b from its scrape at 30.
  auto m = scraped_serving(series, 30 * kS, 60 * kS).at(0);
  EXPECT_DOUBLE_EQ(m.fields.at("latency_ms").count, 10 + 6);
  EXPECT_EQ(m.resets, 0u);
}

TEST(ScrapedServing, TritonCountersAndSummaries) {
  const Labels v1 = {{"model", "resnet50"}, {"version", "1"}, {"job", "triton"}, {"instance", "t:8002"}};
  auto with = [](Labels l, std::string k, std::string v) {
    l.emplace_back(std::move(k), std::move(v));
    return l;
  };
  std::vector<SeriesSamples> s = {
      series("nv_inference_request_success", v1, {{0, 1000}, {10, 1200}}),
      series("nv_inference_request_failure", with(v1, "reason", "BACKEND"), {{0, 0}, {10, 4}}),
      series("nv_inference_request_failure", with(v1, "reason", "REJECTED"), {{0, 0}, {10, 1}}),
      series("nv_inference_count", v1, {{0, 8000}, {10, 9600}}),
      series("nv_inference_exec_count", v1, {{0, 1000}, {10, 1200}}),
      series("nv_inference_request_duration_us", v1, {{0, 15e6}, {10, 18.075e6}}),
      series("nv_inference_queue_duration_us", v1, {{0, 2e6}, {10, 2.41e6}}),
      series("nv_inference_request_summary_us", with(v1, "quantile", "0.5"), {{10, 14800}}),
      series("nv_inference_request_summary_us", with(v1, "quantile", "0.99"), {{10, 31200}}),
      series("nv_inference_request_summary_us_count", v1, {{0, 1000}, {10, 1205}}),
      series("nv_inference_request_summary_us_sum", v1, {{0, 15e6}, {10, 18.075e6}}),
  };
  auto all = scraped_serving(s, 0, 10 * kS);
  ASSERT_EQ(all.size(), 1u);
  const ScrapedServing& m = all[0];
  EXPECT_EQ(m.server, "triton");
  EXPECT_EQ(m.version, "1");
  EXPECT_DOUBLE_EQ(*m.requests, 205);
  EXPECT_DOUBLE_EQ(*m.errors, 5);
  EXPECT_DOUBLE_EQ(*m.requests_per_second, 20.5);
  EXPECT_DOUBLE_EQ(*m.inferences_per_second, 160);
  EXPECT_DOUBLE_EQ(*m.average_batch_size, 8);
  EXPECT_NEAR(*m.mean_latency_ms, 3.075e3 / 205, 1e-9);
  EXPECT_NEAR(*m.queue_share, 0.41 / 3.075, 1e-12);
  const ScrapedDistribution& lat = m.fields.at("latency_ms");
  EXPECT_TRUE(lat.summary);
  EXPECT_DOUBLE_EQ(scraped_quantile(lat, 0.99)->value, 31.2);
  EXPECT_FALSE(scraped_quantile(lat, 0.9));  // not exported: no guess
  EXPECT_FALSE(scraped_share_at_most(lat, 20));
}

TEST(ScrapedServing, AHistogramWithoutInfBucketIsNotRead) {
  std::vector<SeriesSamples> s = {
      series("vllm:time_to_first_token_seconds_bucket", {{"model_name", "m"}, {"le", "0.1"}}, {{0, 0}, {10, 5}}),
  };
  auto all = scraped_serving(s, 0, 10 * kS);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_FALSE(all[0].fields.contains("ttft_ms"));
}

TEST(ScrapedServing, VersionsMergeOnlyWithTheSameBuckets) {
  ScrapedDistribution a{"h", false, {{1, 2}, {kInf, 4}}, {}, 4, 10};
  ScrapedDistribution b{"h", false, {{1, 1}, {kInf, 1}}, {}, 1, 0.5};
  const ScrapedDistribution* both[] = {&a, &b};
  auto merged = merge_scraped(both).value();
  EXPECT_EQ(merged.buckets[0].count, 3);
  EXPECT_EQ(merged.buckets[1].count, 5);
  EXPECT_EQ(merged.sum_ms, 10.5);
  ScrapedDistribution c{"h", false, {{2, 1}, {kInf, 1}}, {}, 1, 0.5};
  const ScrapedDistribution* other_bounds[] = {&a, &c};
  EXPECT_FALSE(merge_scraped(other_bounds));
  ScrapedDistribution s{"s", true, {}, {{0.5, 3}}, 1, 3};
  const ScrapedDistribution* summaries[] = {&s, &s};
  EXPECT_FALSE(merge_scraped(summaries));
  const ScrapedDistribution* one[] = {&s};
  EXPECT_TRUE(merge_scraped(one));
}

}  // namespace
}  // namespace perfscope::analysis
