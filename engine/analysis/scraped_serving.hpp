// Serving metrics of an inference server read from what perfscope scraped of its /metrics
// (`--scrape`): vLLM, SGLang, TGI and Triton export request histograms and counters, not single
// requests, so the figures here come from the increase of those cumulative series over a
// window, per model and version, summed over every target and label that is neither:
//  - rates and shares from counter increases (requests, errors, tokens, inferences, queue
//    time against request time);
//  - latency distributions as histogram buckets over the window (percentiles and SLA shares
//    through bucket_quantile, with the bucket as the error bound) or, for summaries, the
//    quantiles the server itself computed over its own window at the newest scrape;
//  - gauges (running, waiting, KV-cache use) at their newest value.
// An increase runs from the last scrape at or before the window's start (the first scrape in
// the window when there is none) to the last scrape in it; a value that went down is a
// restart and counts whole after it, as increase() reads a reset, without extrapolation.
//
// Pure functions; safe from any thread.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/analysis/bucket_quantile.hpp"
#include "engine/series/series.hpp"

namespace perfscope::analysis {

// One stored series and its samples in ascending time.
struct SeriesSamples {
  SeriesKey key;
  std::vector<Sample> samples;
};

struct Increase {
  double value = 0;
  TimestampNs first_ns = 0, last_ns = 0;  // the scrapes it runs between
  std::size_t resets = 0;
};
// nullopt when no sample lies in (from, to] and none before it.
std::optional<Increase> counter_increase(std::span<const Sample> samples, TimestampNs from_ns, TimestampNs to_ns);

// One latency field of one model over the window, in milliseconds.
struct ScrapedDistribution {
  std::string metric;  // the exposed family it came from
  bool summary = false;
  std::vector<CumulativeBucket> buckets;  // histograms: counts over the window, bounds in ms
  std::vector<std::pair<double, double>> quantiles;  // summaries: (q in 0..1, ms), newest scrape
  double count = 0, sum_ms = 0;  // observations over the window and their sum
  std::optional<double> mean_ms() const { return count > 0 ? std::optional(sum_ms / count) : std::nullopt; }
};

// The q-quantile (0..1): histograms by interpolation inside the bucket (its bounds as the
// error bound); summaries only at a quantile the server exports (exact, as it computed it).
std::optional<BucketEstimate> scraped_quantile(const ScrapedDistribution& d, double q);
// The share of observations at or below `threshold_ms`; histograms only.
std::optional<BucketEstimate> scraped_share_at_most(const ScrapedDistribution& d, double threshold_ms);

struct ScrapedServing {
  std::string server;  // "vllm", "sglang", "tgi", "triton"
  std::string model, version;
  std::vector<std::string> targets;  // "job/instance" of every target summed, sorted
  double window_s = 0;  // the longest span between the scrapes an increase ran over
  std::optional<double> requests, errors, error_rate, requests_per_second;
  std::optional<double> inferences_per_second, average_batch_size;  // Triton: inferences / executions
  std::optional<double> input_tokens, output_tokens, input_tokens_per_second, output_tokens_per_second;
  std::optional<double> mean_latency_ms, queue_share;  // queue time / request time
  std::optional<double> running, waiting, kv_cache_usage;  // newest values
  // "latency_ms", "ttft_ms", "tpot_ms" (per request), "itl_ms" (every token gap), "queue_ms",
  // "compute_ms": what the server exports of them.
  std::map<std::string, ScrapedDistribution> fields;
  std::size_t resets = 0;  // counter restarts seen in the window
  std::vector<std::string> notes;  // what these figures mean where a server's differs from ours
};
// The p99 (ms) of a server's request latency, for the SLA rule; none without a histogram of it.
std::optional<double> scraped_latency_p99(const ScrapedServing& m);

// One field over several models' entries (the versions of a model asked for without one):
// histograms with the same bounds add up; a summary only stands alone. nullopt otherwise.
std::optional<ScrapedDistribution> merge_scraped(std::span<const ScrapedDistribution* const> parts);

// Every model the known families in `series` describe, by (server, model, version).
std::vector<ScrapedServing> scraped_serving(std::span<const SeriesSamples> series, TimestampNs from_ns,
                                            TimestampNs to_ns);

// Name globs that cover every family scraped_serving reads (to load only those).
std::span<const std::string_view> scraped_serving_patterns();

// The latency fields scraped data may have, in display order.
std::span<const std::string_view> scraped_fields();

}  // namespace perfscope::analysis
