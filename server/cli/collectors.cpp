#include "server/cli/collectors.hpp"

#include "engine/collectors/gpu_collector.hpp"
#include "engine/collectors/host_collector.hpp"
#include "server/kubelet/kubelet_collector.hpp"
#include "server/scrape/scrape_collector.hpp"

namespace perfscope::server {

namespace {

std::unique_ptr<Collector> build_host(const AppConfig& config, const CollectorDeps&) {
  return std::make_unique<HostCollector>(HostPaths{config.engine.procfs, config.engine.sysfs});
}

std::unique_ptr<Collector> build_nvidia(const AppConfig& config, const CollectorDeps& deps) {
  GpuCollectorOptions options;
  options.library_path = config.engine.nvml_library;
  options.proc_root = config.engine.procfs;
  options.process_series_limit = config.engine.gpu_process_series_limit;
  options.process_interval = config.engine.gpu_process_interval;
  options.tracker = &deps.processes;
  options.peaks = config.engine.gpu_peaks;
  options.pods = config.engine.pod_resources_socket.empty() ? nullptr : &deps.pods;
  options.process_thread = true;  // the driver's per-process calls stay out of the sampler's pass
  return std::make_unique<GpuCollector>(options);
}

std::unique_ptr<Collector> build_scrape(const AppConfig& config, const CollectorDeps& deps) {
  return std::make_unique<ScrapeCollector>(config.engine.scrape_targets, deps.store);
}

std::unique_ptr<Collector> build_kubelet(const AppConfig& config, const CollectorDeps& deps) {
  return std::make_unique<KubeletCollector>(config.engine.pod_resources_socket, config.engine.pod_resources_interval, deps.pods);
}

constexpr CollectorSpec kCollectors[] = {
    {"host", "--enable-host-collector", [](const AppConfig& c) { return c.engine.enable_host_collector; }, build_host},
    {"nvidia", "--enable-gpu-collector", [](const AppConfig& c) { return c.engine.enable_gpu_collector; }, build_nvidia},
    {"scrape", "--scrape", [](const AppConfig& c) { return !c.engine.scrape_targets.empty(); }, build_scrape},
    {"kubelet", "--pod-resources-socket", [](const AppConfig& c) { return !c.engine.pod_resources_socket.empty(); },
     build_kubelet},
};

}  // namespace

std::span<const CollectorSpec> collector_specs() { return kCollectors; }

}  // namespace perfscope::server
