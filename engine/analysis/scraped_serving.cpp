#include "engine/analysis/scraped_serving.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>

namespace perfscope::analysis {

namespace {

enum class Role { kHistogram, kSummary, kCounter, kGauge };

// What perfscope knows of each server's exposition. Latencies, gauges and summaries: the first
// entry of a quantity with data wins (a server exporting a metric under its old and new name
// during a deprecation counts once); counters of one quantity add up (Triton's requests are
// its successes plus its failures).
struct KnownMetric {
  std::string_view server;
  std::string_view name;  // histograms and summaries: the family; counters and gauges: the sample
  Role role;
  std::string_view what;  // a latency field, or the quantity a counter or gauge gives
  double scale = 1;       // to milliseconds (latencies)
  std::string_view only_label = {};   // counts only series whose label…
  std::string_view only_values = {};  // …is one of these, '|'-separated
};

constexpr KnownMetric kKnown[] = {
    // vLLM (model_name)
    {"vllm", "vllm:e2e_request_latency_seconds", Role::kHistogram, "latency_ms", 1000},
    {"vllm", "vllm:time_to_first_token_seconds", Role::kHistogram, "ttft_ms", 1000},
    {"vllm", "vllm:request_time_per_output_token_seconds", Role::kHistogram, "tpot_ms", 1000},
    {"vllm", "vllm:inter_token_latency_seconds", Role::kHistogram, "itl_ms", 1000},
    {"vllm", "vllm:time_per_output_token_seconds", Role::kHistogram, "itl_ms", 1000},  // its older name
    {"vllm", "vllm:request_queue_time_seconds", Role::kHistogram, "queue_ms", 1000},
    {"vllm", "vllm:request_inference_time_seconds", Role::kHistogram, "compute_ms", 1000},
    {"vllm", "vllm:request_success_total", Role::kCounter, "requests"},
    {"vllm", "vllm:request_success_total", Role::kCounter, "errors", 1, "finished_reason", "abort|error"},
    {"vllm", "vllm:prompt_tokens_total", Role::kCounter, "input_tokens"},
    {"vllm", "vllm:generation_tokens_total", Role::kCounter, "output_tokens"},
    {"vllm", "vllm:num_requests_running", Role::kGauge, "running"},
    {"vllm", "vllm:num_requests_waiting", Role::kGauge, "waiting"},
    {"vllm", "vllm:kv_cache_usage_perc", Role::kGauge, "kv_cache_usage"},
    {"vllm", "vllm:gpu_cache_usage_perc", Role::kGauge, "kv_cache_usage"},  // its older name
    // SGLang (model_name)
    {"sglang", "sglang:e2e_request_latency_seconds", Role::kHistogram, "latency_ms", 1000},
    {"sglang", "sglang:time_to_first_token_seconds", Role::kHistogram, "ttft_ms", 1000},
    {"sglang", "sglang:inter_token_latency_seconds", Role::kHistogram, "itl_ms", 1000},
    {"sglang", "sglang:queue_time_seconds", Role::kHistogram, "queue_ms", 1000},
    {"sglang", "sglang:prompt_tokens_total", Role::kCounter, "input_tokens"},
    {"sglang", "sglang:generation_tokens_total", Role::kCounter, "output_tokens"},
    {"sglang", "sglang:num_running_reqs", Role::kGauge, "running"},
    {"sglang", "sglang:num_queue_reqs", Role::kGauge, "waiting"},
    {"sglang", "sglang:token_usage", Role::kGauge, "kv_cache_usage"},
    // Text Generation Inference (one model per server: the target's job names it)
    {"tgi", "tgi_request_duration", Role::kHistogram, "latency_ms", 1000},
    {"tgi", "tgi_request_queue_duration", Role::kHistogram, "queue_ms", 1000},
    {"tgi", "tgi_request_inference_duration", Role::kHistogram, "compute_ms", 1000},
    {"tgi", "tgi_request_mean_time_per_token_duration", Role::kHistogram, "tpot_ms", 1000},
    {"tgi", "tgi_request_success", Role::kCounter, "requests"},
    {"tgi", "tgi_request_failure", Role::kCounter, "requests"},
    {"tgi", "tgi_request_failure", Role::kCounter, "errors"},
    {"tgi", "tgi_queue_size", Role::kGauge, "waiting"},
    {"tgi", "tgi_batch_current_size", Role::kGauge, "running"},
    // Triton (model, version)
    {"triton", "nv_inference_request_summary_us", Role::kSummary, "latency_ms", 0.001},
    {"triton", "nv_inference_first_response_histogram_ms", Role::kHistogram, "ttft_ms", 1},
    {"triton", "nv_inference_queue_summary_us", Role::kSummary, "queue_ms", 0.001},
    {"triton", "nv_inference_compute_infer_summary_us", Role::kSummary, "compute_ms", 0.001},
    {"triton", "nv_inference_request_success", Role::kCounter, "requests"},
    {"triton", "nv_inference_request_failure", Role::kCounter, "requests"},
    {"triton", "nv_inference_request_failure", Role::kCounter, "errors"},
    {"triton", "nv_inference_count", Role::kCounter, "inferences"},
    {"triton", "nv_inference_exec_count", Role::kCounter, "executions"},
    {"triton", "nv_inference_request_duration_us", Role::kCounter, "request_time_ms", 0.001},
    {"triton", "nv_inference_queue_duration_us", Role::kCounter, "queue_time_ms", 0.001},
    {"triton", "nv_inference_pending_request_count", Role::kGauge, "waiting"},
};
constexpr std::size_t kKnownCount = std::size(kKnown);

constexpr std::string_view kPatterns[] = {"vllm:*", "sglang:*", "tgi_*", "nv_inference_*"};
constexpr std::string_view kFields[] = {"latency_ms", "ttft_ms", "tpot_ms", "itl_ms", "queue_ms", "compute_ms"};

std::string_view model_label(std::string_view server) {
  if (server == "triton") return "model";
  if (server == "tgi") return "job";
  return "model_name";
}

enum class Part { kValue, kBucket, kSum, kCount };

// Sample name → (entry, part) for every sample a known family writes.
const std::unordered_multimap<std::string, std::pair<std::size_t, Part>>& sample_index() {
  static const auto index = [] {
    std::unordered_multimap<std::string, std::pair<std::size_t, Part>> m;
    for (std::size_t i = 0; i < kKnownCount; ++i) {
      const std::string name(kKnown[i].name);
      switch (kKnown[i].role) {
        case Role::kHistogram:
          m.emplace(name + "_bucket", std::pair{i, Part::kBucket});
          m.emplace(name + "_sum", std::pair{i, Part::kSum});
          m.emplace(name + "_count", std::pair{i, Part::kCount});
          break;
        case Role::kSummary:
          m.emplace(name, std::pair{i, Part::kValue});
          m.emplace(name + "_sum", std::pair{i, Part::kSum});
          m.emplace(name + "_count", std::pair{i, Part::kCount});
          break;
        case Role::kCounter:
        case Role::kGauge: m.emplace(name, std::pair{i, Part::kValue}); break;
      }
    }
    return m;
  }();
  return index;
}

bool admitted(const KnownMetric& k, const SeriesKey& key) {
  if (k.only_label.empty()) return true;
  const std::string* v = key.label(k.only_label);
  if (!v) return false;
  std::string_view values = k.only_values;
  while (!values.empty()) {
    const std::size_t bar = values.find('|');
    if (values.substr(0, bar) == *v) return true;
    values = bar == std::string_view::npos ? std::string_view() : values.substr(bar + 1);
  }
  return false;
}

std::optional<double> parse_bound(const std::string* text) {
  if (!text) return std::nullopt;
  if (*text == "+Inf" || *text == "Inf" || *text == "+inf") return std::numeric_limits<double>::infinity();
  double v = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return v;
}

// The newest sample at or before `to_ns`.
const Sample* newest(std::span<const Sample> samples, TimestampNs to_ns) {
  auto it = std::upper_bound(samples.begin(), samples.end(), to_ns,
                             [](TimestampNs t, const Sample& s) { return t < s.ts_ns; });
  return it == samples.begin() ? nullptr : &*(it - 1);
}

// What one entry gathered for one group.
struct EntryAcc {
  bool seen = false;
  double value = 0;  // counters: the summed increase; gauges: the summed newest values
  std::size_t gauges = 0;
  std::map<double, double> buckets;  // bound (exposed unit) → summed increase
  double count = 0, sum = 0;
  std::map<double, std::vector<double>> quantiles;  // q → newest value of each series
};

struct GroupAcc {
  std::set<std::string> targets;
  std::array<EntryAcc, kKnownCount> entries;
  TimestampNs span_ns = 0;
  std::size_t resets = 0;
};

}  // namespace

std::optional<Increase> counter_increase(std::span<const Sample> samples, TimestampNs from_ns, TimestampNs to_ns) {
  // The base: the last sample at or before the start, else the first one inside the window.
  auto after_from = std::upper_bound(samples.begin(), samples.end(), from_ns,
                                     [](TimestampNs t, const Sample& s) { return t < s.ts_ns; });
  auto base = after_from == samples.begin() ? after_from : after_from - 1;
  if (base == samples.end() || base->ts_ns > to_ns) return std::nullopt;
  Increase out;
  out.first_ns = out.last_ns = base->ts_ns;
  double previous = base->value;
  for (auto it = base + 1; it != samples.end() && it->ts_ns <= to_ns; ++it) {
    if (it->value >= previous) {
      out.value += it->value - previous;
    } else {
      out.value += it->value;  // a restart: everything since counts
      ++out.resets;
    }
    previous = it->value;
    out.last_ns = it->ts_ns;
  }
  return out;
}

std::optional<BucketEstimate> scraped_quantile(const ScrapedDistribution& d, double q) {
  if (!d.summary) return bucket_quantile(q, d.buckets);
  for (const auto& [at, value] : d.quantiles) {
    if (std::fabs(at - q) < 1e-9) return BucketEstimate{value, value, value};
  }
  return std::nullopt;
}

std::optional<BucketEstimate> scraped_share_at_most(const ScrapedDistribution& d, double threshold_ms) {
  if (d.summary) return std::nullopt;
  return bucket_share_at_most(threshold_ms, d.buckets);
}

std::optional<ScrapedDistribution> merge_scraped(std::span<const ScrapedDistribution* const> parts) {
  if (parts.empty()) return std::nullopt;
  if (parts.size() == 1) return *parts.front();
  ScrapedDistribution out = *parts.front();
  if (out.summary) return std::nullopt;
  for (const ScrapedDistribution* d : parts.subspan(1)) {
    if (d->summary || d->metric != out.metric || d->buckets.size() != out.buckets.size()) return std::nullopt;
    for (std::size_t i = 0; i < out.buckets.size(); ++i) {
      if (d->buckets[i].le != out.buckets[i].le) return std::nullopt;
      out.buckets[i].count += d->buckets[i].count;
    }
    out.count += d->count;
    out.sum_ms += d->sum_ms;
  }
  return out;
}

std::span<const std::string_view> scraped_serving_patterns() { return kPatterns; }
std::span<const std::string_view> scraped_fields() { return kFields; }

namespace {

using GroupKey = std::tuple<std::string, std::string, std::string>;  // (server, model, version)

// Every known series' increase (counters, histograms' buckets, sums and counts) or newest value
// (gauges, summaries' quantiles) over the window, added up per server, model and version.
std::map<GroupKey, GroupAcc> group_series(std::span<const SeriesSamples> series, TimestampNs from_ns, TimestampNs to_ns) {
  const auto& index = sample_index();
  std::map<GroupKey, GroupAcc> groups;
  for (const SeriesSamples& s : series) {
    auto [lo, hi] = index.equal_range(s.key.name);
    for (auto it = lo; it != hi; ++it) {
      const auto [entry, part] = it->second;
      const KnownMetric& k = kKnown[entry];
      if (!admitted(k, s.key)) continue;
      const std::string* model = s.key.label(model_label(k.server));
      if (!model) continue;
      const std::string* version = s.key.label("version");
      std::optional<double> bound;
      if (part == Part::kBucket && !(bound = parse_bound(s.key.label("le")))) continue;
      std::optional<double> quantile;
      if (k.role == Role::kSummary && part == Part::kValue && !(quantile = parse_bound(s.key.label("quantile")))) continue;

      double value = 0;
      if (k.role == Role::kGauge || quantile) {
        const Sample* last = newest(s.samples, to_ns);
        if (!last || last->ts_ns < from_ns) continue;  // stale: not in the window
        value = last->value;
      } else {
        auto inc = counter_increase(s.samples, from_ns, to_ns);
        if (!inc) continue;
        value = inc->value;
        GroupAcc& g = groups[{std::string(k.server), *model, version ? *version : std::string()}];
        g.span_ns = std::max(g.span_ns, inc->last_ns - inc->first_ns);
        if (part == Part::kValue || part == Part::kCount) g.resets += inc->resets;
      }
      GroupAcc& g = groups[{std::string(k.server), *model, version ? *version : std::string()}];
      const std::string* job = s.key.label("job");
      const std::string* instance = s.key.label("instance");
      g.targets.insert((job ? *job : std::string()) + "/" + (instance ? *instance : std::string()));
      EntryAcc& e = g.entries[entry];
      e.seen = true;
      if (quantile) {
        e.quantiles[*quantile].push_back(value);
      } else if (part == Part::kBucket) {
        e.buckets[*bound] += value;
      } else if (part == Part::kSum) {
        e.sum += value;
      } else if (part == Part::kCount) {
        e.count += value;
      } else {
        e.value += value;
        if (k.role == Role::kGauge) ++e.gauges;
      }
    }
  }

  return groups;
}

// A histogram's or summary's entry as a distribution; none for a histogram without +Inf.
std::optional<ScrapedDistribution> distribution_of(const KnownMetric& k, const EntryAcc& e, std::vector<std::string>& notes) {
  ScrapedDistribution d;
  d.metric = std::string(k.name);
  d.summary = k.role == Role::kSummary;
  d.count = e.count;
  d.sum_ms = e.sum * k.scale;
  if (d.summary) {
    for (const auto& [q, values] : e.quantiles) {
      // One series' quantiles are its own; those of several cannot be combined.
      if (values.size() == 1) d.quantiles.emplace_back(q, values.front() * k.scale);
    }
    if (std::any_of(e.quantiles.begin(), e.quantiles.end(), [](const auto& q) { return q.second.size() > 1; })) {
      notes.push_back(std::string(k.name) + ": quantiles of several targets cannot be combined; only the mean is given");
    }
  } else {
    for (const auto& [le, count] : e.buckets) d.buckets.push_back({le * k.scale, count});
    d.buckets = normalize_buckets(std::move(d.buckets));
    if (d.buckets.empty()) return std::nullopt;  // no +Inf bucket: not a histogram to read
  }
  return d;
}

// The rates, shares and means of a model from its counters and gauges, and the notes that
// say where a figure is not what its name suggests.
void derive_figures(ScrapedServing& m, const std::map<std::string_view, double>& counters,
                    const std::map<std::string_view, double>& gauges) {
  auto counter = [&](std::string_view what) -> std::optional<double> {
    auto it = counters.find(what);
    return it == counters.end() ? std::nullopt : std::optional(it->second);
  };
  auto per_second = [&](std::optional<double> v) -> std::optional<double> {
    return v && m.window_s > 0 ? std::optional(*v / m.window_s) : std::nullopt;
  };
  const ScrapedDistribution* latency = m.fields.contains("latency_ms") ? &m.fields.at("latency_ms") : nullptr;
  m.requests = counter("requests");
  if (!m.requests && latency) m.requests = latency->count;  // every finished request is observed once
  m.errors = counter("errors");
  if (m.requests && m.errors && *m.requests > 0) m.error_rate = *m.errors / *m.requests;
  m.requests_per_second = per_second(m.requests);
  m.inferences_per_second = per_second(counter("inferences"));
  if (auto inf = counter("inferences"), exec = counter("executions"); inf && exec && *exec > 0) {
    m.average_batch_size = *inf / *exec;
  }
  m.input_tokens = counter("input_tokens");
  m.output_tokens = counter("output_tokens");
  m.input_tokens_per_second = per_second(m.input_tokens);
  m.output_tokens_per_second = per_second(m.output_tokens);
  std::optional<double> request_time = counter("request_time_ms"), queue_time = counter("queue_time_ms");
  if (latency && latency->count > 0) {
    m.mean_latency_ms = latency->mean_ms();
    if (!request_time) request_time = latency->sum_ms;
  } else if (request_time && m.requests && *m.requests > 0) {
    m.mean_latency_ms = *request_time / *m.requests;
  }
  if (!queue_time && m.fields.contains("queue_ms")) queue_time = m.fields.at("queue_ms").sum_ms;
  if (queue_time && request_time && *request_time > 0) m.queue_share = *queue_time / *request_time;
  if (auto it = gauges.find("running"); it != gauges.end()) m.running = it->second;
  if (auto it = gauges.find("waiting"); it != gauges.end()) m.waiting = it->second;
  if (auto it = gauges.find("kv_cache_usage"); it != gauges.end()) m.kv_cache_usage = it->second;
  if (m.server == "vllm" && m.errors) {
    m.notes.push_back("errors: requests that finished aborted or with an error (vllm:request_success_total's finished_reason)");
  }
  if (m.fields.contains("itl_ms") && !m.fields.contains("tpot_ms")) {
    m.notes.push_back("itl_ms is every gap between two tokens (" + m.fields.at("itl_ms").metric +
                      "); the server exports no per-request time per output token");
  }
}

ScrapedServing serving_of(const GroupKey& key, const GroupAcc& g) {
  ScrapedServing m;
  std::tie(m.server, m.model, m.version) = key;
  m.targets.assign(g.targets.begin(), g.targets.end());
  m.window_s = static_cast<double>(g.span_ns) / 1e9;
  m.resets = g.resets;
  std::map<std::string_view, double> counters;
  std::map<std::string_view, double> gauges;
  for (std::size_t i = 0; i < kKnownCount; ++i) {
    const EntryAcc& e = g.entries[i];
    if (!e.seen) continue;
    const KnownMetric& k = kKnown[i];
    switch (k.role) {
      case Role::kCounter: counters[k.what] += e.value * k.scale; break;
      case Role::kGauge:
        if (!gauges.contains(k.what)) {
          // Queue lengths add up over targets; a usage ratio is their mean.
          gauges[k.what] = k.what == "kv_cache_usage" ? e.value / static_cast<double>(e.gauges) : e.value;
        }
        break;
      case Role::kHistogram:
      case Role::kSummary: {
        const std::string field(k.what);
        if (m.fields.contains(field)) break;
        if (auto d = distribution_of(k, e, m.notes)) m.fields.emplace(field, std::move(*d));
        break;
      }
    }
  }
  derive_figures(m, counters, gauges);
  return m;
}

}  // namespace

std::vector<ScrapedServing> scraped_serving(std::span<const SeriesSamples> series, TimestampNs from_ns,
                                            TimestampNs to_ns) {
  std::vector<ScrapedServing> out;
  for (const auto& [key, g] : group_series(series, from_ns, to_ns)) out.push_back(serving_of(key, g));
  return out;
}

std::optional<double> scraped_latency_p99(const ScrapedServing& m) {
  auto it = m.fields.find("latency_ms");
  if (it == m.fields.end()) return std::nullopt;
  auto e = scraped_quantile(it->second, 0.99);
  if (!e || !std::isfinite(e->value)) return std::nullopt;
  return e->value;
}

}  // namespace perfscope::analysis
