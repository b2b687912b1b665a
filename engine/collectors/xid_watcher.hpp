// XidWatcher: the driver's Xid errors (NVML's critical-error events), counted per GPU and Xid
// number as they happen, as dcgm-exporter's DCGM_FI_DEV_XID_ERRORS reports them. An Xid is the
// driver's report of a fault: a page fault in a kernel (13, 31), a GPU that stopped (43), ECC
// errors (48, 63, 64, 94, 95), NVLink (74), a GPU off the bus (79), GSP timeouts (119, 120).
// NVML delivers them only to a waiting event set, so a thread of its own waits on one for every
// GPU that reports them; the collector's pass reads the counts.
//
// Thread-safety: counts() and status() from any thread; the thread starts in the constructor
// and stops (within one wait, 200 ms) in the destructor.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/clock.hpp"
#include "engine/collectors/nvml.hpp"

namespace perfscope {

struct XidCount {
  std::string gpu, uuid;  // the GPU's index label and UUID
  unsigned long long xid = 0;
  double count = 0;
  TimestampNs last_ns = 0;  // when the newest one arrived
};

class XidWatcher {
 public:
  struct Gpu {
    nvml::Device handle = nullptr;
    std::string index, uuid;
  };
  // Registers every GPU whose driver reports Xid events; watches nothing when none does.
  XidWatcher(const nvml::Api& api, std::vector<Gpu> gpus);
  ~XidWatcher();
  XidWatcher(const XidWatcher&) = delete;
  XidWatcher& operator=(const XidWatcher&) = delete;

  std::vector<XidCount> counts() const;
  // Whether any GPU is watched, and what was found ("2 GPUs" or why not).
  bool watching() const { return set_ != nullptr; }
  const std::string& status() const { return status_; }

 private:
  void run();

  const nvml::Api& api_;
  std::vector<Gpu> gpus_;  // those registered; immutable after the constructor
  nvml::EventSet set_ = nullptr;
  std::string status_;
  mutable std::mutex mu_;
  struct Seen {
    double count = 0;
    TimestampNs last_ns = 0;
  };
  std::map<std::pair<std::size_t, unsigned long long>, Seen> counts_;  // (gpus_ position, xid); guarded by mu_
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace perfscope
