// libperfscope_cupti.so: the CUPTI injection library. The CUDA driver loads it from
// CUDA_INJECTION64_PATH during cuInit and calls InitializeInjection(); from then on CUPTI's
// activity records are drained on CUPTI's own thread, copied into plain records (records are
// packed: fields are read by value, never through references) and handed to a TraceSink,
// whose thread converts and sends them. At exit, a forced flush hands over what CUPTI still
// holds, so a short program loses nothing.
//
// Only InitializeInjection is exported; everything else is hidden so that nothing here can
// clash with the traced program's own libraries.
#include <cupti.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

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

TraceSink* g_sink = nullptr;  // set once in InitializeInjection, closed at exit
std::once_flag g_exit_once;

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

TraceRecord kernel_record(const KernelActivity* k) {
  KernelRecord r;
  r.name = k->name ? k->name : "";
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
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) g_sink->add_cupti_dropped(dropped);
  std::free(buffer);
  g_sink->push(std::move(records));
}

void at_exit() {
  std::call_once(g_exit_once, [] {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    g_sink->close();
    TraceSinkStats s = g_sink->stats();
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
  options->on_tick = [] { cuptiActivityFlushAll(0); };
  const TraceKinds kinds = options->kinds;
  auto sink = TraceSink::open(std::move(*options));
  if (!sink.ok()) {
    std::fprintf(stderr, "perfscope: tracing off: %s\n", sink.status().message().c_str());
    return 1;
  }
  g_sink = sink->release();  // lives until the process ends; closed by at_exit
  if (CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    report("cuptiActivityRegisterCallbacks", r);
    return 1;
  }
  struct Kind {
    bool on;
    CUpti_ActivityKind kind;
    const char* name;
  };
  // Never CUPTI_ACTIVITY_KIND_KERNEL: it serializes kernels.
  const Kind wanted[] = {
      {kinds.kernel, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel"},
      {kinds.memcpy, CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
      {kinds.memset, CUPTI_ACTIVITY_KIND_MEMSET, "memset"},
      {kinds.runtime, CUPTI_ACTIVITY_KIND_RUNTIME, "runtime"},
      {kinds.driver, CUPTI_ACTIVITY_KIND_DRIVER, "driver"},
      {kinds.memory, CUPTI_ACTIVITY_KIND_MEMORY2, "memory"},
  };
  for (const Kind& k : wanted) {
    if (!k.on) continue;
    if (CUptiResult r = cuptiActivityEnable(k.kind); r != CUPTI_SUCCESS) {
      std::string what = std::string("enabling ") + k.name + " activity";
      report(what.c_str(), r);
    }
  }
  std::atexit(at_exit);
  return 1;
}

}  // namespace
}  // namespace perfscope::trace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  return perfscope::trace::initialize();
}
