#include "engine/sdk/monitor.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "engine/sdk/record_ring.hpp"

namespace perfscope {

namespace {
std::atomic<std::uint64_t> next_monitor_uid{1};
constexpr std::size_t kMaxOpenKernels = 64;  // begin/end nesting depth per thread
}  // namespace

struct Monitor::ThreadState {
  explicit ThreadState(std::size_t capacity) : ring(capacity) {}
  RecordRing<Record> ring;
  std::atomic<std::uint64_t> dropped{0};
  // Open begin_kernel calls of this thread, innermost last. Producer thread only.
  struct Open {
    NameTable::Id id;
    TickClock::Ticks start;
    const char* name_data;  // the caller's name as passed to begin: end usually passes the same
    std::size_t name_size;
  };
  std::array<Open, kMaxOpenKernels> open{};
  std::size_t depth = 0;
};

Monitor::Monitor(MonitorConfig config) : config_(std::move(config)), uid_(next_monitor_uid.fetch_add(1)) {
  if (config_.ring_capacity == 0 || (config_.ring_capacity & (config_.ring_capacity - 1)) != 0) {
    throw std::invalid_argument("Monitor ring_capacity must be a power of two");
  }
}

Monitor::~Monitor() { stop(); }

void Monitor::add_sink(Sink sink) { sinks_.push_back(std::move(sink)); }

void Monitor::report_run(TimestampNs start_ns, bool ended) {
  if (config_.run.empty()) return;
  RunEvent run;
  run.name = config_.run;
  run.pids = {static_cast<std::int64_t>(::getpid())};
  run.start_ns = start_ns;
  if (ended) run.end_ns = std::max(now_ns(), start_ns);
  const std::vector<Event> report{run};
  for (const Sink& sink : sinks_) sink(report);
}

void Monitor::start() {
  std::lock_guard lock(run_mu_);
  if (thread_.joinable()) return;
  if (run_start_ns_ == 0) {
    run_start_ns_ = now_ns();
    report_run(run_start_ns_, false);
  }
  stopping_ = false;
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void Monitor::stop() {
  TimestampNs run_start = 0;
  {
    std::lock_guard lock(run_mu_);
    stopping_ = true;
    run_start = run_start_ns_;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  const bool was_running = running_.exchange(false);
  drain();  // whatever was recorded after the thread's last pass
  if (was_running) report_run(run_start, true);
}

void Monitor::run() {
  std::unique_lock lock(run_mu_);
  while (!stopping_) {
    wake_.wait_for(lock, config_.drain_interval, [this] { return stopping_ || drain_requested_.load(); });
    drain_requested_ = false;
    lock.unlock();
    drain();
    lock.lock();
  }
}

Monitor::ThreadState& Monitor::thread_state() {
  // Per thread: the state last used (almost always this monitor's), then a search by uid.
  thread_local std::pair<std::uint64_t, ThreadState*> last{0, nullptr};
  if (last.first == uid_) return *last.second;
  thread_local std::vector<std::pair<std::uint64_t, std::shared_ptr<ThreadState>>> states;
  for (auto& [uid, state] : states) {
    if (uid == uid_) {
      last = {uid, state.get()};
      return *state;
    }
  }
  auto state = std::make_shared<ThreadState>(config_.ring_capacity);  // warm-up: once per thread
  {
    std::lock_guard lock(threads_mu_);
    threads_.push_back(state);
  }
  states.emplace_back(uid_, state);
  last = {uid_, state.get()};
  return *state;
}

void Monitor::push(const Record& r) { push(thread_state(), r); }

void Monitor::push(ThreadState& t, const Record& r) {
  if (!t.ring.push(r)) make_room(t, r);
}

// The slow path, taken only when the drain has fallen a whole ring behind this thread.
void Monitor::make_room(ThreadState& t, const Record& r) {
  if (config_.overflow == OverflowPolicy::kDrop) {
    t.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  while (!t.ring.push(r)) {
    if (!running_.load()) {
      drain();  // no drain thread (not started, or stopped): make room ourselves
      continue;
    }
    // Sleep until a drain pass completes rather than spin: the drain needs the CPU.
    std::unique_lock lock(room_mu_);
    const std::uint64_t seen = drain_passes_;
    drain_requested_ = true;
    wake_.notify_one();
    room_.wait_for(lock, std::chrono::milliseconds(1), [&] { return drain_passes_ != seen; });
  }
}

void Monitor::push_kernel(NameTable::Id name, NameTable::Id variant, TickClock::Ticks start, TickClock::Ticks end) {
  push(Record{RecordType::kKernel, MemoryKind::kDevice, name, variant, start, end, 0, 0});
}

void Monitor::begin_kernel(std::string_view name) {
  ThreadState& t = thread_state();
  if (t.depth == kMaxOpenKernels) return;  // unbalanced use: deeper begins are ignored
  t.open[t.depth++] = {names_.id_of(name), TickClock::now(), name.data(), name.size()};
}

bool Monitor::end_kernel(std::string_view name) {
  const TickClock::Ticks end = TickClock::now();
  ThreadState& t = thread_state();
  if (t.depth == 0) return false;
  // Fast path: the innermost kernel, ended with the very string it was begun with.
  const ThreadState::Open& top = t.open[t.depth - 1];
  if (top.name_data == name.data() && top.name_size == name.size()) {
    --t.depth;
    push(t, Record{RecordType::kKernel, MemoryKind::kDevice, top.id, kNoVariant, top.start, end, 0, 0});
    return true;
  }
  const NameTable::Id id = names_.id_of(name);
  for (std::size_t i = t.depth; i-- > 0;) {
    if (t.open[i].id != id) continue;
    // Kernels opened inside this one and never ended are abandoned with it.
    t.depth = i;
    push(t, Record{RecordType::kKernel, MemoryKind::kDevice, id, kNoVariant, t.open[i].start, end, 0, 0});
    return true;
  }
  return false;
}

void Monitor::track_allocation(const void* ptr, std::size_t size, MemoryKind kind, std::string_view tag) {
  push(Record{RecordType::kAlloc, kind, names_.id_of(tag), kNoVariant, TickClock::now(), 0,
              reinterpret_cast<std::uintptr_t>(ptr), size});
}

void Monitor::track_deallocation(const void* ptr) {
  push(Record{RecordType::kFree, MemoryKind::kDevice, names_.id_of(""), kNoVariant, TickClock::now(), 0,
              reinterpret_cast<std::uintptr_t>(ptr), 0});
}

Status Monitor::record_kernel(KernelEvent event) {
  if (Status s = validate(event); !s.ok()) return s;
  std::lock_guard lock(pending_mu_);
  pending_.emplace_back(std::move(event));
  return Status();
}

Status Monitor::record_inference(InferenceEvent event) {
  if (event.ts_ns == 0) event.ts_ns = now_ns();  // completion time not given: now
  if (Status s = validate(event); !s.ok()) return s;
  std::lock_guard lock(pending_mu_);
  pending_.emplace_back(std::move(event));
  return Status();
}

Status Monitor::record_command_buffer(CommandBufferEvent event) {
  if (Status s = validate(event); !s.ok()) return s;
  std::lock_guard lock(pending_mu_);
  pending_.emplace_back(std::move(event));
  return Status();
}

KernelEvent Monitor::to_kernel_event(const Record& r) const {
  KernelEvent k;
  k.name = names_.name(r.name);
  k.device = config_.device;
  k.start_ns = r.start;
  k.end_ns = r.end;
  if (r.variant != kNoVariant) {
    k.variant = names_.name(r.variant);
    k.tags = {{"test", k.name}, {"variant", k.variant}};
  }
  return k;
}

void Monitor::drain() {
  std::lock_guard drain_lock(drain_mu_);
  std::vector<std::shared_ptr<ThreadState>> threads;
  {
    std::lock_guard lock(threads_mu_);
    threads = threads_;
  }
  clock_.recalibrate();
  std::vector<Record> records;
  for (const auto& t : threads) {
    t->ring.drain([&](Record r) {
      r.start = clock_.to_ns(r.start);
      if (r.type == RecordType::kKernel) r.end = clock_.to_ns(r.end);
      records.push_back(r);
    });
  }
  // Threads interleave: order by time so a free drained from one thread never precedes the
  // allocation another thread made before it (kernels alone need no order).
  if (std::any_of(records.begin(), records.end(), [](const Record& r) { return r.type != RecordType::kKernel; })) {
    std::stable_sort(records.begin(), records.end(),
                     [](const Record& a, const Record& b) { return a.start < b.start; });
  }

  const bool build_events = !sinks_.empty();
  std::vector<Event> events;
  if (build_events) events.reserve(records.size());
  char address[2 + 16 + 1];
  std::deque<Record>* kept = nullptr;  // runs of one kernel name are common: skip the lookup
  NameTable::Id kept_id = 0;
  for (const Record& r : records) {
    if (r.type == RecordType::kKernel) {
      if (!kept || kept_id != r.name) {
        kept = &kernels_[r.name];
        kept_id = r.name;
      }
      kept->push_back(r);
      if (kept->size() > config_.kept_records_per_kernel) kept->pop_front();
      if (build_events) events.emplace_back(to_kernel_event(r));
      continue;
    }
    MemoryEvent m;
    m.op = r.type == RecordType::kAlloc ? MemoryOp::kAlloc : MemoryOp::kFree;
    std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(r.address));
    m.address = address;
    m.size_bytes = r.size;
    m.kind = r.kind;
    m.tag = names_.name(r.name);
    m.device = config_.device;
    m.ts_ns = r.start;
    memory_.apply(m);  // a free learns its size and kind here
    if (build_events) events.emplace_back(std::move(m));
  }
  std::vector<Event> whole;
  {
    std::lock_guard lock(pending_mu_);
    whole.swap(pending_);
  }
  for (Event& e : whole) {
    if (const auto* k = std::get_if<KernelEvent>(&e)) {
      // Whole records keep only what the compact form holds; their full form goes to sinks.
      auto& whole_kept = kernels_[names_.id_of(k->name)];
      whole_kept.push_back(Record{RecordType::kKernel, MemoryKind::kDevice, names_.id_of(k->name),
                            k->variant.empty() ? kNoVariant : names_.id_of(k->variant), k->start_ns, k->end_ns, 0, 0});
      if (whole_kept.size() > config_.kept_records_per_kernel) whole_kept.pop_front();
    }
    if (build_events) events.push_back(std::move(e));
  }
  // Forget threads that have exited once their ring is empty.
  {
    std::lock_guard lock(threads_mu_);
    std::erase_if(threads_, [&](const std::shared_ptr<ThreadState>& t) {
      // Only states this pass drained: a thread that registered after the copy above was
      // taken holds just two references too (ours and its own) and must not be mistaken
      // for one that has exited.
      if (std::find(threads.begin(), threads.end(), t) == threads.end()) return false;
      if (t.use_count() > 2) return false;  // ours and the copy above: the thread's is gone
      if (!t->ring.empty()) return false;   // it pushed after we drained: next pass
      retired_dropped_ += t->dropped.load();
      return true;
    });
  }
  {
    std::lock_guard lock(room_mu_);
    ++drain_passes_;
  }
  room_.notify_all();
  const std::size_t n = records.size() + whole.size();
  if (n == 0) return;
  drained_events_.fetch_add(n, std::memory_order_relaxed);
  if (!config_.run.empty()) {
    for (Event& e : events) {
      std::visit(
          [&](auto& x) {
            if constexpr (requires { x.tags; }) {
              if (tag_value(x.tags, "run").empty()) {
                x.tags.emplace_back("run", config_.run);
                sort_labels(x.tags);
              }
            }
          },
          e);
    }
  }
  for (const Sink& sink : sinks_) sink(events);
}

MemoryStatistics Monitor::memory_statistics() {
  drain();
  return memory_.statistics();
}

std::vector<KernelEvent> Monitor::kernel_records(std::string_view name) {
  drain();
  const NameTable::Id id = names_.id_of(name);
  std::lock_guard lock(drain_mu_);
  auto it = kernels_.find(id);
  if (it == kernels_.end()) return {};
  std::vector<KernelEvent> out;
  out.reserve(it->second.size());
  for (const Record& r : it->second) out.push_back(to_kernel_event(r));
  return out;
}

void Monitor::start_ab_test(std::string_view test) {
  std::lock_guard lock(test_mu_);
  current_test_ = std::string(test);
}

std::string Monitor::current_test() const {
  std::lock_guard lock(test_mu_);
  return current_test_;
}

namespace {
std::vector<double> durations_ms(const std::vector<KernelEvent>& records) {
  std::vector<double> out;
  out.reserve(records.size());
  for (const KernelEvent& e : records) out.push_back(e.duration_ms());
  return out;
}
}  // namespace

std::vector<Monitor::VariantComparison> Monitor::ab_test_results(std::string_view test,
                                                                 const analysis::AbOptions& options) {
  // Variants in the order they were first recorded; the first is the control.
  std::vector<std::pair<std::string, std::vector<double>>> variants;
  for (const KernelEvent& e : kernel_records(test)) {
    if (e.variant.empty()) continue;
    auto it = std::find_if(variants.begin(), variants.end(), [&](const auto& v) { return v.first == e.variant; });
    if (it == variants.end()) it = variants.insert(variants.end(), {e.variant, {}});
    it->second.push_back(e.duration_ms());
  }
  std::vector<VariantComparison> out;
  if (variants.size() < 2) return out;
  std::vector<double> p;
  for (std::size_t i = 1; i < variants.size(); ++i) {
    out.push_back({variants[0].first, variants[i].first, analysis::compare(variants[0].second, variants[i].second, options)});
    p.push_back(out.back().result.mann_whitney.p_value);
  }
  if (out.size() > 1) {
    auto adjusted = analysis::benjamini_hochberg(p);
    for (std::size_t i = 0; i < out.size(); ++i) analysis::decide(out[i].result, options, adjusted[i]);
  }
  return out;
}

analysis::AbResult Monitor::compare_kernels(std::string_view a, std::string_view b, const analysis::AbOptions& options) {
  return analysis::compare(durations_ms(kernel_records(a)), durations_ms(kernel_records(b)), options);
}

std::vector<std::string> Monitor::kernel_names() {
  drain();
  std::lock_guard lock(drain_mu_);
  std::vector<std::string> out;
  for (const auto& [id, records] : kernels_) out.push_back(names_.name(id));
  return out;
}

std::uint64_t Monitor::dropped_records() const {
  std::uint64_t n = 0;
  {
    std::lock_guard lock(threads_mu_);
    for (const auto& t : threads_) n += t->dropped.load();
  }
  std::lock_guard lock(drain_mu_);
  return n + retired_dropped_;
}

Monitor& MonitorManager::monitor(const std::string& device) {
  std::lock_guard lock(mu_);
  auto& m = monitors_[device];
  if (!m) {
    MonitorConfig config = defaults_;
    config.device = device;
    m = std::make_unique<Monitor>(config);
    m->start();
  }
  return *m;
}

std::vector<std::string> MonitorManager::devices() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [d, m] : monitors_) out.push_back(d);
  return out;
}

MemoryStatistics MonitorManager::memory_statistics() {
  std::lock_guard lock(mu_);
  MemoryStatistics total;
  for (auto& [device, m] : monitors_) merge_into(total, m->memory_statistics());
  return total;
}

std::vector<KernelEvent> MonitorManager::kernel_records(std::string_view name) {
  std::lock_guard lock(mu_);
  std::vector<KernelEvent> out;
  for (auto& [device, m] : monitors_) {
    auto records = m->kernel_records(name);
    out.insert(out.end(), records.begin(), records.end());
  }
  return out;
}

void MonitorManager::stop_all() {
  std::lock_guard lock(mu_);
  for (auto& [device, m] : monitors_) m->stop();
}

}  // namespace perfscope
