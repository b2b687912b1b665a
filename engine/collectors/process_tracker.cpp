#include "engine/collectors/process_tracker.hpp"

#include <algorithm>
#include <set>

namespace perfscope {

namespace {
// The kubelet's names for a process stay once known: a reading taken before its first answer
// (after a restart) or while it is unreachable has none, and is the same pod all the same.
void take_identity(ProcessIdentity& into, const ProcessIdentity& from) {
  ContainerIdentity before = std::move(into.container);
  into = from;
  ContainerIdentity& now = into.container;
  if (now.pod_name.empty() && !before.pod_name.empty() && now.pod_uid == before.pod_uid) {
    now.pod_namespace = std::move(before.pod_namespace);
    now.pod_name = std::move(before.pod_name);
    now.name = std::move(before.name);
  }
}
}  // namespace

void GpuProcessRecord::merge(const GpuProcessRecord& o) {
  if (first_seen_ns == 0 || (o.first_seen_ns != 0 && o.first_seen_ns < first_seen_ns)) first_seen_ns = o.first_seen_ns;
  if (o.last_seen_ns >= last_seen_ns) {
    last_seen_ns = o.last_seen_ns;
    running = o.running;
    if (!o.identity.command.empty()) take_identity(identity, o.identity);
    visible = o.visible;
  }
  observed_seconds += o.observed_seconds;
  memory_byte_seconds += o.memory_byte_seconds;
  peak_memory_bytes = std::max(peak_memory_bytes, o.peak_memory_bytes);
  sm_observed_seconds += o.sm_observed_seconds;
  gpu_seconds += o.gpu_seconds;
  max_sm_ratio = std::max(max_sm_ratio, o.max_sm_ratio);
  energy_joules += o.energy_joules;
  cpu_seconds += o.cpu_seconds;
  peak_rss_bytes = std::max(peak_rss_bytes, o.peak_rss_bytes);
}

void ProcessTracker::observe(TimestampNs now_ns, const std::string& gpu_uuid, const std::string& gpu,
                             std::optional<double> interval_energy_joules,
                             const std::vector<GpuProcessReading>& processes) {
  std::lock_guard lock(mu_);
  Gpu& g = gpus_[gpu_uuid];
  // The readings describe the interval that ends now.
  const double dt = g.last_ns && now_ns > *g.last_ns
                        ? static_cast<double>(std::min(now_ns - *g.last_ns, kMaxIntervalNs)) / 1e9
                        : 0.0;
  g.last_ns = now_ns;
  double sm_total = 0;
  for (const GpuProcessReading& p : processes) sm_total += p.sm_ratio.value_or(0);
  const double energy = dt > 0 ? interval_energy_joules.value_or(0.0) : 0.0;
  if (sm_total <= 0) g.unattributed_joules += energy;

  std::set<std::string> seen;
  for (const GpuProcessReading& p : processes) {
    const std::string key = p.visible ? p.identity.key() : std::to_string(p.identity.pid) + "-?";
    seen.insert(key);
    auto [it, fresh] = g.live.try_emplace(key);
    GpuProcessRecord& r = it->second;
    if (fresh) {
      r.gpu_uuid = gpu_uuid;
      r.gpu = gpu;
      r.key = key;
      r.first_seen_ns = now_ns;
    }
    take_identity(r.identity, p.identity);
    r.last = p;
    r.visible = p.visible;
    r.running = true;
    r.last_seen_ns = now_ns;
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, p.memory_bytes);
    // The interval counts for every process listed at its end, one seen for the first time
    // included (it ran during it), so the shares of an interval add up to the board's energy.
    r.observed_seconds += dt;
    r.memory_byte_seconds += p.memory_bytes * dt;
    if (p.sm_ratio) {
      r.sm_observed_seconds += dt;
      r.gpu_seconds += *p.sm_ratio * dt;
      if (sm_total > 0) r.energy_joules += energy * (*p.sm_ratio / sm_total);
    }
    if (p.sm_ratio) r.max_sm_ratio = std::max(r.max_sm_ratio, *p.sm_ratio);
    if (p.rss_bytes) r.peak_rss_bytes = std::max(r.peak_rss_bytes, *p.rss_bytes);
    if (p.cpu_seconds) {
      auto [cpu, first] = g.last_cpu.try_emplace(key, *p.cpu_seconds);
      if (!first && *p.cpu_seconds >= cpu->second) r.cpu_seconds += *p.cpu_seconds - cpu->second;
      cpu->second = *p.cpu_seconds;
    }
  }
  for (auto it = g.live.begin(); it != g.live.end();) {
    if (seen.contains(it->first)) {
      ++it;
      continue;
    }
    it->second.running = false;
    if (finished_.size() >= kMaxFinished) finished_.erase(finished_.begin());
    finished_.push_back(std::move(it->second));
    g.last_cpu.erase(it->first);
    it = g.live.erase(it);
  }
}

std::vector<GpuProcessRecord> ProcessTracker::running() const {
  std::lock_guard lock(mu_);
  std::vector<GpuProcessRecord> out;
  for (const auto& [uuid, g] : gpus_) {
    for (const auto& [key, r] : g.live) out.push_back(r);
  }
  return out;
}

std::vector<GpuProcessRecord> ProcessTracker::take_finished() {
  std::lock_guard lock(mu_);
  return std::exchange(finished_, {});
}

std::map<std::string, double> ProcessTracker::unattributed_joules() const {
  std::lock_guard lock(mu_);
  std::map<std::string, double> out;
  for (const auto& [uuid, g] : gpus_) out[uuid] = g.unattributed_joules;
  return out;
}

}  // namespace perfscope
