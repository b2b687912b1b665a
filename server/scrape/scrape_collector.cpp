#include "server/scrape/scrape_collector.hpp"
#include "engine/base/thread_name.hpp"

#include <chrono>
#include <optional>
#include <unordered_set>

#include "server/client/client.hpp"
#include "server/scrape/scrape_series.hpp"
#include "server/wire/exposition_parse.hpp"

namespace perfscope::server {

struct ScrapeCollector::Target {
  ScrapeTarget config;
  std::optional<ServerUrl> url;  // absent when config.url does not parse (reported, not scraped)
  std::string path;  // the request target; /metrics when the URL names none
  std::unique_ptr<ScrapeSeries> series;
  std::size_t declared = 0;  // families of `series` already declared to the store
  // Guarded by the collector's mutex:
  // Readings not yet taken by a sampling pass: the newest value of every series scraped since
  // the last pass (a busy sampler may miss a scrape; a series first seen in it still arrives).
  std::vector<Reading> pending;
  bool up = false;
  std::string last_error = "not scraped yet";
  double last_duration_ms = 0;
  std::size_t last_samples = 0;
  std::size_t dropped_last = 0;    // samples of new series past the series limit, last scrape
  std::uint64_t dropped_total = 0;
  std::uint64_t scrapes = 0;
  std::uint64_t failures = 0;
};

ScrapeCollector::ScrapeCollector(std::vector<ScrapeTarget> targets, SeriesStore& store) : store_(store) {
  for (ScrapeTarget& config : targets) {
    auto t = std::make_unique<Target>();
    const std::size_t scheme_end = config.url.find("://");
    const std::size_t slash = scheme_end == std::string::npos ? std::string::npos : config.url.find('/', scheme_end + 3);
    t->path = slash == std::string::npos ? "/metrics" : config.url.substr(slash);
    ScrapeTargetLabels labels;
    labels.extra = config.labels;
    if (auto url = parse_http_url(config.url); url.ok()) {
      labels.instance = url->host + ":" + url->port;
      labels.job = config.job.empty() ? url->host : config.job;
      t->url = std::move(*url);
    } else {
      labels.job = config.job;
      t->last_error = url.status().message();
    }
    if (t->url) t->url->ca_file = config.ca_file;
    t->series = std::make_unique<ScrapeSeries>(std::move(labels), config.sample_limit, config.series_limit);
    t->config = std::move(config);
    targets_.push_back(std::move(t));
  }
  for (auto& t : targets_) threads_.emplace_back([this, target = t.get()] { run(*target); });
}

ScrapeCollector::~ScrapeCollector() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

namespace {

// Folds a newer scrape into readings no pass has taken yet: its values replace those of the
// same series, and series only the older scrape had are kept.
void merge_pending(std::vector<Reading>& pending, std::vector<Reading> newer) {
  if (pending.empty()) {
    pending = std::move(newer);
    return;
  }
  std::unordered_set<std::string> fresh;
  fresh.reserve(newer.size());
  for (const Reading& r : newer) fresh.insert(r.key.canonical());
  for (Reading& r : pending) {
    if (!fresh.contains(r.key.canonical())) newer.push_back(std::move(r));
  }
  pending = std::move(newer);
}

}  // namespace

void ScrapeCollector::run(Target& target) {
  name_this_thread("ps-scrape");
  if (!target.url) return;  // reported by sources(); nothing to scrape
  HttpPoster http(*target.url, target.config.timeout);
  http.set_token(target.config.token);
  http.set_accept("application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1");
  http.set_body_limit(target.config.body_limit);
  ExpositionLimits limits;
  limits.max_samples = target.config.sample_limit + 1;  // one past: ScrapeSeries names the limit
  auto next = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const auto started = std::chrono::steady_clock::now();
    const TimestampNs ts = now_ns();
    std::string error;
    std::vector<Reading> readings;
    std::size_t samples = 0;
    auto response = http.get(target.path);
    if (!response.ok()) {
      error = response.status().message();
    } else if (response->status != 200) {
      error = "the target answered HTTP " + std::to_string(response->status);
    } else {
      auto parsed = parse_exposition(response->body, exposition_is_openmetrics(response->content_type), limits);
      if (!parsed.ok()) {
        error = "malformed exposition: " + parsed.status().message();
      } else {
        samples = parsed->sample_count;
        auto converted = target.series->convert(*parsed, ts);
        if (!converted.ok()) error = converted.status().message();
        else readings = std::move(*converted);
      }
    }
    // Families only ever append: declare the ones this scrape added.
    const auto& families = target.series->families();
    for (; target.declared < families.size(); ++target.declared) store_.declare(families[target.declared]);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    lock.lock();
    ++target.scrapes;
    target.last_duration_ms = ms;
    target.up = error.empty();
    if (error.empty()) {
      merge_pending(target.pending, std::move(readings));
      target.last_samples = samples;
      target.dropped_last = target.series->dropped_last();
      target.dropped_total = target.series->dropped_total();
      target.last_error.clear();
    } else {
      ++target.failures;
      target.last_error = std::move(error);
    }
    next += target.config.interval;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + target.config.interval - (now - next) % target.config.interval;
    wake_.wait_until(lock, next, [this] { return stopping_; });
  }
}

void ScrapeCollector::collect(TimestampNs, std::vector<Reading>& out) {
  std::lock_guard lock(mu_);
  for (auto& t : targets_) {
    for (Reading& r : t->pending) out.push_back(std::move(r));
    t->pending.clear();
  }
}

std::vector<SourceStatus> ScrapeCollector::sources() const {
  std::lock_guard lock(mu_);
  std::vector<SourceStatus> out;
  for (const auto& t : targets_) {
    std::string detail = t->up ? std::to_string(t->last_samples) + " samples in " +
                                     std::to_string(static_cast<long long>(t->last_duration_ms + 0.5)) + " ms"
                               : t->last_error;
    detail += "; " + std::to_string(t->scrapes) + " scrapes, " + std::to_string(t->failures) + " failed";
    if (t->dropped_total > 0) {
      detail += "; label cardinality: the series limit of " + std::to_string(t->config.series_limit) + " was reached, " +
                std::to_string(t->dropped_last) + " samples of new series dropped in the last scrape (" +
                std::to_string(t->dropped_total) + " in all)";
    }
    out.push_back(SourceStatus{t->config.url, t->up, std::move(detail)});
  }
  return out;
}

}  // namespace perfscope::server
