// ScrapeSeries: one scrape target's successive expositions turned into perfscope series, as
// Prometheus stores a scrape: every sample a series under its own name, labelled with the
// target (`job`, `instance` and the target's own labels; a label the exposition also uses is
// kept as `exported_NAME`, as honor_labels: false does). Counters also give their per-second
// rate between two scrapes (`NAME_per_second`, `_total` dropped); a counter that went down
// restarted, and its rate over that interval is its new value over the interval, as rate()
// reads a reset. A scrape with more samples than the target's limit is refused whole; a target
// whose label values keep changing (a request id in a label) stops growing at its series limit:
// series it has not sent before are dropped from then on, counted, while the known ones go on.
//
// Thread-safety: one owner thread (the target's scraper).
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/series/collector.hpp"
#include "engine/base/status.hpp"
#include "server/wire/exposition_parse.hpp"

namespace perfscope::server {

struct ScrapeTargetLabels {
  std::string job;       // e.g. "vllm"; default: the URL's host
  std::string instance;  // host:port of the URL
  Labels extra;          // the target's own labels (sorted)
};

class ScrapeSeries {
 public:
  ScrapeSeries(ScrapeTargetLabels target, std::size_t sample_limit, std::size_t series_limit);

  // The readings of one scrape taken at `ts_ns`; kInvalidArgument (field "sample_limit") and
  // nothing stored past the limit.
  Result<std::vector<Reading>> convert(const Exposition& exposition, TimestampNs ts_ns);

  // The families seen so far (name, type, help, unit), rates included: for /api/v1/series.
  const std::vector<MetricFamily>& families() const { return families_; }
  // Samples of new series dropped at the series limit: in the last scrape, and in all.
  std::size_t dropped_last() const { return dropped_last_; }
  std::uint64_t dropped_total() const { return dropped_total_; }
  std::size_t series_count() const { return known_.size(); }

 private:
  Labels labels_for(const Labels& exposed) const;
  void declare(const std::string& name, MetricType type, const std::string& help, const std::string& unit);

  Labels own_;  // job, instance and the target's labels, sorted: added to every sample
  std::size_t sample_limit_;
  std::size_t series_limit_;
  std::unordered_set<std::string> known_;  // canonical keys of the series admitted
  std::size_t dropped_last_ = 0;
  std::uint64_t dropped_total_ = 0;
  struct Previous {
    TimestampNs ts_ns = 0;
    double value = 0;
  };
  std::unordered_map<std::string, Previous> counters_;  // by canonical series key
  std::vector<MetricFamily> families_;
  std::unordered_map<std::string, std::size_t> family_index_;
};

}  // namespace perfscope::server
