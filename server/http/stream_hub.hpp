// StreamHub: fans each sampling pass out to the WebSocket clients of /api/v1/stream.
// A pass is serialized once into one JSON item per series (shared, immutable); each
// session then picks the items its subscription matches, on its own strand.
//
// Thread-safety: publish() from the sampler thread; join/leave/close_all/stats from any
// thread. Sessions are held weakly: the hub never keeps a closed client alive.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/analysis/anomaly_monitor.hpp"
#include "engine/analysis/gpu_alerts.hpp"
#include "engine/series/series_store.hpp"

namespace perfscope::server {

class WebSocketSession;

// A series as the stream describes it, built once per series.
struct StreamSeries {
  SeriesKey key;
  std::string canonical;
  std::string item_prefix;  // `{"series":…,"name":…,"labels":{…},"value":`
};

// One pass, ready to send: items[i] is the JSON object for series[i].
struct PreparedBatch {
  TimestampNs ts_ns = 0;
  std::vector<std::shared_ptr<const StreamSeries>> series;
  std::vector<std::string> items;
};

class StreamHub {
 public:
  explicit StreamHub(const SeriesStore& store) : store_(store) {}

  void join(const std::shared_ptr<WebSocketSession>& session);
  void leave(const WebSocketSession* session);
  void publish(const std::shared_ptr<const SampleBatch>& batch);
  // Producers' events were committed: the next publish() tells every stream client with a
  // {"type":"events"} message, so views of kernels, memory and inference can refresh.
  void notify_events() { events_pending_.store(true, std::memory_order_relaxed); }
  // Anomalies found in a pass go to every stream client as {"type":"alert",…} messages.
  void publish_alerts(const std::vector<Anomaly>& anomalies);
  void publish_alerts(const std::vector<GpuAlert>& alerts);
  // Asks every client to close with "going away" (shutdown).
  void close_all();

  std::size_t clients() const;
  // Messages dropped for slow clients since start, all sessions together.
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  void count_dropped(std::uint64_t n) { dropped_.fetch_add(n, std::memory_order_relaxed); }

 private:
  std::shared_ptr<const StreamSeries> describe(SeriesId id);  // sampler thread only
  void deliver_to_all(const std::vector<std::shared_ptr<const std::string>>& messages);

  const SeriesStore& store_;
  mutable std::mutex mu_;
  std::vector<std::weak_ptr<WebSocketSession>> sessions_;  // guarded by mu_
  std::vector<std::shared_ptr<const StreamSeries>> described_;  // by SeriesId; sampler thread only
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<bool> events_pending_{false};
};

}  // namespace perfscope::server
