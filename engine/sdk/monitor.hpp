// Monitor: the in-process instrumentation API an application includes to report its own
// work — kernels (begin/end pairs, RAII scopes or whole records), memory allocations,
// inference requests and command-buffer submissions, and A/B variant runs.
//
// The recording hot path (begin_kernel/end_kernel, ScopedKernel, run_variant iterations,
// track_allocation/track_deallocation) takes no lock and allocates nothing once a thread has
// seen a name: each thread writes fixed-size records into its own ring, and a drain thread
// turns them into events every `drain_interval`, keeps them for the queries below and hands
// them to the sinks (e.g. the HTTP client that posts them to a perfscope server). When a
// thread's ring is full (the drain cannot keep up), the policy decides: kWait (default)
// wakes the drain and waits for room, losing nothing; kDrop drops the record and counts it
// (dropped_records()), never delaying the application.
//
// Thread-safety: every method is safe from any thread. begin/end pairs nest per thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/analysis/ab_test.hpp"
#include "engine/events/events.hpp"
#include "engine/events/memory_tracker.hpp"
#include "engine/sdk/name_table.hpp"
#include "engine/sdk/tick_clock.hpp"

namespace perfscope {

enum class OverflowPolicy { kWait, kDrop };

struct MonitorConfig {
  OverflowPolicy overflow = OverflowPolicy::kWait;
  std::string device = "0";
  std::chrono::milliseconds drain_interval{50};
  std::size_t ring_capacity = 1 << 14;        // records per thread (power of two)
  std::size_t kept_records_per_kernel = 10000;  // for kernel_records()
  // A run this monitor's work belongs to: every event sinks receive carries the tag run=NAME,
  // and sinks get the run's report at start() and again, with its end, at stop().
  std::string run = {};
};

class Monitor {
 public:
  using Sink = std::function<void(const std::vector<Event>&)>;

  explicit Monitor(MonitorConfig config = {});
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // Starts the drain thread; records made before start() are kept and drained then.
  void start();
  // Drains what is left, then stops the drain thread. Idempotent.
  void stop();
  // Sinks receive every drained batch, on the drain thread. Add before start().
  void add_sink(Sink sink);

  // --- hot path ---
  void begin_kernel(std::string_view name);
  // Ends the innermost open kernel of that name on this thread (false if none is open).
  bool end_kernel(std::string_view name);

  // Times its own lifetime as one kernel execution.
  class ScopedKernel {
   public:
    ScopedKernel(Monitor& m, std::string_view name) : m_(m), name_(m.names_.id_of(name)), start_(TickClock::now()) {}
    ~ScopedKernel() { m_.push_kernel(name_, kNoVariant, start_, TickClock::now()); }
    ScopedKernel(const ScopedKernel&) = delete;
    ScopedKernel& operator=(const ScopedKernel&) = delete;

   private:
    Monitor& m_;
    NameTable::Id name_;
    TickClock::Ticks start_;
  };

  void track_allocation(const void* ptr, std::size_t size, MemoryKind kind, std::string_view tag = {});
  void track_deallocation(const void* ptr);

  // Times `iterations` calls of fn, each recorded as a kernel named `test` with that
  // variant (tags test=…, variant=…), ready for an A/B comparison.
  template <typename Fn>
  void run_variant(std::string_view test, std::string_view variant, Fn&& fn, int iterations) {
    const NameTable::Id test_id = names_.id_of(test), variant_id = names_.id_of(variant);
    for (int i = 0; i < iterations; ++i) {
      const TickClock::Ticks start = TickClock::now();
      fn();
      push_kernel(test_id, variant_id, start, TickClock::now());
    }
  }

  // --- A/B tests (the design documents' StartABTest / RecordVariant / GetABTestResults) ---
  // Names the test that record_variant() adds to.
  void start_ab_test(std::string_view test);
  // Times `iterations` calls of fn as the variant of the current test (run_variant).
  template <typename Fn>
  void record_variant(std::string_view variant, Fn&& fn, int iterations = 1) {
    run_variant(current_test(), variant, std::forward<Fn>(fn), iterations);
  }
  struct VariantComparison {
    std::string control, variant;
    analysis::AbResult result;
  };
  // Each variant of a test against the first one recorded; p-values adjusted together
  // (Benjamini–Hochberg) when there are more than two variants.
  std::vector<VariantComparison> ab_test_results(std::string_view test, const analysis::AbOptions& options = {});
  // Recorded durations of two kernels compared, a as the baseline.
  analysis::AbResult compare_kernels(std::string_view a, std::string_view b, const analysis::AbOptions& options = {});

  // --- whole records (copied; a lock, for rarer events). An inference without ts_ns is
  // stamped with the time of the call. ---
  Status record_kernel(KernelEvent event);
  Status record_inference(InferenceEvent event);
  Status record_command_buffer(CommandBufferEvent event);

  // --- queries (drain first, so they see everything recorded before the call) ---
  MemoryStatistics memory_statistics();
  std::vector<KernelEvent> kernel_records(std::string_view name);
  std::vector<std::string> kernel_names();
  std::uint64_t dropped_records() const;
  std::uint64_t drained_events() const { return drained_events_.load(std::memory_order_relaxed); }
  const MonitorConfig& config() const { return config_; }

  // Moves everything recorded so far into events now (also what the drain thread does).
  void drain();

 private:
  // The run report (config_.run) to every sink: started at `start_ns`, or ended now as well.
  void report_run(TimestampNs start_ns, bool ended);
  enum class RecordType : std::uint8_t { kKernel, kAlloc, kFree };
  struct Record {
    RecordType type;
    MemoryKind kind;
    NameTable::Id name;     // kernel name or allocation tag
    NameTable::Id variant;  // kNoVariant when none
    TickClock::Ticks start;  // raw ticks; converted to ns when drained
    TickClock::Ticks end;
    std::uintptr_t address;
    std::uint64_t size;
  };
  struct ThreadState;
  static constexpr NameTable::Id kNoVariant = ~NameTable::Id{0};

  ThreadState& thread_state();
  void push(const Record& r);
  void push(ThreadState& t, const Record& r);
  void push_kernel(NameTable::Id name, NameTable::Id variant, TickClock::Ticks start, TickClock::Ticks end);
  void run();
  void make_room(ThreadState& t, const Record& r);
  KernelEvent to_kernel_event(const Record& r) const;
  std::string current_test() const;

  const MonitorConfig config_;
  const std::uint64_t uid_;
  NameTable names_;
  TickClock clock_;  // recalibrated under drain_mu_
  MemoryTracker memory_;
  std::vector<Sink> sinks_;

  mutable std::mutex threads_mu_;
  std::vector<std::shared_ptr<ThreadState>> threads_;  // guarded by threads_mu_

  std::mutex pending_mu_;
  std::vector<Event> pending_;  // whole records, guarded by pending_mu_

  mutable std::mutex test_mu_;
  std::string current_test_ = "ab_test";  // guarded by test_mu_

  mutable std::mutex drain_mu_;  // one drain at a time; guards what follows
  std::map<NameTable::Id, std::deque<Record>> kernels_;  // kept compact (times in ns); events built on query
  std::uint64_t retired_dropped_ = 0;

  std::atomic<std::uint64_t> drained_events_{0};
  std::mutex run_mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by run_mu_
  TimestampNs run_start_ns_ = 0;  // guarded by run_mu_; when config_.run began
  std::atomic<bool> running_{false};
  std::atomic<bool> drain_requested_{false};
  std::mutex room_mu_;               // producers waiting for room in a full ring
  std::condition_variable room_;
  std::uint64_t drain_passes_ = 0;   // guarded by room_mu_
  std::thread thread_;
};

// MonitorManager: one Monitor per device and an aggregated view across them.
// Thread-safety: every method is safe from any thread.
class MonitorManager {
 public:
  explicit MonitorManager(MonitorConfig defaults = {}) : defaults_(std::move(defaults)) {}
  // The device's monitor, created (and started) on first use.
  Monitor& monitor(const std::string& device);
  std::vector<std::string> devices() const;
  // Sums over every device.
  MemoryStatistics memory_statistics();
  std::vector<KernelEvent> kernel_records(std::string_view name);
  void stop_all();

 private:
  MonitorConfig defaults_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Monitor>> monitors_;
};

}  // namespace perfscope
