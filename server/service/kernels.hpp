// The kernel tables (the analysis's top kernels, GET /api/v1/kernels): each kernel's summary
// over a window with its share of all kernel time and, where it reported its work (FLOPs,
// bytes), its place under each GPU's roofline.
//
// Functions over the sources; thread-safe as the readers are.
#pragma once

#include <cstddef>
#include <vector>

#include "db/event_scope.hpp"
#include "db/kernel_reader.hpp"
#include "db/time_range.hpp"
#include "server/service/device_efficiency.hpp"
#include "server/service/sources.hpp"

namespace perfscope::service {

struct KernelRow {
  db::KernelSummary summary;
  double share = 0;                     // of every kernel's time in the window; 0 when there is none
  std::vector<RooflinePlace> roofline;  // none where it reported no work
};

// The first `limit` of `kernels` (in their order) as rows, against `total_ms`.
std::vector<KernelRow> kernel_rows(const std::vector<db::KernelSummary>& kernels, double total_ms,
                                   const std::vector<GpuDeviceInfo>& gpus, std::size_t limit);

struct KernelTable {
  std::vector<KernelRow> rows;  // most time first
  double total_ms = 0;          // every kernel's time in the window
};

Result<KernelTable> kernel_table(const Sources& sources, const db::TimeRange& range, const db::EventScope& scope);

}  // namespace perfscope::service
