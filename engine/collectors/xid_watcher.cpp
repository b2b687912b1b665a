#include "engine/collectors/xid_watcher.hpp"
#include "engine/base/thread_name.hpp"

#include <chrono>

namespace perfscope {

namespace {
// How long one wait lasts: the longest a stop waits for the thread.
constexpr unsigned kWaitMs = 200;
// Distinct Xid numbers counted per GPU: a bound on the series, far above the catalogue's use.
constexpr std::size_t kMaxXidsPerGpu = 64;
}  // namespace

XidWatcher::XidWatcher(const nvml::Api& api, std::vector<Gpu> gpus) : api_(api) {
  if (!api_.event_set_create || !api_.register_events || !api_.event_set_wait || !api_.event_set_free) {
    status_ = "this NVML has no event API";
    return;
  }
  if (api_.event_set_create(&set_) != nvml::kSuccess) {
    set_ = nullptr;
    status_ = "nvmlEventSetCreate failed";
    return;
  }
  for (Gpu& g : gpus) {
    unsigned long long supported = 0;
    if (api_.supported_event_types && api_.supported_event_types(g.handle, &supported) == nvml::kSuccess &&
        !(supported & nvml::kEventXidCriticalError)) {
      continue;
    }
    if (api_.register_events(g.handle, nvml::kEventXidCriticalError, set_) == nvml::kSuccess) gpus_.push_back(std::move(g));
  }
  if (gpus_.empty()) {
    api_.event_set_free(set_);
    set_ = nullptr;
    status_ = "no GPU reports Xid events";
    return;
  }
  status_ = std::to_string(gpus_.size()) + (gpus_.size() == 1 ? " GPU" : " GPUs");
  thread_ = std::thread([this] { run(); });
}

XidWatcher::~XidWatcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (set_) api_.event_set_free(set_);
}

void XidWatcher::run() {
  name_this_thread("ps-xid");
  while (!stop_) {
    nvml::EventData e{};
    const int rc = api_.event_set_wait(set_, &e, kWaitMs);
    if (rc == nvml::kTimeout) continue;
    if (rc != nvml::kSuccess) {
      // A lost GPU makes every wait fail at once: pace the retries as a timeout would.
      std::this_thread::sleep_for(std::chrono::milliseconds(kWaitMs));
      continue;
    }
    if (!(e.event_type & nvml::kEventXidCriticalError)) continue;
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      if (gpus_[i].handle != e.device) continue;
      const TimestampNs now = now_ns();
      std::lock_guard lock(mu_);
      auto it = counts_.find({i, e.event_data});
      if (it != counts_.end()) {
        it->second.count += 1;
        it->second.last_ns = now;
      } else {
        std::size_t distinct = 0;
        for (const auto& [key, n] : counts_) distinct += key.first == i ? 1 : 0;
        if (distinct < kMaxXidsPerGpu) counts_[{i, e.event_data}] = Seen{1, now};
      }
    }
  }
}

std::vector<XidCount> XidWatcher::counts() const {
  std::lock_guard lock(mu_);
  std::vector<XidCount> out;
  out.reserve(counts_.size());
  for (const auto& [key, n] : counts_) out.push_back({gpus_[key.first].index, gpus_[key.first].uuid, key.second, n.count, n.last_ns});
  return out;
}

}  // namespace perfscope
