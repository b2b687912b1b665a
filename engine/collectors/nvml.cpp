#include "engine/collectors/nvml.hpp"

#include <dlfcn.h>

#include <initializer_list>
#include <vector>

namespace perfscope::nvml {
namespace {

// The first of `names` the library exports, cast to the pointer's type.
template <typename Fn>
void resolve(void* handle, Fn*& out, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* sym = dlsym(handle, name)) {
      out = reinterpret_cast<Fn*>(sym);
      return;
    }
  }
  out = nullptr;
}

}  // namespace

Result<std::unique_ptr<Library>> Library::load(const std::string& path) {
  void* handle = nullptr;
  std::string used;
  std::string why;
  const std::vector<std::string> candidates =
      path.empty() ? std::vector<std::string>{"libnvidia-ml.so.1", "libnvidia-ml.so"} : std::vector<std::string>{path};
  for (const std::string& candidate : candidates) {
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      used = candidate;
      break;
    }
    const char* err = dlerror();
    why = err ? err : candidate + " could not be loaded";
  }
  if (!handle) return Status::unavailable("NVML is not available: " + why);
  std::unique_ptr<Library> lib(new Library(handle, used));
  Api& a = lib->api_;
  resolve(handle, a.init, {"nvmlInit_v2", "nvmlInit"});
  resolve(handle, a.shutdown, {"nvmlShutdown"});
  resolve(handle, a.error_string, {"nvmlErrorString"});
  resolve(handle, a.system_driver_version, {"nvmlSystemGetDriverVersion"});
  resolve(handle, a.system_nvml_version, {"nvmlSystemGetNVMLVersion"});
  resolve(handle, a.device_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  resolve(handle, a.device_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  resolve(handle, a.device_name, {"nvmlDeviceGetName"});
  resolve(handle, a.device_uuid, {"nvmlDeviceGetUUID"});
  resolve(handle, a.device_pci_info, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  resolve(handle, a.utilization, {"nvmlDeviceGetUtilizationRates"});
  resolve(handle, a.encoder_utilization, {"nvmlDeviceGetEncoderUtilization"});
  resolve(handle, a.decoder_utilization, {"nvmlDeviceGetDecoderUtilization"});
  resolve(handle, a.memory_v2, {"nvmlDeviceGetMemoryInfo_v2"});
  resolve(handle, a.memory_v1, {"nvmlDeviceGetMemoryInfo"});
  resolve(handle, a.power_usage, {"nvmlDeviceGetPowerUsage"});
  resolve(handle, a.power_limit, {"nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementLimit"});
  resolve(handle, a.total_energy, {"nvmlDeviceGetTotalEnergyConsumption"});
  resolve(handle, a.temperature, {"nvmlDeviceGetTemperature"});
  resolve(handle, a.temperature_threshold, {"nvmlDeviceGetTemperatureThreshold"});
  resolve(handle, a.clock, {"nvmlDeviceGetClockInfo"});
  resolve(handle, a.max_clock, {"nvmlDeviceGetMaxClockInfo"});
  resolve(handle, a.memory_bus_width, {"nvmlDeviceGetMemoryBusWidth"});
  resolve(handle, a.clock_event_reasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve(handle, a.field_values, {"nvmlDeviceGetFieldValues"});
  resolve(handle, a.compute_processes,
          {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  resolve(handle, a.process_utilization, {"nvmlDeviceGetProcessUtilization"});
  resolve(handle, a.gpm_query_support, {"nvmlGpmQueryDeviceSupport"});
  resolve(handle, a.gpm_sample_alloc, {"nvmlGpmSampleAlloc"});
  resolve(handle, a.gpm_sample_free, {"nvmlGpmSampleFree"});
  resolve(handle, a.gpm_sample_get, {"nvmlGpmSampleGet"});
  resolve(handle, a.gpm_metrics_get, {"nvmlGpmMetricsGet"});
  resolve(handle, a.accounting_mode, {"nvmlDeviceGetAccountingMode"});
  resolve(handle, a.accounting_stats, {"nvmlDeviceGetAccountingStats"});
  resolve(handle, a.mig_mode, {"nvmlDeviceGetMigMode"});
  resolve(handle, a.max_mig_devices, {"nvmlDeviceGetMaxMigDeviceCount"});
  resolve(handle, a.mig_device_by_index, {"nvmlDeviceGetMigDeviceHandleByIndex"});
  resolve(handle, a.gpu_instance_id, {"nvmlDeviceGetGpuInstanceId"});
  resolve(handle, a.compute_instance_id, {"nvmlDeviceGetComputeInstanceId"});
  resolve(handle, a.topology_common_ancestor, {"nvmlDeviceGetTopologyCommonAncestor"});
  resolve(handle, a.nvlink_state, {"nvmlDeviceGetNvLinkState"});
  resolve(handle, a.nvlink_remote_pci_info, {"nvmlDeviceGetNvLinkRemotePciInfo_v2"});
  resolve(handle, a.nvlink_remote_device_type, {"nvmlDeviceGetNvLinkRemoteDeviceType"});
  resolve(handle, a.event_set_create, {"nvmlEventSetCreate"});
  resolve(handle, a.event_set_free, {"nvmlEventSetFree"});
  resolve(handle, a.supported_event_types, {"nvmlDeviceGetSupportedEventTypes"});
  resolve(handle, a.register_events, {"nvmlDeviceRegisterEvents"});
  resolve(handle, a.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  if (!a.init || !a.device_count || !a.device_by_index) {
    return Status::unavailable("NVML at " + used + " lacks nvmlInit, nvmlDeviceGetCount or nvmlDeviceGetHandleByIndex");
  }
  if (int rc = a.init(); rc != kSuccess) {
    std::string reason = lib->describe(rc);
    a.shutdown = nullptr;  // nothing to shut down
    return Status::unavailable("nvmlInit failed: " + reason);
  }
  return lib;
}

Library::~Library() {
  if (api_.shutdown) api_.shutdown();
  if (handle_) dlclose(handle_);
}

std::string Library::describe(int code) const {
  std::string text = "NVML error " + std::to_string(code);
  if (api_.error_string) {
    if (const char* s = api_.error_string(code)) text += std::string(" (") + s + ")";
  }
  return text;
}

}  // namespace perfscope::nvml
