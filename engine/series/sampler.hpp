// Sampler: runs the enabled collectors every sampling interval on its own thread, stamps
// each pass with one wall-clock time, interns the readings into the SeriesStore and hands
// the pass, as one immutable SampleBatch, to every registered sink (the database writer,
// the WebSocket hub).
//
// Thread-safety: add_collector/add_sink before start(); start/stop from one owning thread;
// collectors() and stats() are safe from any thread. Sinks run on the sampler thread and
// must not block (queue the batch and return).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/series/collector.hpp"
#include "engine/series/series_store.hpp"

namespace perfscope {

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

 private:
  void run();

  SeriesStore& store_;
  const std::chrono::milliseconds interval_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  std::vector<BatchSink> sinks_;
  std::vector<Reading> readings_;  // reused between passes
  std::vector<SeriesKey> retired_;  // reused between passes

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::atomic<std::uint64_t> passes_{0};
};

}  // namespace perfscope
