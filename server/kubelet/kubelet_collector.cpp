#include "server/kubelet/kubelet_collector.hpp"
#include "engine/base/thread_name.hpp"

#include "server/kubelet/pod_resources.hpp"

namespace perfscope::server {

namespace {
// A kubelet answers List in milliseconds; one that takes longer is stuck, and the next try comes.
constexpr std::chrono::milliseconds kCallTimeout{5000};
constexpr const char* kUp = "kubelet_pod_resources_up";
}  // namespace

KubeletCollector::KubeletCollector(std::string socket_path, std::chrono::milliseconds interval, PodDirectory& directory)
    : socket_path_(std::move(socket_path)), interval_(interval), directory_(directory), thread_([this] { run(); }) {}

KubeletCollector::~KubeletCollector() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void KubeletCollector::run() {
  name_this_thread("ps-kubelet");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    auto answer = list_pod_resources(socket_path_, kCallTimeout);
    if (answer.ok()) {
      directory_.replace(std::move(*answer), now_ns());
    } else {
      directory_.failed(answer.status().message(), now_ns());
    }
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

std::vector<MetricFamily> KubeletCollector::families() const {
  return {{kUp, "", MetricType::kGauge, "1 when the kubelet's PodResources API answered the last call, else 0"}};
}

std::vector<SourceStatus> KubeletCollector::sources() const {
  const PodDirectory::State s = directory_.state();
  if (!s.error.empty() && s.ever_read) {
    const long long age_s = (now_ns() - s.last_ok_ns) / 1'000'000'000;
    return {{"pod-resources", false,
             s.error + "; keeping its last answer (" + std::to_string(s.pods) + " pods), " + std::to_string(age_s) + " s old"}};
  }
  if (!s.error.empty()) return {{"pod-resources", false, s.error}};
  if (!s.ever_read) return {{"pod-resources", false, socket_path_ + ": not asked yet"}};
  return {{"pod-resources", true,
           socket_path_ + ": " + std::to_string(s.pods) + (s.pods == 1 ? " pod, " : " pods, ") + std::to_string(s.gpu_devices) + " NVIDIA devices held"}};
}

void KubeletCollector::collect(TimestampNs, std::vector<Reading>& out) {
  const PodDirectory::State s = directory_.state();
  if (s.last_try_ns == 0) return;  // not asked yet: no figure rather than a false 0
  out.push_back({SeriesKey(kUp, {}), s.error.empty() ? 1.0 : 0.0});
}

}  // namespace perfscope::server
