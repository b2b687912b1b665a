// Every pair of whole GPUs as nvidia-smi topo -m shows it, and each GPU's active links.
#include <map>

#include "engine/collectors/gpu_device.hpp"

namespace perfscope {

using namespace gpu_detail;

std::vector<GpuLink> GpuCollector::read_topology() {
  const nvml::Api& a = lib_->api();
  std::vector<Gpu*> whole;  // MIG instances share their parent's links
  for (const auto& g : gpus_) {
    if (g->mig_slot < 0 && !g->lost) whole.push_back(g.get());
  }
  // Each GPU's active links by the PCI bus id at their other end, and those to NVSwitches (an
  // HGX board's GPUs reach each other through them: two GPUs on the switches are joined by the
  // links the less connected one has, as nvidia-smi topo -m shows them).
  std::map<std::size_t, std::map<std::string, unsigned>> links;
  std::map<std::size_t, unsigned> to_switch;
  for (std::size_t i = 0; i < whole.size() && a.nvlink_state && a.nvlink_remote_pci_info; ++i) {
    for (unsigned link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
      int active = 0, type = -1;
      nvml::PciInfo remote{};
      if (a.nvlink_state(whole[i]->handle, link, &active) != nvml::kSuccess || active != 1) continue;
      if (a.nvlink_remote_device_type &&
          a.nvlink_remote_device_type(whole[i]->handle, link, &type) == nvml::kSuccess && type == nvml::kNvLinkRemoteSwitch) {
        ++to_switch[i];
        whole[i]->nvlinks.emplace_back(link, "nvswitch");
        continue;
      }
      if (a.nvlink_remote_pci_info(whole[i]->handle, link, &remote) != nvml::kSuccess) continue;
      const std::string far = bus_key(text_of(remote.bus_id, sizeof remote.bus_id));
      ++links[i][far];
      std::string peer = "other";
      for (const Gpu* g : whole) {
        if (bus_key(g->info.pci_bus_id) == far) peer = g->info.index;
      }
      whole[i]->nvlinks.emplace_back(link, peer);
    }
  }
  // Each GPU's link peak: its active links at the per-link rate NVML gives for its first one
  // (a GPU's links run at one speed).
  for (Gpu* g : whole) {
    g->info.nvlinks = static_cast<unsigned>(g->nvlinks.size());
    if (g->nvlinks.empty() || !a.field_values) continue;
    for (unsigned field : {nvml::kFieldNvLinkGetSpeed, nvml::kFieldNvLinkSpeedCommon}) {
      nvml::FieldValue speed{};
      speed.field_id = field;
      speed.scope_id = field == nvml::kFieldNvLinkGetSpeed ? g->nvlinks.front().first : 0;
      if (a.field_values(g->handle, 1, &speed) == nvml::kSuccess && speed.nvml_return == nvml::kSuccess &&
          speed.value_type == 1 && speed.value.ui > 0) {
        g->info.nvlink_bytes_per_second_per_link = speed.value.ui * 1e6;
        break;
      }
    }
  }
  std::vector<GpuLink> out;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    for (std::size_t j = i + 1; j < whole.size(); ++j) {
      GpuLink l{whole[i]->info.index, whole[j]->info.index, 0, false, ""};
      if (auto it = links[i].find(bus_key(whole[j]->info.pci_bus_id)); it != links[i].end()) l.nvlinks = it->second;
      if (const unsigned switched = std::min(to_switch[i], to_switch[j]); switched > 0) {
        l.nvlinks += switched;
        l.via_nvswitch = true;
      }
      int level = -1;
      if (a.topology_common_ancestor && a.topology_common_ancestor(whole[i]->handle, whole[j]->handle, &level) == nvml::kSuccess) {
        l.pcie = level <= nvml::kTopologySingle     ? "PIX"
                 : level <= nvml::kTopologyMultiple ? "PXB"
                 : level <= nvml::kTopologyHostBridge ? "PHB"
                 : level <= nvml::kTopologyNode       ? "NODE"
                                                      : "SYS";
      }
      out.push_back(std::move(l));
    }
  }
  return out;
}

}  // namespace perfscope
