// PodDirectory: which Kubernetes pod and container holds which GPU, as the kubelet's
// PodResources API last said (server/kubelet fills it; the GPU process reader reads it). A GPU
// process is a pod's when its cgroup puts it in a pod, exactly one container holds its GPU, and
// the GPU's processes in pods are all of one pod (by their cgroups' pod UIDs). PodResources
// gives no pod UIDs, so a GPU several containers share (time-slicing replicas), or one a process
// of another pod also uses (a pod that sees every GPU, an MPS server), names no one.
//
// Device ids are matched as NVIDIA's device plugin writes them: the GPU's UUID (its default),
// the UUID with a replica suffix ("GPU-…::2", time-slicing), or the GPU's index (the plugin's
// index strategy).
//
// Thread-safety: every method is safe from any thread (one mutex); replace() swaps the whole
// answer, so readers never see half of one.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/clock.hpp"

namespace perfscope {

struct PodRef {
  std::string namespace_name, pod, container;
  bool operator==(const PodRef&) const = default;
  auto operator<=>(const PodRef&) const = default;
};

// One container's devices of one resource, as PodResources lists them.
struct PodDevices {
  PodRef ref;
  std::string resource;  // e.g. "nvidia.com/gpu"
  std::vector<std::string> device_ids;
};

class PodDirectory {
 public:
  void replace(std::vector<PodDevices> devices, TimestampNs now_ns);
  // The last refresh failed: the previous answer stays (pods rarely move), the error is kept.
  void failed(std::string why, TimestampNs now_ns);

  // The containers holding the GPU with this UUID or index, sorted; empty when none or never read.
  std::vector<PodRef> holders(std::string_view uuid, std::string_view index) const;

  struct State {
    bool ever_read = false;
    TimestampNs last_ok_ns = 0, last_try_ns = 0;
    std::size_t pods = 0, gpu_devices = 0;  // in the last answer
    std::string error;                      // the last try's, empty when it succeeded
  };
  State state() const;

 private:
  mutable std::mutex mu_;
  std::vector<PodDevices> devices_;  // guarded by mu_
  State state_;                      // guarded by mu_
};

// The one container a process on a GPU with these holders belongs to, per the rule above
// (`in_pod`: its cgroup puts it in a pod; `pods_on_gpu`: the distinct pod UIDs of the GPU's
// processes).
std::optional<PodRef> process_holder(const std::vector<PodRef>& gpu_holders, bool in_pod, std::size_t pods_on_gpu);

// Whether a device id of the plugin names this GPU (UUID, UUID::replica, or index).
bool device_id_names_gpu(std::string_view device_id, std::string_view uuid, std::string_view index);

}  // namespace perfscope
