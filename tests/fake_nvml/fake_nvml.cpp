// A stand-in for libnvidia-ml.so for machines without an NVIDIA GPU: exports the NVML entry
// points perfscope resolves, with NVIDIA's published layouts declared here independently of
// perfscope's own, and answers from a script file named by PERFSCOPE_FAKE_NVML_SCRIPT (read
// on every call, so a test can change values between sampling passes):
//   count 2            driver 580.159.01      nvml 13.580
//   0.name NVIDIA H100 80GB HBM3              0.uuid GPU-…
//   0.util_gpu 55      0.util_mem 40          0.mem_total … 0.mem_used … 0.mem_reserved …
//   0.util_enc 0       0.util_dec 0           (the video engines' busy percent)
//   0.power_mw 250000  0.limit_mw 700000      0.energy_mj 1234567
//   0.temp 61  0.mem_temp 70  0.slowdown 87  0.shutdown 92
//   0.clock_sm 1980  0.clock_mem 2619  0.clock_gfx 1980  0.max_clock_sm …  0.max_clock_mem …
//   0.bus_width 5120   0.reasons 0x44         0.procs 1234:1048576,4321:2048
//   0.proc_util 1234:87:40:0:0@900000,…     (pid:sm:mem:enc:dec@timestamp_us, per-process samples)
//   0.gpm 1  0.gpm.10 83.5 …                  0.lost 1 (every call: GPU is lost)
//   0.<call>_rc N      forces a return code (call: utilization, memory_v2, memory, power, …)
//   0.accounting 1  0.acct 1234:35:12:2147483648:60000   accounting on; per pid: gpu %, memory %,
//                      max memory bytes, lifetime ms
//   0.mig_mode 1  0.mig_max 7                 MIG: mode on, instance slots
//   topo.0.1 10  0.nvlink 1:18,switch:2  topology: PCIe common ancestor level, active links by peer
//   0.nvlink_mbps 25000  NVML's common NVLink speed per link and direction (field 90), MB/s
//   0.nvlink_link_mbps 26562  the same per link (field 164, any link), as recent drivers give it
//   0.xids 79,13       Xid errors, each delivered once to a waiting event set, in order (append
//                      to deliver more); 0.xid_events 0: the GPU reports no Xid events
//   0/2.uuid MIG-…  0/2.gi 3  0/2.ci 0  0/2.name …  0/2.mem_total …  0/2.procs …
//                      the MIG instance in slot 2 of GPU 0 (a slot without a uuid is empty);
//                      as NVML documents, an instance answers name, uuid, memory and its
//                      processes, and every other call with Not Supported unless scripted
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <utility>
#include <fstream>
#include <map>
#include <sstream>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

std::map<std::string, std::string> script() {
  std::map<std::string, std::string> kv;
  const char* path = std::getenv("PERFSCOPE_FAKE_NVML_SCRIPT");
  if (!path) return kv;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    kv[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return kv;
}

std::string get(const std::string& key, const std::string& fallback = "") {
  auto kv = script();
  auto it = kv.find(key);
  return it == kv.end() ? fallback : it->second;
}
unsigned long long num(const std::string& key, unsigned long long fallback = 0) {
  std::string v = get(key);
  return v.empty() ? fallback : std::strtoull(v.c_str(), nullptr, 0);
}

// Devices are handles 1..count: the index is the pointer value minus one. MIG instances are
// handles from kMigBase on: GPU index × 256 + slot.
constexpr std::uintptr_t kMigBase = 0x10000;
bool is_mig(void* device) { return reinterpret_cast<std::uintptr_t>(device) >= kMigBase; }
unsigned index_of(void* device) {
  const auto v = reinterpret_cast<std::uintptr_t>(device);
  return static_cast<unsigned>(v >= kMigBase ? (v - kMigBase) / 256 : v - 1);
}
// "0" for GPU 0, "0/2" for the MIG instance in its slot 2: the scripts' key prefix.
std::string id_of(void* device) {
  const auto v = reinterpret_cast<std::uintptr_t>(device);
  return v >= kMigBase ? std::to_string((v - kMigBase) / 256) + "/" + std::to_string((v - kMigBase) % 256)
                       : std::to_string(v - 1);
}
std::string key(void* device, const char* name) { return id_of(device) + "." + name; }

// The forced return code of a call, or 15 when the GPU is lost, or 0 — on a MIG instance, 3
// (Not Supported) for what NVML does not answer there.
int rc_of(void* device, const char* call) {
  if (num(std::to_string(index_of(device)) + ".lost")) return 15;
  const std::string forced = get(key(device, (std::string(call) + "_rc").c_str()));
  if (!forced.empty()) return static_cast<int>(std::strtol(forced.c_str(), nullptr, 0));
  const std::string c = call;
  if (is_mig(device) && c != "name" && c != "uuid" && c != "memory_v2" && c != "memory" && c != "processes") return 3;
  return 0;
}

void copy(char* out, unsigned size, const std::string& text) {
  if (size == 0) return;
  const std::size_t n = std::min<std::size_t>(text.size(), size - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

struct Utilization { unsigned gpu, memory; };
struct MemoryV1 { unsigned long long total, free, used; };
struct MemoryV2 { unsigned version; unsigned long long total, reserved, free, used; };
struct PciInfo { char bus_id_legacy[16]; unsigned domain, bus, device, pci_device_id, pci_subsystem_id; char bus_id[32]; };
struct ProcessInfo { unsigned pid; unsigned long long used_gpu_memory; unsigned gpu_instance_id, compute_instance_id; };
struct FieldValue {
  unsigned field_id, scope_id;
  long long timestamp, latency;
  int value_type, nvml_return;
  union { double d; unsigned ui; unsigned long ul; unsigned long long ull; long long sll; int si; } value;
};
struct GpmSupport { unsigned version, is_supported_device; };
struct GpmMetric { unsigned metric_id; int nvml_return; double value; struct { char *short_name, *long_name, *unit; } info; };
struct GpmRequest { unsigned version, num_metrics; void* sample1; void* sample2; GpmMetric metrics[333]; };

static_assert(sizeof(MemoryV2) == 40, "nvmlMemory_v2_t is 40 bytes");
static_assert(sizeof(ProcessInfo) == 24, "nvmlProcessInfo_t is 24 bytes");
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes");
static_assert(sizeof(PciInfo) == 68, "nvmlPciInfo_t is 68 bytes");

struct Sample { unsigned device; int taken = 0; };

struct EventData { void* device; unsigned long long type, data; unsigned gpu_instance_id, compute_instance_id; };
static_assert(sizeof(EventData) == 32, "nvmlEventData_t is 32 bytes");
// An event set: its GPUs, and how many of each one's scripted Xids it has delivered.
struct EventSet {
  std::mutex mu;
  std::vector<std::pair<void*, std::size_t>> devices;
};

}  // namespace

extern "C" {

int nvmlInit_v2() { return static_cast<int>(num("init_rc", 0)); }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int rc) {
  switch (rc) {
    case 3: return "Not Supported";
    case 13: return "Function Not Found";
    case 15: return "GPU is lost";
    case 25: return "Argument version mismatch";
    default: return "Unknown Error";
  }
}
int nvmlSystemGetDriverVersion(char* out, unsigned n) { copy(out, n, get("driver", "580.159.01")); return 0; }
int nvmlSystemGetNVMLVersion(char* out, unsigned n) { copy(out, n, get("nvml", "13.580.159.01")); return 0; }
int nvmlDeviceGetCount_v2(unsigned* count) { *count = static_cast<unsigned>(num("count", 0)); return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** device) {
  if (i >= num("count", 0)) return 2;
  if (num(std::to_string(i) + ".lost")) return 15;
  *device = reinterpret_cast<void*>(static_cast<std::uintptr_t>(i) + 1);
  return 0;
}
int nvmlDeviceGetName(void* d, char* out, unsigned n) { copy(out, n, get(key(d, "name"), "Fake GPU")); return rc_of(d, "name"); }
int nvmlDeviceGetUUID(void* d, char* out, unsigned n) {
  copy(out, n, get(key(d, "uuid"), "GPU-fake-" + std::to_string(index_of(d))));
  return rc_of(d, "uuid");
}
int nvmlDeviceGetPciInfo_v3(void* d, PciInfo* p) {
  std::memset(p, 0, sizeof *p);
  copy(p->bus_id, sizeof p->bus_id, get(key(d, "pci"), "00000000:1" + std::to_string(index_of(d)) + ":00.0"));
  return rc_of(d, "pci");
}
// Topology: "topo.0.1 10" the common ancestor level of GPUs 0 and 1 (either order; Not
// Supported when unscripted); "0.nvlink 1:18,switch:2" GPU 0's active links, 18 to GPU 1 and
// 2 to a device that is no GPU.
int nvmlDeviceGetTopologyCommonAncestor(void* d1, void* d2, int* level) {
  if (int rc = rc_of(d1, "topology")) return rc;
  const std::string a = std::to_string(index_of(d1)), b = std::to_string(index_of(d2));
  std::string v = get("topo." + a + "." + b);
  if (v.empty()) v = get("topo." + b + "." + a);
  if (v.empty()) return 3;
  *level = std::atoi(v.c_str());
  return 0;
}
// The link's far end: GPU N's bus id, or "switch"'s made-up one.
static std::string nvlink_peer(void* d, unsigned link) {
  std::stringstream list(get(key(d, "nvlink")));
  std::string item;
  unsigned first = 0;
  while (std::getline(list, item, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) continue;
    const unsigned count = static_cast<unsigned>(std::strtoul(item.c_str() + colon + 1, nullptr, 10));
    if (link < first + count) return item.substr(0, colon);
    first += count;
  }
  return "";
}
int nvmlDeviceGetNvLinkState(void* d, unsigned link, int* active) {
  if (int rc = rc_of(d, "nvlink")) return rc;
  if (get(key(d, "nvlink")).empty()) return 3;  // no NVLink
  *active = nvlink_peer(d, link).empty() ? 0 : 1;
  return 0;
}
int nvmlEventSetCreate(void** set) { *set = new EventSet; return 0; }
int nvmlEventSetFree(void* set) { delete static_cast<EventSet*>(set); return 0; }
int nvmlDeviceGetSupportedEventTypes(void* d, unsigned long long* types) {
  *types = num(key(d, "xid_events"), 1) ? 0x8 : 0;
  return rc_of(d, "events");
}
int nvmlDeviceRegisterEvents(void* d, unsigned long long types, void* set) {
  if (!(types & 0x8) || !num(key(d, "xid_events"), 1)) return 3;
  auto* s = static_cast<EventSet*>(set);
  std::lock_guard lock(s->mu);
  s->devices.emplace_back(d, 0);
  return 0;
}
int nvmlEventSetWait_v2(void* set, EventData* out, unsigned timeout_ms) {
  auto* s = static_cast<EventSet*>(set);
  {
    std::lock_guard lock(s->mu);
    for (auto& [device, delivered] : s->devices) {
      std::vector<unsigned long long> xids;
      std::stringstream list(get(key(device, "xids")));
      for (std::string x; std::getline(list, x, ',');) xids.push_back(std::strtoull(x.c_str(), nullptr, 10));
      if (delivered < xids.size()) {
        *out = EventData{device, 0x8, xids[delivered++], 0xFFFFFFFF, 0xFFFFFFFF};
        return 0;
      }
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 50u)));
  return 10;  // NVML_ERROR_TIMEOUT
}
int nvmlDeviceGetNvLinkRemoteDeviceType(void* d, unsigned link, int* type) {
  const std::string peer = nvlink_peer(d, link);
  if (peer.empty()) return 3;
  *type = peer == "switch" ? 2 : 0;
  return 0;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* d, unsigned link, PciInfo* p) {
  const std::string peer = nvlink_peer(d, link);
  if (peer.empty()) return 3;
  std::memset(p, 0, sizeof *p);
  // Upper case and a short domain, as some drivers write it: matched to the GPU's all the same.
  // An NVSwitch reads as no device, as on an HGX board.
  const std::string bus = peer == "switch" ? "FFFFFFFF:FF:FF.0" : "0000:1" + peer + ":00.0";
  copy(p->bus_id, sizeof p->bus_id, get(peer + ".pci", bus));
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* d, Utilization* u) {
  if (int rc = rc_of(d, "utilization")) return rc;
  u->gpu = static_cast<unsigned>(num(key(d, "util_gpu")));
  u->memory = static_cast<unsigned>(num(key(d, "util_mem")));
  return 0;
}
int nvmlDeviceGetEncoderUtilization(void* d, unsigned* util, unsigned* period_us) {
  *util = static_cast<unsigned>(num(key(d, "util_enc")));
  *period_us = 167000;
  return rc_of(d, "encoder");
}
int nvmlDeviceGetDecoderUtilization(void* d, unsigned* util, unsigned* period_us) {
  *util = static_cast<unsigned>(num(key(d, "util_dec")));
  *period_us = 167000;
  return rc_of(d, "decoder");
}
int nvmlDeviceGetMemoryInfo_v2(void* d, MemoryV2* m) {
  if (int rc = rc_of(d, "memory_v2")) return rc;
  if (m->version != (40u | (2u << 24))) return 25;  // the caller must say which struct it passed
  m->total = num(key(d, "mem_total"));
  m->reserved = num(key(d, "mem_reserved"));
  m->used = num(key(d, "mem_used"));
  m->free = m->total - m->reserved - m->used;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* d, MemoryV1* m) {
  if (int rc = rc_of(d, "memory")) return rc;
  m->total = num(key(d, "mem_total"));
  m->used = num(key(d, "mem_used")) + num(key(d, "mem_reserved"));  // v1 counts reserved as used
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetPowerUsage(void* d, unsigned* mw) { *mw = static_cast<unsigned>(num(key(d, "power_mw"))); return rc_of(d, "power"); }
int nvmlDeviceGetEnforcedPowerLimit(void* d, unsigned* mw) { *mw = static_cast<unsigned>(num(key(d, "limit_mw"))); return rc_of(d, "limit"); }
int nvmlDeviceGetTotalEnergyConsumption(void* d, unsigned long long* mj) { *mj = num(key(d, "energy_mj")); return rc_of(d, "energy"); }
int nvmlDeviceGetTemperature(void* d, int sensor, unsigned* c) {
  if (sensor != 0) return 2;
  *c = static_cast<unsigned>(num(key(d, "temp")));
  return rc_of(d, "temperature");
}
int nvmlDeviceGetTemperatureThreshold(void* d, int type, unsigned* c) {
  *c = static_cast<unsigned>(num(key(d, type == 0 ? "shutdown" : "slowdown")));
  return *c ? rc_of(d, "threshold") : 3;
}
int nvmlDeviceGetClockInfo(void* d, int type, unsigned* mhz) {
  const char* k = type == 1 ? "clock_sm" : type == 2 ? "clock_mem" : "clock_gfx";
  *mhz = static_cast<unsigned>(num(key(d, k)));
  return rc_of(d, "clocks");
}
int nvmlDeviceGetMaxClockInfo(void* d, int type, unsigned* mhz) {
  *mhz = static_cast<unsigned>(num(key(d, type == 2 ? "max_clock_mem" : "max_clock_sm")));
  return rc_of(d, "max_clocks");
}
int nvmlDeviceGetMemoryBusWidth(void* d, unsigned* bits) { *bits = static_cast<unsigned>(num(key(d, "bus_width"))); return rc_of(d, "bus_width"); }
int nvmlDeviceGetCurrentClocksEventReasons(void* d, unsigned long long* r) { *r = num(key(d, "reasons")); return rc_of(d, "reasons"); }
int nvmlDeviceGetFieldValues(void* d, int n, FieldValue* values) {
  if (int rc = rc_of(d, "fields")) return rc;
  for (int i = 0; i < n; ++i) {
    FieldValue& f = values[i];
    // Field id → the script key giving it (unsigned values): memory temperature, instant power,
    // the NVLink speed per link and the common one.
    static constexpr std::pair<unsigned, const char*> kFields[] = {
        {82, "mem_temp"}, {186, "power_instant_mw"}, {164, "nvlink_link_mbps"}, {90, "nvlink_mbps"}};
    f.nvml_return = 3;
    for (const auto& [id, name] : kFields) {
      if (f.field_id != id || get(key(d, name)).empty()) continue;
      f.value_type = 1;
      f.value.ui = static_cast<unsigned>(num(key(d, name)));
      f.nvml_return = 0;
    }
  }
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* d, unsigned* count, ProcessInfo* out) {
  if (int rc = rc_of(d, "processes")) return rc;
  std::stringstream list(get(key(d, "procs")));
  std::string item;
  unsigned n = 0;
  ProcessInfo all[64];
  while (std::getline(list, item, ',') && n < 64) {
    auto colon = item.find(':');
    all[n].pid = static_cast<unsigned>(std::strtoul(item.substr(0, colon).c_str(), nullptr, 10));
    all[n].used_gpu_memory = std::strtoull(item.substr(colon + 1).c_str(), nullptr, 10);
    all[n].gpu_instance_id = all[n].compute_instance_id = 0xFFFFFFFF;
    ++n;
  }
  if (*count < n) {
    *count = n;
    return n ? 7 : 0;
  }
  for (unsigned i = 0; i < n; ++i) out[i] = all[i];
  *count = n;
  return 0;
}
struct ProcessUtilizationSample {  // nvmlProcessUtilizationSample_t
  unsigned pid;
  unsigned long long time_stamp;
  unsigned sm_util, mem_util, enc_util, dec_util;
};
// Samples newer than last_seen; NVML_ERROR_NOT_FOUND (6) when there is none.
int nvmlDeviceGetProcessUtilization(void* d, ProcessUtilizationSample* out, unsigned* count, unsigned long long last_seen) {
  if (int rc = rc_of(d, "process_utilization")) return rc;
  std::stringstream list(get(key(d, "proc_util")));
  std::string item;
  unsigned n = 0;
  ProcessUtilizationSample all[64];
  while (std::getline(list, item, ',') && n < 64) {
    ProcessUtilizationSample s{};
    if (std::sscanf(item.c_str(), "%u:%u:%u:%u:%u@%llu", &s.pid, &s.sm_util, &s.mem_util, &s.enc_util, &s.dec_util,
                    &s.time_stamp) != 6) {
      continue;
    }
    if (s.time_stamp > last_seen) all[n++] = s;
  }
  if (n == 0) return 6;
  if (!out || *count < n) {
    *count = n;
    return 7;
  }
  for (unsigned i = 0; i < n; ++i) out[i] = all[i];
  *count = n;
  return 0;
}
int nvmlGpmQueryDeviceSupport(void* d, GpmSupport* s) {
  if (s->version != 1) return 25;
  s->is_supported_device = static_cast<unsigned>(num(key(d, "gpm")));
  return rc_of(d, "gpm_support");
}
int nvmlGpmSampleAlloc(void** sample) { *sample = new Sample(); return 0; }
int nvmlGpmSampleFree(void* sample) { delete static_cast<Sample*>(sample); return 0; }
int nvmlGpmSampleGet(void* d, void* sample) {
  if (int rc = rc_of(d, "gpm")) return rc;
  auto* s = static_cast<Sample*>(sample);
  s->device = index_of(d);
  s->taken = 1;
  return 0;
}
int nvmlGpmMetricsGet(GpmRequest* req) {
  if (req->version != 1) return 25;
  auto* s1 = static_cast<Sample*>(req->sample1);
  auto* s2 = static_cast<Sample*>(req->sample2);
  if (!s1 || !s2 || !s1->taken || !s2->taken || s1 == s2) return 2;
  const std::string prefix = std::to_string(s2->device) + ".gpm.";
  for (unsigned i = 0; i < req->num_metrics; ++i) {
    GpmMetric& m = req->metrics[i];
    std::string v = get(prefix + std::to_string(m.metric_id));
    m.nvml_return = v.empty() ? 3 : 0;
    m.value = v.empty() ? 0 : std::strtod(v.c_str(), nullptr);
  }
  return 0;
}


int nvmlDeviceGetMigMode(void* d, unsigned* current, unsigned* pending) {
  if (int rc = rc_of(d, "mig_mode")) return rc;
  *current = *pending = static_cast<unsigned>(num(key(d, "mig_mode")));
  return 0;
}
int nvmlDeviceGetMaxMigDeviceCount(void* d, unsigned* count) {
  if (int rc = rc_of(d, "mig_max")) return rc;
  *count = static_cast<unsigned>(num(key(d, "mig_max"), num(key(d, "mig_mode")) ? 7 : 0));
  return 0;
}
int nvmlDeviceGetMigDeviceHandleByIndex(void* d, unsigned slot, void** mig) {
  if (is_mig(d) || !num(key(d, "mig_mode"))) return 3;
  if (get(id_of(d) + "/" + std::to_string(slot) + ".uuid").empty()) return 6;  // an empty slot
  *mig = reinterpret_cast<void*>(kMigBase + index_of(d) * 256 + slot);
  return 0;
}
int nvmlDeviceGetGpuInstanceId(void* d, unsigned* id) {
  if (!is_mig(d)) return 3;
  *id = static_cast<unsigned>(num(key(d, "gi")));
  return 0;
}
int nvmlDeviceGetComputeInstanceId(void* d, unsigned* id) {
  if (!is_mig(d)) return 3;
  *id = static_cast<unsigned>(num(key(d, "ci")));
  return 0;
}

struct AccountingStats {
  unsigned gpu_utilization, memory_utilization;
  unsigned long long max_memory_usage, time, start_time;
  unsigned is_running, reserved[5];
};
static_assert(sizeof(AccountingStats) == 56, "nvmlAccountingStats_t is 56 bytes");
int nvmlDeviceGetAccountingMode(void* d, int* mode) {
  if (int rc = rc_of(d, "accounting_mode")) return rc;
  *mode = static_cast<int>(num(key(d, "accounting")));
  return 0;
}
int nvmlDeviceGetAccountingStats(void* d, unsigned pid, AccountingStats* out) {
  if (int rc = rc_of(d, "accounting_stats")) return rc;
  if (!num(key(d, "accounting"))) return 3;
  std::stringstream list(get(key(d, "acct")));
  std::string item;
  while (std::getline(list, item, ',')) {
    AccountingStats s{};
    unsigned p = 0;
    if (std::sscanf(item.c_str(), "%u:%u:%u:%llu:%llu", &p, &s.gpu_utilization, &s.memory_utilization, &s.max_memory_usage,
                    &s.time) != 5 || p != pid) {
      continue;
    }
    s.is_running = 1;
    *out = s;
    return 0;
  }
  return 6;  // no statistics of that pid
}
}  // extern "C"
