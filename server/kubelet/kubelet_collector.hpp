// KubeletCollector: the kubelet's PodResources answer kept current in a PodDirectory, on a
// thread of its own (a call to a busy kubelet must not hold up the sampler's pass), asked once
// at start and then every interval. Its pass reports whether the last call worked
// (`kubelet_pod_resources_up`); the GPU collector's process reader reads the directory.
//
// Thread-safety: collect() from the sampler's thread; sources() from any thread; the thread
// starts in the constructor and stops in the destructor.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "engine/collectors/pod_directory.hpp"
#include "engine/series/collector.hpp"

namespace perfscope::server {

class KubeletCollector final : public Collector {
 public:
  KubeletCollector(std::string socket_path, std::chrono::milliseconds interval, PodDirectory& directory);
  ~KubeletCollector() override;
  KubeletCollector(const KubeletCollector&) = delete;
  KubeletCollector& operator=(const KubeletCollector&) = delete;

  std::string_view name() const override { return "kubelet"; }
  std::vector<MetricFamily> families() const override;
  std::vector<SourceStatus> sources() const override;
  void collect(TimestampNs now_ns, std::vector<Reading>& out) override;

 private:
  void run();

  const std::string socket_path_;
  const std::chrono::milliseconds interval_;
  PodDirectory& directory_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;     // last: started once the rest is built
};

}  // namespace perfscope::server
