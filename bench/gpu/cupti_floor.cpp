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
// Loaded like libperfscope_cupti.so: CUDA_INJECTION64_PATH=libcupti_floor.so program…, and
// finding its CUPTI the same way (cupti_library.hpp).
// Prints the record count at exit (to stderr, or appended to CUPTI_FLOOR_COUNTS).

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "server/trace/cupti_api_filter.hpp"
#include "server/trace/cupti_library.hpp"

namespace {

namespace cupti = perfscope::trace::cupti;
cupti::Api g_cupti;  // set once in InitializeInjection

std::size_t g_buffer_bytes = 4 << 20;  // as the perfscope library
std::atomic<unsigned long long> g_records{0};

void requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, g_buffer_bytes));
  *size = *buffer ? g_buffer_bytes : 0;
  *max_records = 0;
}

void completed(cupti::Context, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  cupti::Activity* record = nullptr;
  unsigned long long n = 0;
  while (g_cupti.activity_get_next_record(buffer, valid, &record) == cupti::kSuccess) ++n;
  g_records += n;
  std::free(buffer);
}

void at_exit() {
  g_cupti.activity_flush_all(cupti::kFlushForced);
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
  cupti::ActivityKind kind;
  bool work_only;
};
constexpr Kind kAll[] = {{"kernel", cupti::kKindConcurrentKernel, false},
                         {"memcpy", cupti::kKindMemcpy, false},
                         {"memset", cupti::kKindMemset, false},
                         {"runtime", cupti::kKindRuntime, false},
                         {"runtime-work", cupti::kKindRuntime, true},
                         {"driver", cupti::kKindDriver, false},
                         {"driver-work", cupti::kKindDriver, true},
                         {"memory", cupti::kKindMemory2, false}};
std::string g_wanted;

bool wanted(const Kind& k) { return ("," + g_wanted + ",").find(std::string(",") + k.name + ",") != std::string::npos; }

// CUPTI attached with the wanted kinds, as perfscope's library attaches it.
void attach(bool say) {
  g_cupti.activity_register_callbacks(requested, completed);
  for (const Kind& k : kAll) {
    if (!wanted(k)) continue;
    g_cupti.activity_enable(k.kind);
    if (!k.work_only) continue;
    const auto domain = k.kind == cupti::kKindRuntime ? cupti::kDomainRuntimeApi : cupti::kDomainDriverApi;
    const auto quiet = perfscope::trace::calls_without_gpu_work(g_cupti, domain);
    const std::size_t off = perfscope::trace::record_only_gpu_work(g_cupti, k.kind, quiet);
    if (say) std::fprintf(stderr, "cupti_floor: %s: %zu of %zu functions switched off\n", k.name, off, quiet.size());
  }
}

// Detached between windows, as perfscope's library detaches it.
void detach() {
  for (const Kind& k : kAll) {
    if (wanted(k)) g_cupti.activity_disable(k.kind);
  }
  g_cupti.activity_flush_all(cupti::kFlushForced);
  g_cupti.finalize();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  auto loaded = perfscope::trace::load_cupti(perfscope::trace::cupti_candidates(perfscope::trace::cupti_search_from_process()));
  if (!loaded.ok()) {
    std::fprintf(stderr, "cupti_floor: %s\n", loaded.status().message().c_str());
    return 1;
  }
  g_cupti = loaded->api;
  const char* kinds = std::getenv("CUPTI_FLOOR_KINDS");
  g_wanted = kinds ? kinds : "kernel";
  if (const char* bytes = std::getenv("CUPTI_FLOOR_BUFFER_BYTES")) g_buffer_bytes = std::strtoull(bytes, nullptr, 10) / 8 * 8;
  if (const char* ms = std::getenv("CUPTI_FLOOR_FLUSH_MS"); ms && std::atoi(ms) > 0) {
    const int period = std::atoi(ms);
    std::thread([period] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(period));
        g_cupti.activity_flush_all(0);
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
      const auto quiet = perfscope::trace::calls_without_gpu_work(g_cupti, cupti::kDomainRuntimeApi);
      for (;;) {
        g_cupti.activity_enable(cupti::kKindRuntime);
        perfscope::trace::record_only_gpu_work(g_cupti, cupti::kKindRuntime, quiet);
        std::this_thread::sleep_for(on);
        g_cupti.activity_disable(cupti::kKindRuntime);
        std::this_thread::sleep_for(off);
      }
    }).detach();
  }
  std::atexit(at_exit);
  return 1;
}
