#include "engine/collectors/pod_directory.hpp"

#include <algorithm>
#include <set>

namespace perfscope {

namespace {

// Index ids ("0", "1") are only taken from NVIDIA's resources: other device plugins number
// their own devices too.
bool nvidia_resource(std::string_view resource) { return resource.starts_with("nvidia.com/"); }

}  // namespace

bool device_id_names_gpu(std::string_view device_id, std::string_view uuid, std::string_view index) {
  if (!uuid.empty() && device_id.starts_with(uuid)) {
    std::string_view rest = device_id.substr(uuid.size());
    return rest.empty() || rest.starts_with("::");
  }
  return !index.empty() && device_id == index;
}

void PodDirectory::replace(std::vector<PodDevices> devices, TimestampNs now_ns) {
  std::set<std::pair<std::string, std::string>> pods;
  std::size_t gpu_devices = 0;
  for (const PodDevices& d : devices) {
    pods.emplace(d.ref.namespace_name, d.ref.pod);
    if (nvidia_resource(d.resource)) gpu_devices += d.device_ids.size();
  }
  std::lock_guard lock(mu_);
  devices_ = std::move(devices);
  state_.ever_read = true;
  state_.last_ok_ns = state_.last_try_ns = now_ns;
  state_.pods = pods.size();
  state_.gpu_devices = gpu_devices;
  state_.error.clear();
}

void PodDirectory::failed(std::string why, TimestampNs now_ns) {
  std::lock_guard lock(mu_);
  state_.last_try_ns = now_ns;
  state_.error = std::move(why);
}

std::vector<PodRef> PodDirectory::holders(std::string_view uuid, std::string_view index) const {
  std::vector<PodRef> out;
  {
    std::lock_guard lock(mu_);
    for (const PodDevices& d : devices_) {
      if (!nvidia_resource(d.resource)) continue;
      for (const std::string& id : d.device_ids) {
        if (device_id_names_gpu(id, uuid, index)) {
          out.push_back(d.ref);
          break;
        }
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<PodRef> process_holder(const std::vector<PodRef>& gpu_holders, bool in_pod, std::size_t pods_on_gpu) {
  // A host process on a GPU a pod holds is not the pod's; on a shared GPU, or one processes of
  // two pods use, whose is which is unknown.
  if (!in_pod || gpu_holders.size() != 1 || pods_on_gpu != 1) return std::nullopt;
  return gpu_holders.front();
}

PodDirectory::State PodDirectory::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

}  // namespace perfscope
