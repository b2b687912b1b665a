// ScrapeCollector: the scrape targets (`--scrape`) as one collector of the sampler. Each target
// has its own thread that GETs its endpoint every interval (Accept: OpenMetrics first, then the
// text format), parses the body and turns it into readings (ScrapeSeries); the sampler's next
// pass takes the newest readings of every target and stores them with the host's and the GPUs'.
// A target that is down, slow, too large or malformed only reports why (sources(): one per
// target, up or not, with its last error or figures); the others go on.
//
// Thread-safety: collect() from the sampler's thread; sources() from any thread; the target
// threads start in the constructor and stop in the destructor.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/series/collector.hpp"
#include "engine/collectors/engine_config.hpp"
#include "engine/series/series_store.hpp"

namespace perfscope::server {

class ScrapeCollector : public Collector {
 public:
  // `store` receives the families the targets declare as they appear (their type and help).
  ScrapeCollector(std::vector<ScrapeTarget> targets, SeriesStore& store);
  ~ScrapeCollector() override;
  ScrapeCollector(const ScrapeCollector&) = delete;
  ScrapeCollector& operator=(const ScrapeCollector&) = delete;

  std::string_view name() const override { return "scrape"; }
  std::vector<MetricFamily> families() const override { return {}; }  // declared as they appear
  std::vector<SourceStatus> sources() const override;
  void collect(TimestampNs now_ns, std::vector<Reading>& out) override;

 private:
  struct Target;
  void run(Target& target);

  SeriesStore& store_;
  std::vector<std::unique_ptr<Target>> targets_;
  mutable std::mutex mu_;  // guards every Target's pending readings and status
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace perfscope::server
