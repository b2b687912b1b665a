// What the service reads: the database's readers and the live engine's parts, one struct the
// service's entry points share.
#pragma once

#include <vector>

#include "db/abtest_store.hpp"
#include "db/event_reader.hpp"
#include "db/series_history.hpp"
#include "engine/analysis/device_targets.hpp"
#include "engine/collectors/gpu_collector.hpp"
#include "engine/collectors/process_tracker.hpp"
#include "engine/events/memory_tracker.hpp"

namespace perfscope::service {

// What the service reads. Not owned; each must outlive the service. Null where a part of the
// server is off: no GPU collector (no devices), no A/B store (no A/B tests listed).
struct Sources {
  const db::EventReader* events = nullptr;
  const db::SeriesHistory* history = nullptr;
  const MemoryTracker* memory = nullptr;  // the live tracker (scopes by run or tags rebuild their own)
  const db::AbTestReader* abtests = nullptr;
  const GpuCollector* gpus = nullptr;
  const std::vector<analysis::DeviceTarget>* device_targets = nullptr;
  const ProcessTracker* processes = nullptr;  // the GPU processes running now (none: stored ones only)
};

}  // namespace perfscope::service
