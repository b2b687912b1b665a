#include "engine/series/sampler.hpp"
#include "engine/base/thread_name.hpp"

namespace perfscope {

Sampler::Sampler(SeriesStore& store, std::chrono::milliseconds interval) : store_(store), interval_(interval) {}

Sampler::~Sampler() { stop(); }

void Sampler::add_collector(std::unique_ptr<Collector> collector) {
  for (const MetricFamily& family : collector->families()) store_.declare(family);
  collectors_.push_back(std::move(collector));
  timings_.emplace_back();
}

std::vector<CollectorTiming> Sampler::collector_timings() const {
  std::vector<CollectorTiming> out;
  for (std::size_t i = 0; i < collectors_.size(); ++i) {
    const Timing& t = timings_[i];
    out.push_back({std::string(collectors_[i]->name()), static_cast<double>(t.last_ns.load(std::memory_order_relaxed)) / 1e9,
                   static_cast<double>(t.total_ns.load(std::memory_order_relaxed)) / 1e9,
                   t.passes.load(std::memory_order_relaxed)});
  }
  return out;
}

void Sampler::add_sink(BatchSink sink) { sinks_.push_back(std::move(sink)); }

void Sampler::start() {
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void Sampler::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const SampleBatch> Sampler::sample_once() {
  auto batch = std::make_shared<SampleBatch>();
  batch->ts_ns = now_ns();
  readings_.clear();
  for (std::size_t i = 0; i < collectors_.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    collectors_[i]->collect(batch->ts_ns, readings_);
    const std::int64_t took =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    Timing& t = timings_[i];
    t.last_ns.store(took, std::memory_order_relaxed);
    t.total_ns.fetch_add(took, std::memory_order_relaxed);
    t.passes.fetch_add(1, std::memory_order_relaxed);
  }
  batch->values.reserve(readings_.size());
  for (const Reading& r : readings_) batch->values.emplace_back(store_.intern(r.key), r.value);
  store_.append(*batch);
  retired_.clear();
  for (auto& collector : collectors_) collector->take_retired(retired_);
  for (const SeriesKey& key : retired_) store_.release(key);
  passes_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const SampleBatch> shared = std::move(batch);
  for (const BatchSink& sink : sinks_) sink(shared);
  return shared;
}

void Sampler::run() {
  name_this_thread("ps-sampler");
  // Deadlines advance by whole intervals from the start so passes do not drift; a pass
  // that overran skips the deadlines it missed instead of bursting to catch up.
  auto next = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    sample_once();
    lock.lock();
    next += interval_;
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + interval_ - (now - next) % interval_;
    wake_.wait_until(lock, next, [this] { return stopping_; });
  }
}

}  // namespace perfscope
