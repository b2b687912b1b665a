// libperfscope_cupti.so: the CUPTI injection library. The CUDA driver loads it from
// CUDA_INJECTION64_PATH during cuInit and calls InitializeInjection(); from then on CUPTI's
// activity records are drained on CUPTI's own thread, copied into plain records (records are
// packed: fields are read by value, never through references) and handed to a TraceSink,
// whose thread converts and sends them. At exit, a forced flush hands over what CUPTI still
// holds, so a short program loses nothing. With a duty cycle, the sink's thread enables the
// activity kinds (and launch callbacks) when a window opens, and when it closes flushes and
// detaches CUPTI from the process until the next one.
//
// Only InitializeInjection is exported; everything else is hidden so that nothing here can
// clash with the traced program's own libraries.
#include <cupti.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "server/trace/cupti_api_filter.hpp"
#include "server/trace/trace_sink.hpp"

namespace perfscope::trace {
namespace {

// Our plain records carry CUPTI's enum values; these are the facts the conversion relies on.
static_assert(cupti_values::kMemcpyHtoD == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
static_assert(cupti_values::kMemcpyDtoH == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
static_assert(cupti_values::kMemcpyDtoD == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
static_assert(cupti_values::kMemcpyHtoH == CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
static_assert(cupti_values::kMemcpyPtoP == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
static_assert(cupti_values::kMemoryPageable == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
static_assert(cupti_values::kMemoryPinned == CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
static_assert(cupti_values::kMemoryDevice == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
static_assert(cupti_values::kMemoryManaged == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
static_assert(cupti_values::kMemoryDeviceStatic == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC);
static_assert(cupti_values::kMemoryManagedStatic == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC);

// The record layouts of the toolkit we build against.
#if CUPTI_API_VERSION >= 130200
using KernelActivity = CUpti_ActivityKernel11;
#else
using KernelActivity = CUpti_ActivityKernel10;
#endif
using MemcpyActivity = CUpti_ActivityMemcpy6;
using MemsetActivity = CUpti_ActivityMemset4;
using MemoryActivity = CUpti_ActivityMemory4;

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
  CUpti_ActivityKind kind;
  const char* name;
};
std::vector<Kind> g_kinds;  // set once in InitializeInjection
// The runtime and driver functions that start no GPU work: their calls are not recorded.
std::vector<CUpti_CallbackId> g_runtime_quiet, g_driver_quiet;  // set once in InitializeInjection

// Kernel names by CUPTI's pointer: CUPTI shares one name string among all records of a kernel,
// so a record costs a lookup, not a copy. Cleared when CUPTI detaches (its strings may go).
// Never destroyed: CUPTI's thread may complete a buffer while the process runs its exit handlers.
std::mutex g_names_mu;
auto& g_names = *new std::unordered_map<const char*, KernelName>;  // guarded by g_names_mu

// Launch calls recorded by callbacks (the `launch` kind), collected from the launching
// threads and handed to the sink with the next drained buffer.
CUpti_SubscriberHandle g_subscriber = nullptr;
std::mutex g_launches_mu;
std::vector<TraceRecord> g_launches;  // guarded by g_launches_mu
thread_local std::uint64_t t_enter_ns[2];  // per domain: a runtime launch calls the driver's
thread_local std::uint32_t t_thread_id = 0;

// Runtime launch calls first, then the driver's (Triton and other driver-API users).
constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,           CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};
bool g_launch_runtime = false, g_launch_driver = false;  // set once in InitializeInjection

// The launch calls collected since the last hand-over go to the sink.
void hand_over_launches() {
  std::lock_guard lock(g_launches_mu);
  if (!g_launches.empty()) sink().push(std::exchange(g_launches, {}));
}

void report(const char* what, CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::fprintf(stderr, "perfscope: %s: %s\n", what, text ? text : "unknown CUPTI error");
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
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
  r.correlation_id = k->correlationId;
  r.device = k->deviceId;
  r.stream = k->streamId;
  r.start_ns = k->start;
  r.end_ns = k->end;
  r.grid = {k->gridX, k->gridY, k->gridZ};
  r.block = {k->blockX, k->blockY, k->blockZ};
  r.registers_per_thread = k->registersPerThread;
  r.static_shared_bytes = k->staticSharedMemory;
  r.dynamic_shared_bytes = k->dynamicSharedMemory;
  return r;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t /*size*/,
                               size_t valid_size) {
  std::vector<TraceRecord> records;
  records.reserve(valid_size / 160 + 1);
  CUpti_Activity* record = nullptr;
  std::unique_lock names_lock(g_names_mu);  // buffers complete on CUPTI's thread and on a forced flush's
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        records.push_back(kernel_record(reinterpret_cast<const KernelActivity*>(record)));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const MemcpyActivity*>(record);
        records.push_back(CopyRecord{false, m->copyKind, m->srcKind, m->dstKind, m->bytes, m->correlationId,
                                     m->deviceId, m->streamId, m->start, m->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const MemsetActivity*>(record);
        records.push_back(CopyRecord{true, 0, m->memoryKind, m->memoryKind, m->bytes, m->correlationId,
                                     m->deviceId, m->streamId, m->start, m->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        records.push_back(ApiRecord{a->correlationId, a->cbid, a->start, a->end, a->threadId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMORY2: {
        const auto* m = reinterpret_cast<const MemoryActivity*>(record);
        const auto op = m->memoryOperationType;
        if (op != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION && op != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
          break;
        }
        records.push_back(MemoryRecord{op == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, m->address, m->bytes,
                                       m->timestamp, m->deviceId, static_cast<std::uint32_t>(m->memoryKind)});
        break;
      }
      default:
        break;
    }
  }
  names_lock.unlock();
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) sink().add_cupti_dropped(dropped);
  std::free(buffer);
  hand_over_launches();  // first: the converter matches either order, but this one needs no waiting
  sink().push(std::move(records));
}

// On the launching thread, at entry and exit of each subscribed launch call: two timestamps
// and, at exit, one record appended under an uncontended lock.
void CUPTIAPI launch_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  std::uint64_t now = 0;
  cuptiGetTimestamp(&now);
  const int slot = domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : 0;
  if (info->callbackSite == CUPTI_API_ENTER) {
    t_enter_ns[slot] = now;
    return;
  }
  if (t_thread_id == 0) t_thread_id = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  std::lock_guard lock(g_launches_mu);
  g_launches.push_back(ApiRecord{info->correlationId, cbid, t_enter_ns[slot], now, t_thread_id});
}

// Attaches CUPTI with the run's activity kinds (and launch callbacks): once at start, or at
// each window of a duty cycle. Between windows CUPTI is detached altogether (cuptiFinalize):
// with its kinds merely disabled, an attached CUPTI still costs every launch a good part of
// what tracing does (measured: bench/RESULTS.md, "Kernel tracing on launch-bound work").
std::mutex g_tracing_mu;
bool g_attached = false;  // guarded by g_tracing_mu
bool g_exiting = false;   // guarded by g_tracing_mu: at_exit has flushed; nothing attaches again

void attach() {
  if (CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    report("cuptiActivityRegisterCallbacks", r);
    return;
  }
  if (g_launch_runtime || g_launch_driver) {
    if (CUptiResult r = cuptiSubscribe(&g_subscriber, launch_callback, nullptr); r != CUPTI_SUCCESS) {
      report("subscribing to launch callbacks", r);
      g_subscriber = nullptr;
    }
  }
  if (g_subscriber && g_launch_runtime) {
    for (CUpti_CallbackId id : kRuntimeLaunches) cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  }
  if (g_subscriber && g_launch_driver) {
    for (CUpti_CallbackId id : kDriverLaunches) cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  }
  for (const Kind& k : g_kinds) {
    if (!k.on) continue;
    if (CUptiResult r = cuptiActivityEnable(k.kind); r != CUPTI_SUCCESS) {
      std::string what = std::string("enabling ") + k.name + " activity";
      report(what.c_str(), r);
      continue;
    }
    // Only the calls that start GPU work are recorded (after every enable: enabling forgets).
    if (k.kind != CUPTI_ACTIVITY_KIND_RUNTIME && k.kind != CUPTI_ACTIVITY_KIND_DRIVER) continue;
    const auto& quiet = k.kind == CUPTI_ACTIVITY_KIND_RUNTIME ? g_runtime_quiet : g_driver_quiet;
    if (!quiet.empty() && record_only_gpu_work(k.kind, quiet) == 0) {
      static std::once_flag said;
      std::call_once(said, [&] {
        std::fprintf(stderr, "perfscope: this CUPTI cannot switch single functions off: every %s call is recorded\n",
                     k.name);
      });
    }
  }
  g_attached = true;
}

// The window's records are handed over first (a forced flush), then CUPTI lets go.
void detach() {
  for (const Kind& k : g_kinds) {
    if (k.on) cuptiActivityDisable(k.kind);
  }
  if (g_subscriber) {
    cuptiUnsubscribe(g_subscriber);
    g_subscriber = nullptr;
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (CUptiResult r = cuptiFinalize(); r != CUPTI_SUCCESS) report("detaching CUPTI between windows", r);
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
      if (g_attached) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
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
  options->on_tick = [] {
    std::lock_guard lock(g_tracing_mu);
    if (g_attached) cuptiActivityFlushAll(0);  // detached, a CUPTI call would attach it again
  };
  options->on_window = [](bool open) { set_window(open); };
  const TraceKinds kinds = options->kinds;
  // Everything is set up before the sink opens: its thread may open a duty cycle's window.
  const bool duty_cycled = options->schedule.duty_cycled();
  // Never CUPTI_ACTIVITY_KIND_KERNEL: it serializes kernels.
  g_kinds = {
      {kinds.kernel, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel"},
      {kinds.memcpy, CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
      {kinds.memset, CUPTI_ACTIVITY_KIND_MEMSET, "memset"},
      {kinds.runtime, CUPTI_ACTIVITY_KIND_RUNTIME, "runtime"},
      {kinds.driver, CUPTI_ACTIVITY_KIND_DRIVER, "driver"},
      {kinds.memory, CUPTI_ACTIVITY_KIND_MEMORY2, "memory"},
  };
  // Not in a duty cycle: switching single functions off, then detaching and attaching CUPTI
  // window after window, corrupted the heap of 2 of 10 processes on the H100's driver (the bare
  // floor library as well as this one; bench/RESULTS.md). A window records every call instead.
  if (kinds.runtime && !duty_cycled) g_runtime_quiet = calls_without_gpu_work(CUPTI_CB_DOMAIN_RUNTIME_API);
  if (kinds.driver && !duty_cycled) g_driver_quiet = calls_without_gpu_work(CUPTI_CB_DOMAIN_DRIVER_API);
  // Launch callbacks for the domains whose launch calls are not already activity records.
  g_launch_runtime = kinds.launch && !kinds.runtime;
  g_launch_driver = kinds.launch && !kinds.driver;
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
}  // namespace perfscope::trace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  return perfscope::trace::initialize();
}
