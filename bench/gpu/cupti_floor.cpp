// The floor of kernel tracing: a minimal CUPTI injection library that enables the activity
// kinds named in CUPTI_FLOOR_KINDS ("kernel", "kernel,runtime,memory"; default kernel) and
// does nothing with their records but count them. "runtime-work" (and "driver-work") record
// only the calls that start GPU work, as perfscope's library does (cupti_api_filter.hpp). What a traced program pays with it is what
// CUPTI itself costs on this driver; what `perfscope run` pays beyond it is perfscope's.
// CUPTI_FLOOR_BUFFER_BYTES sets the size of CUPTI's buffers (default 4 MiB, as perfscope's);
// CUPTI_FLOOR_FLUSH_MS > 0 asks CUPTI for its records that often, as perfscope's sink does.
// CUPTI_FLOOR_WINDOW_MS=W with CUPTI_FLOOR_EVERY_MS=E: attached for W ms at every multiple of E
// ms of the wall clock and detached between (cuptiFinalize), as perfscope's duty cycle; a
// program that times its own passes then compares traced and untraced ones in one process.
// CUPTI_FLOOR_RUNTIME_WINDOW_MS=W with CUPTI_FLOOR_RUNTIME_EVERY_MS=E: the runtime kind (calls
// that start GPU work) on for W ms of every E ms and off between, kernels always on — what
// launch correlation on a sample of the time would cost.
// Loaded like libperfscope_cupti.so: CUDA_INJECTION64_PATH=libcupti_floor.so program…
// Prints the record count at exit (to stderr, or appended to CUPTI_FLOOR_COUNTS).
#include <cupti.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "server/trace/cupti_api_filter.hpp"

namespace {

std::size_t g_buffer_bytes = 4 << 20;  // as the perfscope library
std::atomic<unsigned long long> g_records{0};

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, g_buffer_bytes));
  *size = *buffer ? g_buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  unsigned long long n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) ++n;
  g_records += n;
  std::free(buffer);
}

void at_exit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char* path = std::getenv("CUPTI_FLOOR_COUNTS");
  FILE* out = path ? std::fopen(path, "a") : stderr;
  if (!out) return;
  const char* kinds = std::getenv("CUPTI_FLOOR_KINDS");
  std::fprintf(out, "cupti_floor kinds %s records %llu\n", kinds ? kinds : "kernel", g_records.load());
  if (out != stderr) std::fclose(out);
}

}  // namespace

namespace {

struct Kind {
  const char* name;
  CUpti_ActivityKind kind;
  bool work_only;
};
constexpr Kind kAll[] = {{"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, false},
                         {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY, false},
                         {"memset", CUPTI_ACTIVITY_KIND_MEMSET, false},
                         {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME, false},
                         {"runtime-work", CUPTI_ACTIVITY_KIND_RUNTIME, true},
                         {"driver", CUPTI_ACTIVITY_KIND_DRIVER, false},
                         {"driver-work", CUPTI_ACTIVITY_KIND_DRIVER, true},
                         {"memory", CUPTI_ACTIVITY_KIND_MEMORY2, false}};
std::string g_wanted;

bool wanted(const Kind& k) { return ("," + g_wanted + ",").find(std::string(",") + k.name + ",") != std::string::npos; }

// CUPTI attached with the wanted kinds, as perfscope's library attaches it.
void attach(bool say) {
  cuptiActivityRegisterCallbacks(requested, completed);
  for (const Kind& k : kAll) {
    if (!wanted(k)) continue;
    cuptiActivityEnable(k.kind);
    if (!k.work_only) continue;
    const auto domain = k.kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    const auto quiet = perfscope::trace::calls_without_gpu_work(domain);
    const std::size_t off = perfscope::trace::record_only_gpu_work(k.kind, quiet);
    if (say) std::fprintf(stderr, "cupti_floor: %s: %zu of %zu functions switched off\n", k.name, off, quiet.size());
  }
}

// Detached between windows, as perfscope's library detaches it.
void detach() {
  for (const Kind& k : kAll) {
    if (wanted(k)) cuptiActivityDisable(k.kind);
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiFinalize();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  const char* kinds = std::getenv("CUPTI_FLOOR_KINDS");
  g_wanted = kinds ? kinds : "kernel";
  if (const char* bytes = std::getenv("CUPTI_FLOOR_BUFFER_BYTES")) g_buffer_bytes = std::strtoull(bytes, nullptr, 10) / 8 * 8;
  if (const char* ms = std::getenv("CUPTI_FLOOR_FLUSH_MS"); ms && std::atoi(ms) > 0) {
    const int period = std::atoi(ms);
    std::thread([period] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(period));
        cuptiActivityFlushAll(0);
      }
    }).detach();
  }
  const char* window_ms = std::getenv("CUPTI_FLOOR_WINDOW_MS");
  const char* every_ms = std::getenv("CUPTI_FLOOR_EVERY_MS");
  if (window_ms && every_ms && std::atoi(window_ms) > 0 && std::atoi(every_ms) > std::atoi(window_ms)) {
    // Windows at every multiple of EVERY of the wall clock, WINDOW long, as perfscope's.
    const long long window = std::atoll(window_ms) * 1'000'000, every = std::atoll(every_ms) * 1'000'000;
    std::thread([window, every] {
      bool attached = false;
      for (;;) {
        const long long now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch()).count();
        const long long phase = now % every;
        const bool open = phase < window;
        if (open != attached) {
          if (open) {
            attach(false);
          } else {
            detach();
          }
          attached = open;
        }
        std::this_thread::sleep_for(std::chrono::nanoseconds(open ? window - phase : every - phase));
      }
    }).detach();
    std::atexit(at_exit);
    return 1;
  }
  attach(true);
  const char* window = std::getenv("CUPTI_FLOOR_RUNTIME_WINDOW_MS");
  const char* every = std::getenv("CUPTI_FLOOR_RUNTIME_EVERY_MS");
  if (window && every && std::atoi(window) > 0 && std::atoi(every) > std::atoi(window)) {
    const auto on = std::chrono::milliseconds(std::atoi(window));
    const auto off = std::chrono::milliseconds(std::atoi(every)) - on;
    std::thread([on, off] {
      const auto quiet = perfscope::trace::calls_without_gpu_work(CUPTI_CB_DOMAIN_RUNTIME_API);
      for (;;) {
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
        perfscope::trace::record_only_gpu_work(CUPTI_ACTIVITY_KIND_RUNTIME, quiet);
        std::this_thread::sleep_for(on);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
        std::this_thread::sleep_for(off);
      }
    }).detach();
  }
  std::atexit(at_exit);
  return 1;
}
