#include "engine/analysis/bottlenecks.hpp"

#include <algorithm>

#include "engine/analysis/timeline.hpp"
#include "engine/events/events.hpp"

namespace perfscope::analysis {

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "info";
}

namespace {

using Thresholds = std::map<std::string, double>;
double at(const Inputs& in, const char* key) { return in.find(key)->second; }
double th(const Thresholds& t, const char* key) { return t.find(key)->second; }

// What the kernels are bound by: compute, DRAM bandwidth, memory, long kernels, launches.
std::vector<Rule> kernel_rules() {
  using S = std::optional<Severity>;
  return {
      {"gpu_compute_bound",
       "GPU compute bound",
       {"gpu_utilization_avg", "gpu_dram_bandwidth_utilization_avg"},
       {{"utilization_min", 0.9}, {"bandwidth_max", 0.5}},
       [](const Inputs& in, const Thresholds& t) -> S {
         if (at(in, "gpu_utilization_avg") >= th(t, "utilization_min") &&
             at(in, "gpu_dram_bandwidth_utilization_avg") < th(t, "bandwidth_max")) {
           return Severity::kInfo;
         }
         return std::nullopt;
       },
       {"Fuse small kernels so fewer launches share the same arithmetic.",
        "Raise arithmetic efficiency: tensor cores with FP16/BF16/FP8 where accuracy allows.",
        "Revisit the launch configuration (block size, occupancy limits from registers and shared memory)."}},
      {"memory_bandwidth_bound",
       "Memory-bandwidth bound",
       {"gpu_dram_bandwidth_utilization_avg"},
       {{"bandwidth_min", 0.7}, {"saturation_min", 0.9}},
       [](const Inputs& in, const Thresholds& t) -> S {
         // Saturated: DRAM bandwidth stayed at or above 90% of peak over the window.
         const double bw = at(in, "gpu_dram_bandwidth_utilization_avg");
         if (bw >= th(t, "saturation_min")) return Severity::kCritical;
         return bw >= th(t, "bandwidth_min") ? S(Severity::kWarning) : S();
       },
       {"Improve access patterns: coalesced loads, fewer passes over the same tensors.",
        "Keep reused data in shared memory or cache (tiling), fuse element-wise operations.",
        "Use smaller data types (FP16, INT8, quantized weights) to move fewer bytes."}},
      {"high_memory_usage",
       "High GPU memory usage",
       {"gpu_memory_used_ratio_peak"},
       {{"used_ratio_min", 0.9}, {"critical_ratio", 0.97}},
       [](const Inputs& in, const Thresholds& t) -> S {
         double r = at(in, "gpu_memory_used_ratio_peak");
         if (r >= th(t, "critical_ratio")) return Severity::kCritical;
         return r >= th(t, "used_ratio_min") ? S(Severity::kWarning) : S();
       },
       {"Pool allocations instead of allocating per request.",
        "Stream large operations in chunks; free activations early; cap the KV cache.",
        "Review the largest live allocations (/api/v1/memory) for buffers that outlive their use."}},
      {"long_kernel_execution",
       "Long kernel execution",
       {"kernel_max_ms"},
       {{"max_ms", 50}},
       [](const Inputs& in, const Thresholds& t) -> S {
         return at(in, "kernel_max_ms") >= th(t, "max_ms") ? S(Severity::kWarning) : S();
       },
       {"Split {subject} into smaller kernels so other work can interleave (a long kernel also holds back "
        "preemption and every stream behind it).",
        "Reduce the work {subject} does per launch, or its algorithmic cost.",
        "Review how {subject} parallelises across blocks: a few long-running blocks leave SMs idle at its tail."},
       {},
       "kernel_longest",
       "kernel_longest_device",
       {"Split {subject} into smaller steps so other work on the thread can interleave.",
        "Profile {subject} with a sampling profiler to find its hot loop, and reduce its cost per call.",
        "Spread {subject} over more cores, or move it to the GPU if it is data-parallel."}},
      {"launch_overhead_bound",
       "Launch-overhead / latency bound",
       {"kernel_count", "kernel_busy_ratio", "kernel_avg_gap_ms"},
       // Launch overhead shows as many short gaps (microseconds to a few milliseconds) between
       // kernels; gaps longer than gap_ms_max on average are a program not submitting work at
       // all, which the utilization rule covers. The gaps must be the host's: where launch
       // times show that most idle time had the next kernel already launched (it waited on
       // another stream, a copy, or — in a multi-GPU job — on collectives and their
       // dependencies), launching faster would not fill them.
       {{"min_kernels", 100}, {"busy_ratio_max", kLaunchEfficiencyTarget}, {"gap_ms_min", 0.01}, {"gap_ms_max", 10}, {"short_share_min", 0.5},
        {"host_wait_share_min", 0.5}},
       [](const Inputs& in, const Thresholds& t) -> S {
         if (at(in, "kernel_count") < th(t, "min_kernels")) return std::nullopt;
         const double gap = at(in, "kernel_avg_gap_ms");
         const auto wait = in.find("kernel_host_wait_share");
         const bool host_paced = wait == in.end() || wait->second >= th(t, "host_wait_share_min");
         const bool gappy = host_paced && at(in, "kernel_busy_ratio") < th(t, "busy_ratio_max") &&
                            gap >= th(t, "gap_ms_min") && gap <= th(t, "gap_ms_max");
         // The short-kernel share needs launch times; without them the gaps decide alone.
         auto share = in.find("kernel_short_share");
         const bool short_kernels = share != in.end() && share->second >= th(t, "short_share_min");
         if (gappy && short_kernels) return Severity::kCritical;
         return gappy || short_kernels ? S(Severity::kWarning) : S();
       },
       {"Fuse the kernels of {subject}'s busiest loop or capture its launch sequence in a CUDA graph to cut "
        "per-launch cost.",
        "Batch more work per launch on {subject} (larger batches, fewer tiny kernels).",
        "Keep the host ahead of {subject}: launch asynchronously and avoid synchronisation in the loop."},
       {"kernel_host_wait_share", "kernel_short_share"},
       "kernel_gappiest_device",
       "kernel_gappiest_device",
       {"Do more work per call on {subject}: batch requests or items so fixed per-call costs are paid less often.",
        "Find what runs between the calls (allocation, locking, interpreter dispatch) with a sampling profiler.",
        "Run independent calls concurrently on more threads."}},
  };
}

// Idle or held-back GPUs, the host, the SLA, operators off the GPU, devices under their targets.
std::vector<Rule> utilization_rules() {
  using S = std::optional<Severity>;
  return {
      {"low_gpu_utilization",
       "Low GPU utilization",
       {"gpu_utilization_avg"},
       {{"utilization_max", 0.3}},
       [](const Inputs& in, const Thresholds& t) -> S {
         return at(in, "gpu_utilization_avg") < th(t, "utilization_max") ? S(Severity::kInfo) : S();
       },
       {"Increase the batch size or run more requests concurrently.",
        "Overlap data transfers with compute (pinned memory, separate streams).",
        "If the GPU idles between requests, consider a smaller or shared GPU."}},
      {"host_bound_input_pipeline",
       "Host (CPU) bound input pipeline",
       {"host_cpu_utilization_avg", "kernel_host_wait_share"},
       {{"cpu_min", 0.85}, {"host_wait_share_min", 0.5}},
       [](const Inputs& in, const Thresholds& t) -> S {
         const bool cpu = at(in, "host_cpu_utilization_avg") >= th(t, "cpu_min");
         const bool waiting = at(in, "kernel_host_wait_share") >= th(t, "host_wait_share_min");
         if (cpu && waiting) return Severity::kWarning;
         return waiting ? S(Severity::kInfo) : S();
       },
       {"Move preprocessing off the critical path: more data-loader workers, prefetching.",
        "Do decoding and augmentation on the GPU where possible.",
        "Profile the host side; pin threads away from the launch thread."}},
      {"thermal_throttling",
       "Thermal throttling",
       {"gpu_thermal_throttle_seconds"},
       {{"seconds_min", 0.0}},
       [](const Inputs& in, const Thresholds& t) -> S {
         return at(in, "gpu_thermal_throttle_seconds") > th(t, "seconds_min") ? S(Severity::kCritical) : S();
       },
       {"Check cooling and airflow; look at fan speed and inlet temperature.",
        "Lower the sustained load or the power limit to stay out of slowdown.",
        "Spread work across GPUs in cooler positions."}},
      {"power_capping",
       "Power capping",
       {"gpu_power_cap_throttle_seconds"},
       {{"seconds_min", 0.0}},
       [](const Inputs& in, const Thresholds& t) -> S {
         return at(in, "gpu_power_cap_throttle_seconds") > th(t, "seconds_min") ? S(Severity::kWarning) : S();
       },
       {"Clocks are being held back by the power limit: check the configured limit against the board's.",
        "Lower precision or smaller kernels reduce power per unit of work.",
        "If throughput per watt matters more than peak, this may be acceptable."}},
      {"sla_at_risk",
       "SLA at risk",
       {"latency_p99_ms", "sla_target_ms"},
       {{"warning_fraction", 0.9}},
       [](const Inputs& in, const Thresholds& t) -> S {
         const double p99 = at(in, "latency_p99_ms"), target = at(in, "sla_target_ms");
         if (p99 > target) return Severity::kCritical;
         return p99 >= th(t, "warning_fraction") * target ? S(Severity::kWarning) : S();
       },
       {"Reduce queueing: add replicas or limit concurrency per replica.",
        "Use smaller batches or a batching timeout tuned to the latency target.",
        "Find the slowest stage (queue vs compute, TTFT vs decode) in the percentile breakdown."}},
      {"operators_cpu_fallback",
       "Operators falling back to CPU",
       {"operator_cpu_fallback_share"},
       {{"share_min", 0.1}, {"critical_share", 0.3}},
       [](const Inputs& in, const Thresholds& t) -> S {
         const double share = at(in, "operator_cpu_fallback_share");
         if (share >= th(t, "critical_share")) return Severity::kCritical;
         return share >= th(t, "share_min") ? S(Severity::kWarning) : S();
       },
       {"Find the nodes placed on the CPU provider (/api/v1/operators?provider=CPUExecutionProvider; ONNX Runtime "
        "logs the placement at log_severity_level 1) and why: an op, opset or data type the GPU provider lacks.",
        "Convert or replace those ops (a newer opset, a supported dtype, a custom kernel) so the graph stays on the GPU.",
        "Each fallback also copies tensors between devices: keep CPU nodes out of the hot loop."}},
      {"device_below_minimum",
       "A GPU below its minimum throughput",
       {"device_target_of_minimum_worst"},
       {{"of_minimum_min", 0.8}},
       [](const Inputs& in, const Thresholds& t) -> S {
         return at(in, "device_target_of_minimum_worst") < th(t, "of_minimum_min") ? S(Severity::kWarning) : S();
       },
       {"See the analysis document's devices: which figure (TFLOP/s or GB/s) of which GPU is short, and its "
        "recommendation.",
        "Place the heaviest kernels on the roofline (/api/v1/kernels, with flops, bytes and dtype reported): "
        "memory-bound ones need fewer bytes moved, compute-bound ones tensor cores and larger tiles.",
        "Check for throttling and for time the GPU sat idle between kernels: both lower the achieved rate."}},
  };
}

// Multi-GPU jobs: stragglers, communication, bus bandwidth.
std::vector<Rule> multi_gpu_rules() {
  using S = std::optional<Severity>;
  return {
      {"straggler",
       "A straggling rank holds up every collective",
       // Set by the collective analysis (engine/analysis/collectives.hpp), which names a
       // straggler only past its own materiality floor: extra_share is its extra compute per step
       // over the step, 0 when no rank straggles among ranks that met in collectives.
       {"collective_matched", "collective_straggler_extra_share"},
       {{"warning_share", 0.25}},
       [](const Inputs& in, const Thresholds& t) -> S {
         const double share = at(in, "collective_straggler_extra_share");
         if (share <= 0) return std::nullopt;
         return share >= th(t, "warning_share") ? S(Severity::kWarning) : S(Severity::kInfo);
       },
       {"Rebalance the work across ranks: the straggler computes more per step (uneven shards, sequence lengths "
        "or batch sizes, input loading on that rank) — GET /api/v1/collectives names it and the extra time.",
        "Check the straggler's GPU: clocks, throttling and other processes on it (the Processes view).",
        "Every other rank waits inside the collective meanwhile: overlap communication with compute (bucketed, "
        "asynchronous collectives) so what remains of the wait hides behind work."},
       {"collective_straggler_rank", "collective_straggler_extra_ms", "collective_straggler_last_share"}},
      {"communication_bound",
       "Communication not hidden behind compute",
       // The rank whose collectives moved data with no compute beside them for the largest share
       // of a step (of the window where no steps were found): its exposed transfer over the
       // step (TimeBreakdown::exposed_transfer_ms); its wait for other ranks is the straggler
       // rule's.
       {"collective_matched", "collective_exposed_transfer_share"},
       {{"min_share", 0.2}, {"warning_share", 0.4}},
       [](const Inputs& in, const Thresholds& t) -> S {
         const double share = at(in, "collective_exposed_transfer_share");
         if (share < th(t, "min_share")) return std::nullopt;
         return share >= th(t, "warning_share") ? S(Severity::kWarning) : S(Severity::kInfo);
       },
       {"Overlap communication with compute: start each collective as soon as its data is ready (DDP's gradient "
        "buckets, asynchronous collectives, FSDP's prefetch) so it runs beside the next layer's kernels.",
        "Tune the bucket size (DDP bucket_cap_mb): too large starts the first all-reduce late, too small pays "
        "per-collective latency many times.",
        "Move fewer bytes per step (bf16 gradients, larger per-rank batches so compute grows against the bytes).",
        "Where the ranks' collectives are mostly waiting (wait_share in GET /api/v1/collectives), the cause is "
        "a straggler or uneven work, not the link: see the straggler rule."},
       {"collective_exposed_rank", "collective_exposed_share", "collective_exposed_ms", "collective_overlap_ratio",
        "collective_wait_share"}},
      {"low_bus_bandwidth",
       "Large collectives far below the links' peak",
       // Of the collectives of at least 16 MiB that NCCL described (bytes known), on GPUs whose
       // link peak NVML gives (NVLink links × per-link rate), the operation and size whose median
       // bus bandwidth (nccl-tests' formula, from the last rank's arrival) is the smallest share
       // of that peak.
       {"collective_matched", "collective_large_busbw_share_of_peak"},
       {{"max_share", 0.5}},
       [](const Inputs& in, const Thresholds& t) -> S {
         return at(in, "collective_large_busbw_share_of_peak") < th(t, "max_share") ? S(Severity::kWarning) : S();
       },
       {"See which path NCCL took: GET /api/v1/devices' topology (NV18 is NVLink; PHB, NODE or SYS is PCIe or "
        "the CPU's interconnect) and the collective's algorithm and protocol in GET /api/v1/collectives. "
        "NCCL_P2P_DISABLE, NCCL_P2P_LEVEL or a container without IPC between the ranks push traffic off NVLink.",
        "Give NCCL more channels for large messages (NCCL_MIN_NCHANNELS, or fewer SMs taken by concurrent compute "
        "kernels) and leave NCCL_ALGO and NCCL_PROTO unset unless measured.",
        "Fewer, larger messages reach more of the peak: raise the bucket size (DDP bucket_cap_mb) or coalesce "
        "small collectives into one."},
       {"collective_large_busbw_gb_per_second", "collective_large_link_peak_gb_per_second", "collective_large_bytes"}},
  };
}

std::vector<Rule> make_rules() {
  std::vector<Rule> rules;
  for (auto part : {kernel_rules, utilization_rules, multi_gpu_rules}) {
    for (Rule& r : part()) rules.push_back(std::move(r));
  }
  return rules;
}

// Why an input is missing, in words a user can act on.
std::string_view missing_reason(std::string_view input) {
  if (input == "kernel_short_share" || input == "kernel_host_wait_share") {
    return "no kernel launch times (kernels reported without their launch calls)";
  }
  if (input.starts_with("kernel_")) return "no kernels in this range";
  if (input == "gpu_dram_bandwidth_utilization_avg") return "no GPU DRAM bandwidth (GPM metrics: Hopper GPUs and newer)";
  if (input.ends_with("_throttle_seconds")) return "no GPU throttle counters";
  if (input.starts_with("gpu_")) return "no GPU metrics (the GPU collector is off or found no GPU)";
  if (input.starts_with("host_")) return "no host CPU metrics (the host collector is off)";
  if (input == "sla_target_ms") return "no latency objective set (sla_ms)";
  if (input == "latency_p99_ms") return "no inference requests in this range";
  if (input.starts_with("operator_")) return "no operator events with a GPU provider in this range";
  if (input.starts_with("device_target_")) return "no device targets";
  if (input == "collective_large_busbw_share_of_peak") {
    return "no collectives of 16 MiB or more with their sizes (NCCL's description) and a link peak in this range";
  }
  if (input.starts_with("collective_")) return "no multi-GPU collectives in this range";
  return "not measured here";
}

// "{subject}" in a recommendation replaced by the subject's name.
std::string with_subject(std::string text, std::string_view subject) {
  for (std::size_t at = text.find("{subject}"); at != std::string::npos; at = text.find("{subject}", at + subject.size())) {
    text.replace(at, 9, subject);
  }
  return text;
}

// Rules whose inputs come from configuration: what to set, added to their not-evaluated reason.
std::string_view setup_hint(std::string_view rule_id) {
  if (rule_id == "device_below_minimum") return "needs --device-target with min_tflops or min_gb_per_second";
  if (rule_id == "straggler" || rule_id == "communication_bound") {
    return "needs the NCCL collective kernels of two or more ranks in one run (perfscope run)";
  }
  if (rule_id == "low_bus_bandwidth") {
    return "needs collectives of 16 MiB or more described by NCCL's profiler plugin (perfscope run loads it) on GPUs "
           "whose NVLink peak NVML gives";
  }
  return "";
}

int order(const Finding& f) {
  if (f.status == "fired") return f.severity == Severity::kCritical ? 0 : f.severity == Severity::kWarning ? 1 : 2;
  return f.status == "ok" ? 3 : 4;
}

}  // namespace

const std::vector<Rule>& bottleneck_rules() {
  static const std::vector<Rule> rules = make_rules();
  return rules;
}

std::vector<Finding> detect_bottlenecks(const Inputs& inputs, const Subjects& subjects, const std::vector<Rule>& rules) {
  auto subject_of = [&](const std::string& key) -> std::string {
    auto it = key.empty() ? subjects.end() : subjects.find(key);
    return it == subjects.end() ? std::string() : it->second;
  };
  std::vector<Finding> out;
  for (const Rule& r : rules) {
    Finding f;
    f.id = r.id;
    f.title = r.title;
    f.thresholds = r.thresholds;
    std::vector<std::string> missing;
    for (const auto& need : r.needs) {
      auto it = inputs.find(need);
      if (it == inputs.end()) {
        missing.push_back(need);
      } else {
        f.evidence[need] = it->second;
      }
    }
    for (const auto& detail : r.details) {
      if (auto it = inputs.find(detail); it != inputs.end()) f.evidence[detail] = it->second;
    }
    f.subject = subject_of(r.subject);
    f.subject_device = subject_of(r.subject_device);
    if (!missing.empty()) {
      f.status = "not_evaluated";
      // "why in words; not measured here: inputs[; what to set]": the words before the first
      // ';' group rules that lack the same thing.
      f.reason = std::string(missing_reason(missing.front())) + "; not measured here: ";
      for (std::size_t i = 0; i < missing.size(); ++i) f.reason += (i ? ", " : "") + missing[i];
      if (std::string_view hint = setup_hint(r.id); !hint.empty()) f.reason += "; " + std::string(hint);
    } else if (auto severity = r.fires(inputs, r.thresholds)) {
      f.status = "fired";
      f.severity = severity;
      const bool cpu = !f.subject_device.empty() && is_cpu_device(f.subject_device) && !r.cpu_recommendations.empty();
      // The subject is a kernel, or (where it is its own device) a device.
      std::string name = f.subject.empty() ? "the kernel" : f.subject;
      if (r.subject == r.subject_device) name = f.subject.empty() ? "the device" : cpu ? f.subject : "GPU " + f.subject;
      for (const std::string& rec : cpu ? r.cpu_recommendations : r.recommendations) {
        f.recommendations.push_back(with_subject(rec, name));
      }
    } else {
      f.status = "ok";
    }
    out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return order(a) < order(b); });
  return out;
}

}  // namespace perfscope::analysis
