// Sampler: runs the enabled collectors every sampling interval on its own thread, times each
// collector's part of the pass (as node_exporter times its collectors), stamps each pass with
// one wall-clock time, interns the readings into the SeriesStore and hands
// the pass, as one immutable SampleBatch, to every registered sink (the database writer,
// the WebSocket hub).
//
// Thread-safety: add_collector/add_sink before start(); start/stop from one owning thread;
// collectors(), passes() and collector_timings() are safe from any thread. Sinks run on the sampler thread and
// must not block (queue the batch and return).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <string>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/series/collector.hpp"
#include "engine/series/series_store.hpp"

namespace perfscope {

// How long one collector's collect() took: in the last pass and in all passes so far.
struct CollectorTiming {
  std::string name;
  double last_seconds = 0;
  double total_seconds = 0;
  std::uint64_t passes = 0;
  double mean_seconds() const { return passes ? total_seconds / static_cast<double>(passes) : 0.0; }
};

class Sampler {
 public:
  using BatchSink = std::function<void(const std::shared_ptr<const SampleBatch>&)>;

  Sampler(SeriesStore& store, std::chrono::milliseconds interval);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void add_collector(std::unique_ptr<Collector> collector);
  void add_sink(BatchSink sink);
  void start();
  // Stops the thread after the pass in progress; idempotent.
  void stop();

  // One pass on the caller's thread (tests and benchmarks; not while the thread runs).
  std::shared_ptr<const SampleBatch> sample_once();

  const std::vector<std::unique_ptr<Collector>>& collectors() const { return collectors_; }
  std::chrono::milliseconds interval() const { return interval_; }
  std::uint64_t passes() const { return passes_.load(std::memory_order_relaxed); }
  // One per collector, in the order they were added.
  std::vector<CollectorTiming> collector_timings() const;

 private:
  void run();

  SeriesStore& store_;
  const std::chrono::milliseconds interval_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  std::vector<BatchSink> sinks_;
  std::vector<Reading> readings_;  // reused between passes
  std::vector<SeriesKey> retired_;  // reused between passes
  // Per collector, written by the sampling thread, read from any; a deque, as atomics do not move.
  struct Timing {
    std::atomic<std::int64_t> last_ns{0};
    std::atomic<std::int64_t> total_ns{0};
    std::atomic<std::uint64_t> passes{0};
  };
  std::deque<Timing> timings_;

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::atomic<std::uint64_t> passes_{0};
};

}  // namespace perfscope
