// ProcessTracker: the lifetime of every process that ran on a GPU, kept after it exits so that
// "what ran on GPU 0 last night" has an answer. The GPU collector reports each pass of each GPU
// (the processes it listed, their memory, SM share and host cost, and the board's power); the
// tracker folds them into one record per (GPU, process): first and last seen, peak and mean
// device memory, mean and max SM share, GPU-seconds (SM share integrated over time), host CPU
// seconds and peak resident memory, and attributed energy.
//
// Attributed energy: the board's energy in each interval between two observations (its power
// integrated over the sampling passes in it) split by the processes' SM shares at its end. When no process reported any SM
// share, the interval's energy is nobody's (counted per GPU as unattributed): idle power, and
// work the driver did not attribute. A process's energy therefore includes its share of the
// board's static power while it computes, and nothing of memory traffic or other engines.
//
// A process listed in one pass and not in the next has finished: its record moves to the
// finished list, which the store takes (take_finished) and keeps. Sums, not means, are kept so
// that records of one process written before and after a restart merge exactly.
//
// Thread-safety: every method is safe from any thread (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/clock.hpp"
#include "engine/collectors/process_identity.hpp"

namespace perfscope {

// One process as one pass of one GPU saw it.
struct GpuProcessReading {
  ProcessIdentity identity;  // start_ticks 0 and command empty when procfs does not show the pid
  bool visible = true;
  double memory_bytes = 0;
  std::optional<double> sm_ratio;  // 0..1; none where the GPU gives no per-process share
  std::optional<double> cpu_seconds;
  std::optional<double> rss_bytes;
};

struct GpuProcessRecord {
  std::string gpu_uuid, gpu;  // the GPU's UUID and index label
  std::string key;            // "PID-START" (identity.key()), or "PID-?" when not visible
  ProcessIdentity identity;
  bool visible = true;
  bool running = false;
  TimestampNs first_seen_ns = 0, last_seen_ns = 0;
  double observed_seconds = 0;  // time the passes covered
  double memory_byte_seconds = 0, peak_memory_bytes = 0;
  double sm_observed_seconds = 0;  // time with an SM share reported
  double gpu_seconds = 0;          // ∫ SM share dt
  double max_sm_ratio = 0;
  double energy_joules = 0;
  double cpu_seconds = 0;  // host CPU time while it was observed
  double peak_rss_bytes = 0;
  GpuProcessReading last;  // the newest pass's reading (live records; not stored)

  std::optional<double> mean_memory_bytes() const {
    return observed_seconds > 0 ? std::optional(memory_byte_seconds / observed_seconds) : std::nullopt;
  }
  std::optional<double> mean_sm_ratio() const {
    return sm_observed_seconds > 0 ? std::optional(gpu_seconds / sm_observed_seconds) : std::nullopt;
  }
  // Folds in another record of the same (GPU, process), e.g. written before a restart.
  void merge(const GpuProcessRecord& other);
};

class ProcessTracker {
 public:
  // Intervals longer than this between two observations of a GPU count only this long: a gap
  // in sampling is not time the processes were seen.
  static constexpr TimestampNs kMaxIntervalNs = 60'000'000'000;
  // Finished records kept for the store at most; the oldest go first when it falls behind.
  static constexpr std::size_t kMaxFinished = 100'000;

  // One observation of one GPU: every process it listed, and the board's energy since the
  // previous observation (none: no energy).
  void observe(TimestampNs now_ns, const std::string& gpu_uuid, const std::string& gpu,
               std::optional<double> interval_energy_joules, const std::vector<GpuProcessReading>& processes);

  std::vector<GpuProcessRecord> running() const;
  // Records of processes that finished since the last call, each once.
  std::vector<GpuProcessRecord> take_finished();
  // Board energy no process's SM share claimed, per GPU UUID.
  std::map<std::string, double> unattributed_joules() const;

 private:
  struct Gpu {
    std::optional<TimestampNs> last_ns;  // the previous pass
    std::map<std::string, GpuProcessRecord> live;  // by key
    std::map<std::string, double> last_cpu;  // key → CPU seconds at its last pass
    double unattributed_joules = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Gpu> gpus_;  // guarded by mu_; by UUID
  std::vector<GpuProcessRecord> finished_;  // guarded by mu_
};

}  // namespace perfscope
