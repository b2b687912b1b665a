// The analysis service: every analysis of one scope over one window, as a typed document —
// gauges with trends, the kernels (duty-cycled runs' counts scaled to their span), the kernel
// timeline per run, device and stream, command queues, serving metrics of reported requests
// and of scraped servers, energy, memory with growth and leak suspects, operators, each GPU
// against its peaks and targets, and the bottleneck rules over all of it.
//
// It reads the database and the live engine and computes; it writes no JSON. The REST API
// renders the document (GET /api/v1/analysis) and the reports made from it; the command line's
// offline reports render it through the same report endpoints, over a database file's readers.
//
// Thread-safety: analyze() is const and safe from any thread, as the sources are.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/abtest_store.hpp"
#include "db/event_reader.hpp"
#include "db/series_history.hpp"
#include "engine/analysis/bottlenecks.hpp"
#include "engine/analysis/device_targets.hpp"
#include "engine/analysis/operators.hpp"
#include "engine/analysis/scraped_serving.hpp"
#include "engine/analysis/serving.hpp"
#include "engine/analysis/timeline.hpp"
#include "engine/analysis/trend.hpp"
#include "engine/collectors/gpu_collector.hpp"
#include "engine/events/memory_tracker.hpp"
#include "server/service/collectives.hpp"
#include "server/service/query_time.hpp"
#include "server/service/device_efficiency.hpp"
#include "server/service/kernels.hpp"
#include "server/service/scoped_reads.hpp"
#include "server/service/scraped_figures.hpp"
#include "server/service/series_summary.hpp"
#include "server/service/sources.hpp"

namespace perfscope::service {

struct AnalysisQuery {
  db::EventScope scope;
  server::TimeWindow window;  // `all` with a run in the scope: the run's own span
  analysis::ServingSlo slo;
  std::size_t leak_age_s = 60;
  TimestampNs now = 0;
};

// One run's timeline rows (run empty: kernels of no run).
struct RunTimeline {
  std::string run;
  std::vector<analysis::QueueTimeline> queues;
  std::optional<analysis::TracedWindows> traced;  // a duty-cycled run's windows in the window
  std::optional<RunEvent> report;                 // and its report, which says how it was sampled
};

struct LeakSuspect {
  LiveAllocation allocation;
  double age_s = 0;
};

struct MemoryAnalysis {
  MemoryStatistics statistics;  // counters now
  analysis::Trend growth;       // of allocated bytes over the window
  std::size_t leak_age_s = 0;
  // Allocations live longer than leak_age_s while growth is significantly positive (only what
  // live processes hold: a run's allocations are released when it ends).
  std::vector<LeakSuspect> leak_suspects;
};

struct AbTestRef {
  std::int64_t id = 0;
  std::string name;
};

struct AnalysisDocument {
  TimestampNs generated_ns = 0;
  server::TimeWindow window;  // as resolved (a run's span for a run without a window)
  std::string device;          // empty: every device
  std::string run;             // empty: no run asked for
  analysis::ServingSlo slo;
  std::vector<SeriesSummary> gauges;
  // Every kernel by name, most total time first; a duty-cycled run's count and total time
  // scaled to its whole span (observed / sampled fraction).
  std::vector<db::KernelSummary> kernels;
  double kernel_total_ms = 0;
  std::vector<KernelRow> top_kernels;  // the ten with the most time, with their shares and rooflines
  analysis::OperatorSummary operators;
  std::vector<GpuDeviceInfo> gpus;  // the GPUs read through NVML, for the kernels' rooflines
  std::vector<DeviceEfficiency> devices;
  std::vector<RunTimeline> timelines;
  // Time in the duty-cycled runs' windows over their span; none without such a run.
  std::optional<double> sampled_fraction;
  std::vector<analysis::CommandQueueStats> command_queues;
  std::vector<analysis::ServingMetrics> serving;
  std::vector<ScrapedModel> scraped;  // servers perfscope scrapes (none for a tag scope)
  EnergyFigures energy;
  MemoryAnalysis memory;
  // Multi-GPU jobs in the window: each run's collectives, ranks and their time breakdown (only
  // where some run holds NCCL kernels).
  std::vector<JobCollectives> collectives;
  std::vector<analysis::Finding> findings;
  // With several runs in the window, each run's rules too (its own timeline, the window's gauges).
  std::vector<std::pair<std::string, std::vector<analysis::Finding>>> run_findings;
  std::vector<AbTestRef> abtests;  // the newest 100
};

// The rules' inputs read from one series family, and that series (a /api/v1/series/query
// selector): where a finding's evidence is drawn over time.
const std::map<std::string, std::string>& evidence_series();

class AnalysisService {
 public:
  explicit AnalysisService(Sources sources) : sources_(sources) {}

  // not_found (field "run") for a run without a window that names no run; errors of the reads.
  Result<AnalysisDocument> analyze(const AnalysisQuery& query) const;

 private:
  Sources sources_;
};

}  // namespace perfscope::service
