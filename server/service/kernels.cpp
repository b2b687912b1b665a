#include "server/service/kernels.hpp"

#include <algorithm>

namespace perfscope::service {

std::vector<KernelRow> kernel_rows(const std::vector<db::KernelSummary>& kernels, double total_ms,
                                   const std::vector<GpuDeviceInfo>& gpus, std::size_t limit) {
  std::vector<KernelRow> out;
  for (std::size_t i = 0; i < kernels.size() && i < limit; ++i) {
    const db::KernelSummary& k = kernels[i];
    out.push_back({k, total_ms > 0 ? k.total_ms / total_ms : 0.0, kernel_roofline(k, gpus)});
  }
  return out;
}

Result<KernelTable> kernel_table(const Sources& sources, const db::TimeRange& range, const db::EventScope& scope) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto summaries, sources.events->kernel_summaries(range, scope));
  KernelTable out;
  for (const db::KernelSummary& k : summaries) out.total_ms += k.total_ms;
  const std::vector<GpuDeviceInfo> gpus = sources.gpus ? sources.gpus->devices() : std::vector<GpuDeviceInfo>{};
  out.rows = kernel_rows(summaries, out.total_ms, gpus, summaries.size());
  return out;
}

}  // namespace perfscope::service
