#include "engine/analysis/gpu_alerts.hpp"
#include "engine/series/metric_names.hpp"

#include <cstdio>
#include <cstdlib>

namespace perfscope {

const char* xid_meaning(unsigned long long xid) {
  switch (xid) {
    case 13: return "graphics engine exception (an illegal access or instruction in a kernel)";
    case 31: return "GPU memory page fault (an illegal address in a kernel)";
    case 43: return "GPU stopped processing (the program's fault, usually)";
    case 45: return "preemptive cleanup after an earlier error";
    case 48: return "double-bit ECC error";
    case 61: case 62: return "internal microcontroller error";
    case 63: return "ECC page retirement or row remapping recorded";
    case 64: return "ECC page retirement or row remapping failed";
    case 68: return "video processor exception";
    case 69: return "graphics engine class error";
    case 74: return "NVLink error";
    case 79: return "GPU has fallen off the bus";
    case 92: return "high single-bit ECC error rate";
    case 94: return "contained ECC error (the affected application must restart)";
    case 95: return "uncontained ECC error (the GPU must be reset)";
    case 109: return "context switch timeout";
    case 119: return "GSP RPC timeout";
    case 120: return "GSP error";
    case 140: return "unrecovered ECC error";
    default: return "";
  }
}


std::vector<GpuAlert> GpuAlerts::observe(const SampleBatch& batch) {
  std::vector<GpuAlert> out;
  for (const auto& [id, value] : batch.values) {
    if (id >= watch_.size()) {
      watch_.resize(static_cast<std::size_t>(id) + 1, Watch::kUnknown);
      active_.resize(watch_.size(), false);
      last_.resize(watch_.size(), 0.0);
    }
    if (watch_[id] == Watch::kUnknown) {
      watch_[id] = Watch::kNone;
      if (auto snap = store_.snapshot(id)) {
        const SeriesKey& k = snap->key;
        if (k.name == metric_names::kGpuPower && power_target_) watch_[id] = Watch::kPower;
        if (k.name == metric_names::kGpuXidErrors) watch_[id] = Watch::kXid;
        if (k.name == "gpu_throttle_active") {
          for (const auto& [label, v] : k.labels) {
            if (label == "reason" && (v == "sw_thermal_slowdown" || v == "hw_thermal_slowdown" || v == "hw_slowdown")) {
              watch_[id] = Watch::kThermal;
            }
          }
        }
      }
    }
    if (watch_[id] == Watch::kNone) continue;
    bool fire = false;
    if (watch_[id] == Watch::kXid) {
      // A count appears with its first Xid (perfscope counts from its start): any growth is news.
      fire = value > last_[id];
      last_[id] = value;
    } else {
      const bool over = watch_[id] == Watch::kPower ? value > *power_target_ : value > 0;
      fire = over && !active_[id];  // the rising edge
      active_[id] = over;
    }
    if (!fire) continue;
    auto snap = store_.snapshot(id);
    if (!snap) continue;
    GpuAlert a;
    a.ts_ns = batch.ts_ns;
    a.series = snap->key;
    a.value = value;
    std::string gpu, reason, xid;
    for (const auto& [label, v] : snap->key.labels) {
      if (label == "gpu") gpu = v;
      if (label == "reason") reason = v;
      if (label == "xid") xid = v;
    }
    char text[200];
    if (watch_[id] == Watch::kXid) {
      a.kind = "xid";
      const char* meaning = xid_meaning(std::strtoull(xid.c_str(), nullptr, 10));
      std::snprintf(text, sizeof text, "GPU %s reported Xid %s%s%s", gpu.c_str(), xid.c_str(), *meaning ? ": " : "", meaning);
    } else if (watch_[id] == Watch::kPower) {
      a.kind = "power_target";
      a.threshold = *power_target_;
      std::snprintf(text, sizeof text, "GPU %s draws %.0f W, above the %.0f W power target", gpu.c_str(), value,
                    *power_target_);
    } else {
      a.kind = "thermal_throttling";
      std::snprintf(text, sizeof text, "GPU %s is thermally throttled (%s)", gpu.c_str(), reason.c_str());
    }
    a.message = text;
    out.push_back(std::move(a));
  }
  kept_.add(out);
  return out;
}

std::vector<GpuAlert> GpuAlerts::recent(TimestampNs from_ns, TimestampNs to_ns) const {
  return kept_.between(from_ns, to_ns);
}

}  // namespace perfscope
