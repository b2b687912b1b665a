// Nvml: NVIDIA's management library, loaded at run time. No NVML header or dev package is
// needed to build perfscope: the few types and entry points it uses are declared here, to
// the layouts NVIDIA publishes, and resolved with dlsym — newest symbol first, older ones as
// fallbacks. A machine without the library simply has no NVIDIA GPU to report.
//
// Ownership: an Nvml owns the dlopen handle and the nvmlInit; its destructor shuts NVML down
// and unloads it. Calls are safe from any thread (NVML is thread-safe); the collector makes
// them from the sampler thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/base/status.hpp"

namespace perfscope::nvml {

// Return codes (nvmlReturn_t).
inline constexpr int kSuccess = 0;
inline constexpr int kNotSupported = 3;
inline constexpr int kNoPermission = 4;
inline constexpr int kNotFound = 6;
inline constexpr int kTimeout = 10;
inline constexpr int kInsufficientSize = 7;
inline constexpr int kFunctionNotFound = 13;
inline constexpr int kGpuIsLost = 15;
inline constexpr int kArgumentVersionMismatch = 25;

using Device = struct DeviceOpaque*;
using GpmSample = struct GpmSampleOpaque*;
using EventSet = struct EventSetOpaque*;

// Events (nvmlEventData_t: 32 bytes). An Xid's number is its event_data.
inline constexpr unsigned long long kEventXidCriticalError = 0x8;
struct EventData {
  Device device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned gpu_instance_id, compute_instance_id;
};
static_assert(sizeof(EventData) == 32);

struct Utilization {
  unsigned gpu;
  unsigned memory;
};
struct MemoryV1 {
  unsigned long long total, free, used;
};
struct MemoryV2 {
  unsigned version;
  unsigned long long total, reserved, free, used;
};
inline constexpr unsigned kMemoryV2Version = static_cast<unsigned>(sizeof(MemoryV2)) | (2u << 24);  // 0x02000028

struct PciInfo {  // nvmlPciInfo_t (v3)
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

struct ProcessInfo {  // nvmlProcessInfo_t (v3: 24 bytes with padding)
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};

struct AccountingStats {  // nvmlAccountingStats_t: 56 bytes
  unsigned gpu_utilization;     // % of the process's lifetime with a kernel of it running
  unsigned memory_utilization;  // % of its lifetime with device memory read or written
  unsigned long long max_memory_usage;  // bytes
  unsigned long long time_ms;           // its lifetime so far
  unsigned long long start_time_us;
  unsigned is_running;
  unsigned reserved[5];
};
static_assert(sizeof(AccountingStats) == 56);

struct ProcessUtilizationSample {  // nvmlProcessUtilizationSample_t: 32 bytes
  unsigned pid;
  unsigned long long timestamp_us;  // CPU (wall-clock) time of the sample
  unsigned sm, memory, encoder, decoder;  // percent
};

struct FieldValue {  // nvmlFieldValue_t: 40 bytes
  unsigned field_id;
  unsigned scope_id;
  long long timestamp_us;
  long long latency_us;
  int value_type;  // 0 double, 1 uint, 2 ulong, 3 ulonglong, 4 slonglong, 5 sint
  int nvml_return;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
  } value;
};
inline constexpr unsigned kFieldMemoryTemperature = 82;
inline constexpr unsigned kFieldPowerInstant = 186;
// NVLink speed per link and direction, MB/s: per link (scope: the link; what nvidia-smi nvlink -s
// shows), else the common speed of active links (older drivers; unsupported on recent ones).
inline constexpr unsigned kFieldNvLinkGetSpeed = 164;
inline constexpr unsigned kFieldNvLinkSpeedCommon = 90;

struct GpmSupport {
  unsigned version;  // 1
  unsigned is_supported_device;
};
struct GpmMetric {
  unsigned metric_id;
  int nvml_return;
  double value;
  struct {
    char* short_name;
    char* long_name;
    char* unit;
  } info;
};
// The metrics array grew across releases (98, 210, 333 entries) with the version left at 1:
// size it for the largest so any driver fills it in bounds.
inline constexpr unsigned kGpmMaxMetrics = 333;
struct GpmMetricsRequest {
  unsigned version;  // 1
  unsigned num_metrics;
  GpmSample sample1;
  GpmSample sample2;
  GpmMetric metrics[kGpmMaxMetrics];
};

// nvmlGpuTopologyLevel_t: the closest common ancestor of two GPUs on the PCIe tree.
inline constexpr int kTopologyInternal = 0, kTopologySingle = 10, kTopologyMultiple = 20, kTopologyHostBridge = 30,
                     kTopologyNode = 40, kTopologySystem = 50;
// NVML_NVLINK_MAX_LINKS: the links a GPU may have (18 on Hopper).
inline constexpr unsigned kNvLinkMaxLinks = 18;

// Clock types for nvmlDeviceGetClockInfo / GetMaxClockInfo.
inline constexpr int kClockGraphics = 0, kClockSm = 1, kClockMemory = 2;

// The resolved entry points. A null pointer: the library lacks that function.
struct Api {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*system_driver_version)(char*, unsigned) = nullptr;
  int (*system_nvml_version)(char*, unsigned) = nullptr;
  int (*device_count)(unsigned*) = nullptr;
  int (*device_by_index)(unsigned, Device*) = nullptr;
  int (*device_name)(Device, char*, unsigned) = nullptr;
  int (*device_uuid)(Device, char*, unsigned) = nullptr;
  int (*device_pci_info)(Device, PciInfo*) = nullptr;
  int (*utilization)(Device, Utilization*) = nullptr;
  // The video engines' busy percent over their sampling period (µs).
  int (*encoder_utilization)(Device, unsigned*, unsigned*) = nullptr;
  int (*decoder_utilization)(Device, unsigned*, unsigned*) = nullptr;
  int (*memory_v2)(Device, MemoryV2*) = nullptr;
  int (*memory_v1)(Device, MemoryV1*) = nullptr;
  int (*power_usage)(Device, unsigned*) = nullptr;
  int (*power_limit)(Device, unsigned*) = nullptr;  // enforced limit, mW
  int (*total_energy)(Device, unsigned long long*) = nullptr;
  int (*temperature)(Device, int, unsigned*) = nullptr;
  int (*temperature_threshold)(Device, int, unsigned*) = nullptr;
  int (*clock)(Device, int, unsigned*) = nullptr;
  int (*max_clock)(Device, int, unsigned*) = nullptr;
  int (*memory_bus_width)(Device, unsigned*) = nullptr;
  int (*clock_event_reasons)(Device, unsigned long long*) = nullptr;
  int (*field_values)(Device, int, FieldValue*) = nullptr;
  int (*compute_processes)(Device, unsigned*, ProcessInfo*) = nullptr;
  // Samples newer than the last timestamp seen; kNotFound when there is none.
  int (*process_utilization)(Device, ProcessUtilizationSample*, unsigned*, unsigned long long) = nullptr;
  int (*gpm_query_support)(Device, GpmSupport*) = nullptr;
  int (*gpm_sample_alloc)(GpmSample*) = nullptr;
  int (*gpm_sample_free)(GpmSample) = nullptr;
  int (*gpm_sample_get)(Device, GpmSample) = nullptr;
  int (*gpm_metrics_get)(GpmMetricsRequest*) = nullptr;
  // MIG: the mode (current, pending; 1 = enabled), how many instances a GPU can hold, an
  // instance's handle by slot (kNotFound for an empty slot), and its GPU/compute instance ids.
  // Accounting: whether the driver keeps per-process statistics (an administrator's setting,
  // never changed here) and one process's.
  int (*accounting_mode)(Device, int*) = nullptr;
  int (*accounting_stats)(Device, unsigned, AccountingStats*) = nullptr;
  int (*mig_mode)(Device, unsigned*, unsigned*) = nullptr;
  int (*max_mig_devices)(Device, unsigned*) = nullptr;
  int (*mig_device_by_index)(Device, unsigned, Device*) = nullptr;
  int (*gpu_instance_id)(Device, unsigned*) = nullptr;
  int (*compute_instance_id)(Device, unsigned*) = nullptr;
  // Topology: two GPUs' closest common PCIe ancestor (kTopology…); a link's state (1 active)
  // and the PCI device at its other end.
  int (*topology_common_ancestor)(Device, Device, int*) = nullptr;
  int (*nvlink_state)(Device, unsigned, int*) = nullptr;
  int (*nvlink_remote_pci_info)(Device, unsigned, PciInfo*) = nullptr;
  // nvmlIntNvLinkDeviceType_t: 0 a GPU, 1 an IBM NPU, 2 an NVSwitch (whose PCI info reads
  // FFFFFFFF:FF:FF.0), 0xFF unknown.
  int (*nvlink_remote_device_type)(Device, unsigned, int*) = nullptr;
  // Events: a set, the kinds a GPU can report, a GPU's kinds added to a set, and the next event
  // of a set within a timeout (kTimeout when none came).
  int (*event_set_create)(EventSet*) = nullptr;
  int (*event_set_free)(EventSet) = nullptr;
  int (*supported_event_types)(Device, unsigned long long*) = nullptr;
  int (*register_events)(Device, unsigned long long, EventSet) = nullptr;
  int (*event_set_wait)(EventSet, EventData*, unsigned) = nullptr;
};
inline constexpr int kNvLinkRemoteSwitch = 2;

class Library {
 public:
  // Loads `path`, or libnvidia-ml.so.1 then libnvidia-ml.so when empty, and initializes
  // NVML. Unavailable with the reason when the library, a required symbol or init fails.
  static Result<std::unique_ptr<Library>> load(const std::string& path);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const { return api_; }
  const std::string& path() const { return path_; }
  // "NVML error 15 (GPU is lost)".
  std::string describe(int code) const;

 private:
  Library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
  Api api_;
};

}  // namespace perfscope::nvml
