// The collectives of multi-GPU jobs in a window (engine/analysis/collectives.hpp), read from
// the stored kernels: NCCL's kernels by name, and each rank's other kernels for its time
// breakdown, grouped by run and by rank (the `rank` tag the tracing library sets from the
// launcher's environment, else the process). Runs without a collective kernel are left out.
//
// A function over the event reader; thread-safe as it is.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "db/event_reader.hpp"
#include "db/time_range.hpp"
#include "engine/analysis/collectives.hpp"
#include "engine/collectors/gpu_collector.hpp"

namespace perfscope::service {

// An instance's members in the order they arrived (indices into its `ranks` and `start_ns`),
// for the views that link them: the timeline and the trace's flows.
std::vector<std::size_t> arrival_order(const analysis::CollectiveInstance& instance);

struct JobCollectives {
  std::string run;         // empty: kernels of no run
  std::string ranks_from;  // "rank tag" or "process" (no rank tag: each process is a rank)
  analysis::CollectiveAnalysis analysis;
};

// A kernel's rank in its job: its `rank` tag in a job whose ranks are by tag, else its process
// ("pid N", or "device N" without a pid). RankCollectives::rank holds this.
std::string rank_key(const Tags& tags, const std::string& device, bool by_rank_tag);

// Groups kernels into jobs (runs) and ranks as they are read, so that a reader walking the
// kernels for something else as well (the trace export) needs no second pass. Not thread-safe.
class CollectiveJobsBuilder {
 public:
  // compute_spans false: collectives only, no time breakdown (what matching them needs).
  explicit CollectiveJobsBuilder(bool compute_spans = true) : compute_spans_(compute_spans) {}
  void add(const KernelEvent& k);
  // One entry per run with collective kernels, by run name.
  std::vector<JobCollectives> finish(const analysis::CollectiveOptions& options = {}) &&;

 private:
  struct Job {
    bool tagged = false;       // some kernel carried a rank tag
    bool collectives = false;  // some kernel was a collective
    std::map<std::string, analysis::RankCollectives> by_rank, by_process;
  };
  bool compute_spans_;
  std::map<std::string, Job> jobs_;
};

// What collectives' bus bandwidth is set against: the smallest link peak of the GPUs that have
// one (a node's GPUs are alike); 0 when none does.
double link_peak_bytes_per_second(const std::vector<GpuDeviceInfo>& gpus);

// One entry per run with collective kernels in the range, by run name.
Result<std::vector<JobCollectives>> read_collectives(const db::EventReader& events, const db::TimeRange& range,
                                                     const db::EventScope& scope,
                                                     const analysis::CollectiveOptions& options = {});

}  // namespace perfscope::service
