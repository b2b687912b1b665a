// libperfscope_cupti.so: the CUPTI injection library. The CUDA driver loads it from
// CUDA_INJECTION64_PATH during cuInit and calls InitializeInjection(); from then on CUPTI's
// activity records are drained on CUPTI's own thread, copied into plain records (records are
// packed: fields are read by value, never through references) and handed to a TraceSink,
// whose thread converts and sends them. At exit, a forced flush hands over what CUPTI still
// holds, so a short program loses nothing. With a duty cycle, the sink's thread enables the
// activity kinds (and launch callbacks) when a window opens, and when it closes flushes and
// detaches CUPTI from the process until the next one.
//
// No CUPTI is linked: the one the program can use is found and loaded at start
// (cupti_library.hpp), through the declarations of cupti_api.hpp, so this library builds where
// no CUDA toolkit is installed and traces a program with the CUPTI its own CUDA came with.
//
// Only InitializeInjection is exported; everything else is hidden so that nothing here can
// clash with the traced program's own libraries.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "server/trace/cupti_api_filter.hpp"
#include "server/trace/injection.hpp"
#include "server/trace/cupti_library.hpp"
#include "server/trace/trace_sink.hpp"

namespace perfscope::trace {
namespace {

using cupti::ApiActivity;
using cupti::KernelActivity;
using cupti::MemcpyActivity;
using cupti::MemoryActivity;
using cupti::MemsetActivity;

// The CUPTI in use: set once in InitializeInjection, before anything calls it.
cupti::Api g_cupti;

constexpr std::size_t kBufferBytes = 4 << 20;  // ~26k records of ~160 bytes

// Set once in InitializeInjection, closed at exit. Atomic: the sink's thread may open a
// duty cycle's first window before InitializeInjection has stored it.
std::atomic<TraceSink*> g_sink = nullptr;

TraceSink& sink() {
  TraceSink* s = nullptr;
  while (!(s = g_sink.load(std::memory_order_acquire))) std::this_thread::yield();
  return *s;
}
std::once_flag g_exit_once;

// The activity kinds the run asked for, in the order they are enabled.
struct Kind {
  bool on;
  cupti::ActivityKind kind;
  const char* name;
};
std::vector<Kind> g_kinds;  // set once in InitializeInjection
// The runtime and driver functions that start no GPU work: their calls are not recorded.
std::vector<cupti::CallbackId> g_runtime_quiet, g_driver_quiet;  // set once in InitializeInjection

// Kernel names by CUPTI's pointer: CUPTI shares one name string among all records of a kernel,
// so a record costs a lookup, not a copy. Cleared when CUPTI detaches (its strings may go).
// Never destroyed: CUPTI's thread may complete a buffer while the process runs its exit handlers.
std::mutex g_names_mu;
auto& g_names = *new std::unordered_map<const char*, KernelName>;  // guarded by g_names_mu

// Launch calls recorded by callbacks (the `launch` kind), collected from the launching
// threads and handed to the sink with the next drained buffer.
cupti::SubscriberHandle g_subscriber = nullptr;
std::mutex g_launches_mu;
std::vector<TraceRecord> g_launches;  // guarded by g_launches_mu
thread_local std::uint64_t t_enter_ns[2];  // per domain: a runtime launch calls the driver's
thread_local std::uint32_t t_thread_id = 0;

// The launch calls, by CUPTI's names: the runtime's first, then the driver's (Triton and other
// driver-API users). Their ids are looked up in the CUPTI loaded.
constexpr const char* kRuntimeLaunchNames[] = {
    "cudaLaunchKernel_v7000",           "cudaLaunchKernel_ptsz_v7000",
    "cudaLaunchKernelExC_v11060",       "cudaLaunchKernelExC_ptsz_v11060",
    "cudaLaunchCooperativeKernel_v9000", "cudaLaunchCooperativeKernel_ptsz_v9000",
    "cudaGraphLaunch_v10000",           "cudaGraphLaunch_ptsz_v10000",
};
constexpr const char* kDriverLaunchNames[] = {
    "cuLaunchKernel",           "cuLaunchKernel_ptsz",           "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
    "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch",    "cuGraphLaunch_ptsz",
};
std::vector<cupti::CallbackId> g_runtime_launches, g_driver_launches;  // set once in InitializeInjection

// The ids of `names` this CUPTI knows.
template <std::size_t N>
std::vector<cupti::CallbackId> launch_ids(cupti::CallbackDomain domain, const char* const (&names)[N]) {
  const auto ids = callback_ids(g_cupti, domain);
  std::vector<cupti::CallbackId> out;
  for (const char* name : names) {
    if (auto it = ids.find(name); it != ids.end()) out.push_back(it->second);
  }
  return out;
}

std::uint32_t thread_id() {
  if (t_thread_id == 0) t_thread_id = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  return t_thread_id;
}

// The launch calls collected since the last hand-over go to the sink.
void hand_over_launches() {
  std::lock_guard lock(g_launches_mu);
  if (!g_launches.empty()) sink().push(std::exchange(g_launches, {}));
}

void report(const char* what, cupti::Result result) {
  const char* text = nullptr;
  g_cupti.get_result_string(result, &text);
  std::fprintf(stderr, "perfscope: %s: %s\n", what, text ? text : "unknown CUPTI error");
}

void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

// Called with g_names_mu held.
TraceRecord kernel_record(const KernelActivity* k) {
  KernelRecord r;
  auto [name, added] = g_names.try_emplace(k->name);
  if (added && k->name) name->second = KernelName(k->name);
  r.name = name->second;
  r.correlation_id = k->correlation_id;
  r.device = k->device_id;
  r.stream = k->stream_id;
  r.start_ns = k->start;
  r.end_ns = k->end;
  r.grid = {k->grid_x, k->grid_y, k->grid_z};
  r.block = {k->block_x, k->block_y, k->block_z};
  r.registers_per_thread = k->registers_per_thread;
  r.static_shared_bytes = static_cast<std::uint32_t>(k->static_shared_memory);
  r.dynamic_shared_bytes = static_cast<std::uint32_t>(k->dynamic_shared_memory);
  return r;
}

void buffer_completed(cupti::Context context, uint32_t stream_id, uint8_t* buffer, size_t /*size*/,
                      size_t valid_size) {
  std::vector<TraceRecord> records;
  records.reserve(valid_size / 160 + 1);
  cupti::Activity* record = nullptr;
  std::unique_lock names_lock(g_names_mu);  // buffers complete on CUPTI's thread and on a forced flush's
  while (g_cupti.activity_get_next_record(buffer, valid_size, &record) == cupti::kSuccess) {
    switch (record->kind) {
      case cupti::kKindConcurrentKernel:
        records.push_back(kernel_record(reinterpret_cast<const KernelActivity*>(record)));
        break;
      case cupti::kKindMemcpy: {
        const auto* m = reinterpret_cast<const MemcpyActivity*>(record);
        records.push_back(CopyRecord{false, m->copy_kind, m->src_kind, m->dst_kind, m->bytes, m->correlation_id,
                                     m->device_id, m->stream_id, m->start, m->end});
        break;
      }
      case cupti::kKindMemset: {
        const auto* m = reinterpret_cast<const MemsetActivity*>(record);
        records.push_back(CopyRecord{true, 0, m->memory_kind, m->memory_kind, m->bytes, m->correlation_id,
                                     m->device_id, m->stream_id, m->start, m->end});
        break;
      }
      case cupti::kKindRuntime:
      case cupti::kKindDriver: {
        const auto* a = reinterpret_cast<const ApiActivity*>(record);
        records.push_back(ApiRecord{a->correlation_id, a->cbid, a->start, a->end, a->thread_id});
        break;
      }
      case cupti::kKindMemory2: {
        const auto* m = reinterpret_cast<const MemoryActivity*>(record);
        const std::uint32_t op = m->memory_operation_type;
        if (op != cupti::kMemoryOperationAllocation && op != cupti::kMemoryOperationRelease) break;
        records.push_back(MemoryRecord{op == cupti::kMemoryOperationAllocation, m->address, m->bytes, m->timestamp,
                                       m->device_id, m->memory_kind});
        break;
      }
      default:
        break;
    }
  }
  names_lock.unlock();
  size_t dropped = 0;
  if (g_cupti.activity_get_num_dropped_records(context, stream_id, &dropped) == cupti::kSuccess) {
    sink().add_cupti_dropped(dropped);
  }
  std::free(buffer);
  hand_over_launches();  // first: the converter matches either order, but this one needs no waiting
  sink().push(std::move(records));
}

// On the launching thread, at entry and exit of each subscribed launch call: two timestamps
// and, at exit, one record appended under an uncontended lock.
void launch_callback(void*, cupti::CallbackDomain domain, cupti::CallbackId cbid, const void* data) {
  const auto* info = static_cast<const cupti::CallbackData*>(data);
  std::uint64_t now = 0;
  g_cupti.get_timestamp(&now);
  const int slot = domain == cupti::kDomainDriverApi ? 1 : 0;
  if (info->callback_site == cupti::kApiEnter) {
    t_enter_ns[slot] = now;
    return;
  }
  const std::uint32_t tid = thread_id();
  std::lock_guard lock(g_launches_mu);
  g_launches.push_back(ApiRecord{info->correlation_id, cbid, t_enter_ns[slot], now, tid});
}

// Attaches CUPTI with the run's activity kinds (and launch callbacks): once at start, or at
// each window of a duty cycle. Between windows CUPTI is detached altogether (cuptiFinalize):
// with its kinds merely disabled, an attached CUPTI still costs every launch a good part of
// what tracing does (measured: bench/RESULTS.md, "Kernel tracing on launch-bound work").
std::mutex g_tracing_mu;
bool g_attached = false;  // guarded by g_tracing_mu
// g_attached for NCCL's threads, which must not call CUPTI while it is detached (a call would
// attach it again) and take no lock on their hot path.
std::atomic<bool> g_attached_now = false;
bool g_exiting = false;   // guarded by g_tracing_mu: at_exit has flushed; nothing attaches again

void attach() {
  if (cupti::Result r = g_cupti.activity_register_callbacks(buffer_requested, buffer_completed);
      r != cupti::kSuccess) {
    report("cuptiActivityRegisterCallbacks", r);
    return;
  }
  if (!g_runtime_launches.empty() || !g_driver_launches.empty()) {
    if (cupti::Result r = g_cupti.subscribe(&g_subscriber, launch_callback, nullptr); r != cupti::kSuccess) {
      report("subscribing to launch callbacks", r);
      g_subscriber = nullptr;
    }
  }
  if (g_subscriber) {
    for (cupti::CallbackId id : g_runtime_launches) g_cupti.enable_callback(1, g_subscriber, cupti::kDomainRuntimeApi, id);
    for (cupti::CallbackId id : g_driver_launches) g_cupti.enable_callback(1, g_subscriber, cupti::kDomainDriverApi, id);
  }
  for (const Kind& k : g_kinds) {
    if (!k.on) continue;
    if (cupti::Result r = g_cupti.activity_enable(k.kind); r != cupti::kSuccess) {
      std::string what = std::string("enabling ") + k.name + " activity";
      report(what.c_str(), r);
      continue;
    }
    // Only the calls that start GPU work are recorded (after every enable: enabling forgets).
    if (k.kind != cupti::kKindRuntime && k.kind != cupti::kKindDriver) continue;
    const auto& quiet = k.kind == cupti::kKindRuntime ? g_runtime_quiet : g_driver_quiet;
    if (!quiet.empty() && record_only_gpu_work(g_cupti, k.kind, quiet) == 0) {
      static std::once_flag said;
      std::call_once(said, [&] {
        std::fprintf(stderr, "perfscope: this CUPTI cannot switch single functions off: every %s call is recorded\n",
                     k.name);
      });
    }
  }
  g_attached = true;
  g_attached_now.store(true, std::memory_order_release);
}

// The window's records are handed over first (a forced flush), then CUPTI lets go.
void detach() {
  g_attached_now.store(false, std::memory_order_release);
  for (const Kind& k : g_kinds) {
    if (k.on) g_cupti.activity_disable(k.kind);
  }
  if (g_subscriber) {
    g_cupti.unsubscribe(g_subscriber);
    g_subscriber = nullptr;
  }
  g_cupti.activity_flush_all(cupti::kFlushForced);
  if (cupti::Result r = g_cupti.finalize(); r != cupti::kSuccess) report("detaching CUPTI between windows", r);
  {
    std::lock_guard lock(g_names_mu);
    g_names.clear();
  }
  g_attached = false;
}

// A duty cycle's window opens or closes (on the sink's thread).
void set_window(bool open) {
  std::lock_guard lock(g_tracing_mu);
  if (g_exiting || open == g_attached) return;
  if (open) {
    attach();
  } else {
    detach();
  }
}

void at_exit() {
  std::call_once(g_exit_once, [] {
    {
      std::lock_guard lock(g_tracing_mu);
      g_exiting = true;
      // Detached (between two windows), there is nothing to flush, and a CUPTI call would attach it.
      if (g_attached) g_cupti.activity_flush_all(cupti::kFlushForced);
    }
    hand_over_launches();
    sink().close();
    TraceSinkStats s = sink().stats();
    if (s.records_dropped || s.cupti_dropped || s.events_lost) {
      std::fprintf(stderr,
                   "perfscope: %llu records dropped by the queue, %llu by CUPTI, %llu events not delivered\n",
                   static_cast<unsigned long long>(s.records_dropped), static_cast<unsigned long long>(s.cupti_dropped),
                   static_cast<unsigned long long>(s.events_lost));
    }
  });
}

int initialize() {
  auto options = sink_options_from_environment();
  if (!options.ok()) {
    std::fprintf(stderr, "perfscope: tracing off: %s\n", options.status().message().c_str());
    return 1;
  }
  auto cupti_library = load_cupti(cupti_candidates(cupti_search_from_process()));
  if (!cupti_library.ok()) {
    std::fprintf(stderr, "perfscope: tracing off: %s\n", cupti_library.status().message().c_str());
    return 1;
  }
  g_cupti = cupti_library->api;
  // One line per process: which CUPTI traces it is the first question when records look wrong.
  std::fprintf(stderr, "perfscope: tracing with CUPTI %s, %s (%s)\n", cupti_version_name(cupti_library->version).c_str(),
               std::string(cupti_origin_name(cupti_library->origin)).c_str(), cupti_library->path.c_str());
  options->on_tick = [] {
    std::lock_guard lock(g_tracing_mu);
    if (g_attached) g_cupti.activity_flush_all(0);  // detached, a CUPTI call would attach it again
  };
  options->on_window = [](bool open) { set_window(open); };
  const TraceKinds kinds = options->kinds;
  // Everything is set up before the sink opens: its thread may open a duty cycle's window.
  const bool duty_cycled = options->schedule.duty_cycled();
  // Never CUPTI_ACTIVITY_KIND_KERNEL: it serializes kernels.
  g_kinds = {
      {kinds.kernel, cupti::kKindConcurrentKernel, "kernel"},
      {kinds.memcpy, cupti::kKindMemcpy, "memcpy"},
      {kinds.memset, cupti::kKindMemset, "memset"},
      {kinds.runtime, cupti::kKindRuntime, "runtime"},
      {kinds.driver, cupti::kKindDriver, "driver"},
      {kinds.memory, cupti::kKindMemory2, "memory"},
  };
  // Not in a duty cycle: switching single functions off, then detaching and attaching CUPTI
  // window after window, corrupted the heap of 2 of 10 processes on the H100's driver (the bare
  // floor library as well as this one; bench/RESULTS.md). A window records every call instead.
  if (kinds.runtime && !duty_cycled) g_runtime_quiet = calls_without_gpu_work(g_cupti, cupti::kDomainRuntimeApi);
  if (kinds.driver && !duty_cycled) g_driver_quiet = calls_without_gpu_work(g_cupti, cupti::kDomainDriverApi);
  // Launch callbacks for the domains whose launch calls are not already activity records.
  if (kinds.launch && !kinds.runtime) g_runtime_launches = launch_ids(cupti::kDomainRuntimeApi, kRuntimeLaunchNames);
  // The driver's launches get callbacks with the driver kind on as well: NCCL launches through
  // the driver, and its descriptions of collectives are tied to the call on the launching
  // thread (thread ids as gettid gives them, in order), which activity records do not give.
  if ((kinds.launch && !kinds.driver) || kinds.driver) g_driver_launches = launch_ids(cupti::kDomainDriverApi, kDriverLaunchNames);
  auto opened = TraceSink::open(std::move(*options));
  if (!opened.ok()) {
    std::fprintf(stderr, "perfscope: tracing off: %s\n", opened.status().message().c_str());
    return 1;
  }
  g_sink.store(opened->release(), std::memory_order_release);  // lives until the process ends; closed by at_exit
  // A duty cycle's windows are opened by the sink's thread; otherwise everything is on now.
  if (!duty_cycled) {
    std::lock_guard lock(g_tracing_mu);
    attach();
    if (!g_attached) return 1;
  }
  std::atexit(at_exit);
  return 1;
}

}  // namespace

bool tracing_started() { return g_sink.load(std::memory_order_acquire) != nullptr; }

std::optional<std::uint64_t> attached_timestamp() {
  if (!g_attached_now.load(std::memory_order_acquire)) return std::nullopt;  // detached: no lock, no call
  std::lock_guard lock(g_tracing_mu);  // not while a window closes
  if (!g_attached) return std::nullopt;
  std::uint64_t now = 0;
  g_cupti.get_timestamp(&now);
  return now;
}

std::uint32_t trace_thread_id() { return thread_id(); }

void queue_with_launches(TraceRecord record) {
  std::lock_guard lock(g_launches_mu);
  g_launches.push_back(std::move(record));
}

}  // namespace perfscope::trace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  return perfscope::trace::initialize();
}
