#include "server/http/stream_hub.hpp"

#include <nlohmann/json.hpp>

#include "server/http/websocket_session.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

void StreamHub::join(const std::shared_ptr<WebSocketSession>& session) {
  std::lock_guard lock(mu_);
  sessions_.push_back(session);
}

void StreamHub::leave(const WebSocketSession* session) {
  std::lock_guard lock(mu_);
  std::erase_if(sessions_, [&](const std::weak_ptr<WebSocketSession>& w) {
    auto s = w.lock();
    return !s || s.get() == session;
  });
}

std::size_t StreamHub::clients() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& w : sessions_) n += w.expired() ? 0 : 1;
  return n;
}

std::shared_ptr<const StreamSeries> StreamHub::describe(SeriesId id) {
  if (id >= described_.size()) described_.resize(id + 1);
  if (!described_[id]) {
    auto snap = store_.snapshot(id);
    if (!snap) return nullptr;
    auto s = std::make_shared<StreamSeries>();
    s->key = snap->key;
    s->canonical = snap->canonical;
    nlohmann::json head = {{"series", s->canonical}, {"name", s->key.name}, {"labels", labels_to_json(s->key.labels)}};
    // Label values come from sysfs and may hold invalid UTF-8: replace, never throw.
    std::string text = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text.pop_back();  // reopen the object to append the value
    s->item_prefix = text + ",\"value\":";
    described_[id] = std::move(s);
  }
  return described_[id];
}

void StreamHub::publish(const std::shared_ptr<const SampleBatch>& batch) {
  std::vector<std::shared_ptr<WebSocketSession>> targets;
  {
    std::lock_guard lock(mu_);
    for (const auto& w : sessions_) {
      if (auto s = w.lock()) targets.push_back(std::move(s));
    }
  }
  if (targets.empty()) return;

  if (events_pending_.exchange(false, std::memory_order_relaxed)) {
    auto note = std::make_shared<const std::string>("{\"type\":\"events\",\"ts_ns\":" + std::to_string(batch->ts_ns) + "}");
    for (const auto& s : targets) s->deliver_text(note);
  }

  auto prepared = std::make_shared<PreparedBatch>();
  prepared->ts_ns = batch->ts_ns;
  prepared->series.reserve(batch->values.size());
  prepared->items.reserve(batch->values.size());
  for (const auto& [id, value] : batch->values) {
    auto series = describe(id);
    if (!series) continue;
    prepared->items.push_back(series->item_prefix + nlohmann::json(value).dump() + "}");
    prepared->series.push_back(std::move(series));
  }
  std::shared_ptr<const PreparedBatch> shared = std::move(prepared);
  for (const auto& s : targets) s->deliver(shared);
}

void StreamHub::deliver_to_all(const std::vector<std::shared_ptr<const std::string>>& messages) {
  std::vector<std::shared_ptr<WebSocketSession>> targets;
  {
    std::lock_guard lock(mu_);
    for (const auto& w : sessions_) {
      if (auto s = w.lock()) targets.push_back(std::move(s));
    }
  }
  for (const auto& text : messages) {
    for (const auto& s : targets) s->deliver_text(text);
  }
}

void StreamHub::publish_alerts(const std::vector<Anomaly>& anomalies) {
  std::vector<std::shared_ptr<const std::string>> messages;
  for (const Anomaly& a : anomalies) {
    messages.push_back(std::make_shared<const std::string>(
        nlohmann::json{{"type", "alert"}, {"kind", "anomaly"}, {"ts_ns", a.ts_ns}, {"series", a.key.canonical()},
                       {"value", a.value}, {"score", a.score}, {"center", a.center}}
            .dump()));
  }
  deliver_to_all(messages);
}

void StreamHub::publish_alerts(const std::vector<GpuAlert>& alerts) {
  std::vector<std::shared_ptr<const std::string>> messages;
  for (const GpuAlert& a : alerts) {
    messages.push_back(std::make_shared<const std::string>(
        nlohmann::json{{"type", "alert"}, {"kind", a.kind}, {"ts_ns", a.ts_ns}, {"series", a.series.canonical()},
                       {"value", a.value}, {"threshold", a.threshold}, {"message", a.message}}
            .dump()));
  }
  deliver_to_all(messages);
}

void StreamHub::close_all() {
  std::vector<std::shared_ptr<WebSocketSession>> targets;
  {
    std::lock_guard lock(mu_);
    for (const auto& w : sessions_) {
      if (auto s = w.lock()) targets.push_back(std::move(s));
    }
  }
  for (const auto& s : targets) s->close_going_away();
}

}  // namespace perfscope::server
