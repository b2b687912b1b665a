// Collector: one source of periodic readings (the host today; NVML and others behind the
// same interface). The Sampler owns its collectors and calls collect() on its own thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/series/series.hpp"

namespace perfscope {

struct Reading {
  SeriesKey key;
  double value = 0;
};

// Whether one data source of a collector exists on this machine, decided once when the
// collector is built. A missing source is a fact to report, never an error.
struct SourceStatus {
  std::string name;
  bool available = false;
  std::string detail;  // the path read, or why it is unavailable
};

class Collector {
 public:
  virtual ~Collector() = default;

  virtual std::string_view name() const = 0;
  // The metric families this collector may emit. Thread-safe (immutable after construction).
  virtual std::vector<MetricFamily> families() const = 0;
  // The sources found or missing. Thread-safe (immutable after construction for the host and
  // GPU collectors; a scrape collector reports each target's latest state).
  virtual std::vector<SourceStatus> sources() const = 0;
  // Appends this pass's readings. Called from one thread at a time (the sampler's).
  // Rates need two passes: the first pass emits levels and counters only.
  virtual void collect(TimestampNs now_ns, std::vector<Reading>& out) = 0;
  // Appends the series that will get no more readings (a GPU process that ended), so the store
  // can free their in-memory history; the database keeps it. Called after collect(), from the
  // same thread.
  virtual void take_retired(std::vector<SeriesKey>& /*out*/) {}
};

}  // namespace perfscope
