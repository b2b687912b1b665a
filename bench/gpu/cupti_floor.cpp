// The floor of kernel tracing: a minimal CUPTI injection library that enables the activity
// kinds named in CUPTI_FLOOR_KINDS ("kernel", "kernel,runtime,memory"; default kernel) and
// does nothing with their records but count them. What a traced program pays with it is what
// CUPTI itself costs on this driver; what `perfscope run` pays beyond it is perfscope's.
// Loaded like libperfscope_cupti.so: CUDA_INJECTION64_PATH=libcupti_floor.so program…
// Prints the record count at exit (to stderr, or appended to CUPTI_FLOOR_COUNTS).
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr std::size_t kBufferBytes = 4 << 20;  // as the perfscope library
std::atomic<unsigned long long> g_records{0};

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
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
  std::fprintf(out, "cupti_floor records %llu\n", g_records.load());
  if (out != stderr) std::fclose(out);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  const char* kinds = std::getenv("CUPTI_FLOOR_KINDS");
  const std::string wanted = kinds ? kinds : "kernel";
  cuptiActivityRegisterCallbacks(requested, completed);
  struct Kind {
    const char* name;
    CUpti_ActivityKind kind;
  };
  const Kind all[] = {{"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}, {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
                      {"memset", CUPTI_ACTIVITY_KIND_MEMSET},            {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME},
                      {"driver", CUPTI_ACTIVITY_KIND_DRIVER},            {"memory", CUPTI_ACTIVITY_KIND_MEMORY2}};
  for (const Kind& k : all) {
    if (("," + wanted + ",").find(std::string(",") + k.name + ",") != std::string::npos) cuptiActivityEnable(k.kind);
  }
  std::atexit(at_exit);
  return 1;
}
