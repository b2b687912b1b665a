// The GPU processes of a time range, stored and live together (the part of a process stored
// before a restart merged with the live one), narrowed to a GPU or a run, with their sums per
// container, Kubernetes pod or namespace; one process by its key, and its series over its
// lifetime. The process views (GET /api/v1/processes) render these.
//
// Functions over the sources; thread-safe as the readers are.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/series_history.hpp"
#include "engine/collectors/process_tracker.hpp"
#include "server/service/sources.hpp"

namespace perfscope::service {

// A GPU process: its stored record merged with the live one, if it still runs.
struct ListedProcess {
  GpuProcessRecord record;
  bool live = false;
};
// Live and stored records overlapping [from, to], one per (GPU, process), live first.
// `key` non-empty: that process only (one lookup, not every record).
Result<std::vector<ListedProcess>> gpu_processes_in(const Sources& sources, TimestampNs from_ns, TimestampNs to_ns,
                                                    const std::string& key = {});

// Unknown is not zero: a process for which the driver never reported an SM share has no share
// of the board's time or energy that can be attributed to it (0 would read as "idle").
inline bool sm_share_known(const GpuProcessRecord& p) { return p.sm_observed_seconds > 0; }

enum class ProcessGrouping { kNone, kContainer, kPod, kNamespace };

struct ProcessQuery {
  TimestampNs from_ns = 0, to_ns = 0;
  TimestampNs now = 0;  // a running run ends now
  std::string gpu;      // an index or a UUID; empty: every GPU
  std::string run;      // the run's processes while it ran; empty: every process
  ProcessGrouping grouping = ProcessGrouping::kNone;
};

// Processes summed by container, pod or namespace. Processes outside any such group (no
// container; no pod the kubelet named) are one group, with key "".
struct ProcessGroup {
  std::string key;         // "runtime/id", "namespace/pod" or the namespace
  ContainerIdentity who;   // the group's first process's identity: what names the group
  std::size_t processes = 0, running = 0;
  double peak_memory_bytes_sum = 0;  // each process's own peak: an upper bound of the sum's
  double cpu_seconds = 0;
  // Over the processes whose SM share is known; unknown when none is.
  std::optional<double> gpu_seconds, energy_joules;
};

struct ProcessList {
  TimestampNs from_ns = 0, to_ns = 0;  // the range asked for, narrowed to the run's
  std::vector<ListedProcess> processes;
  std::vector<ProcessGroup> groups;  // sorted by key; empty without a grouping
  // The board's energy in intervals in which no process had an SM share, by GPU UUID, since
  // the server started (none without a live tracker).
  std::map<std::string, double> unattributed_joules;
};

// not_found (field "run") for a run perfscope does not know.
Result<ProcessList> list_gpu_processes(const Sources& sources, const ProcessQuery& query);

// One process by its key over all time; `gpu` (index or UUID) picks one where it ran on
// several. not_found (field "key"); invalid_argument (field "gpu") where `gpu` is needed.
Result<ListedProcess> gpu_process(const Sources& sources, const std::string& key, const std::string& gpu,
                                  TimestampNs now);

// The process's memory, SM share, CPU and resident-memory series over its lifetime (at most
// `max_points` per series); the pid and GPU label them, the lifetime keeps a reused pid out.
Result<std::vector<db::SeriesData>> process_series(const Sources& sources, const GpuProcessRecord& process,
                                                   std::size_t max_points);

}  // namespace perfscope::service
