#include "server/api/collectives_api.hpp"

#include <set>

#include "server/api/api_helpers.hpp"
#include "server/service/collectives.hpp"
#include "server/service/run_window.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

json breakdown_json(const an::TimeBreakdown& b) {
  return {{"window_ms", b.window_ms},         {"compute_ms", b.compute_ms},
          {"communication_ms", b.communication_ms}, {"overlapped_ms", b.overlapped_ms},
          {"exposed_ms", b.exposed_ms},       {"idle_ms", b.idle_ms},
          {"overlap_ratio", b.overlap_ratio}, {"exposed_share", b.exposed_share},
          {"exposed_transfer_ms", b.exposed_transfer_ms}};
}

json positive_or_null(double v) { return v > 0 ? json(v) : json(nullptr); }
json text_or_null(const std::string& v) { return v.empty() ? json(nullptr) : json(v); }

}  // namespace

json collective_job_json(const service::JobCollectives& job, bool with_instances) {
  const an::CollectiveAnalysis& a = job.analysis;
  json ranks = json::array(), ops = json::array(), instances = json::array();
  for (const auto& r : a.ranks) {
    ranks.push_back({{"rank", r.rank}, {"device", r.device}, {"instances", r.instances}, {"total_ms", r.total_ms},
                     {"wait_ms", r.wait_ms}, {"transfer_ms", r.transfer_ms}, {"wait_share", r.wait_share},
                     {"last_arrivals", r.last_arrivals}, {"mean_arrival_offset_ms", r.mean_arrival_offset_ms},
                     {"breakdown", breakdown_json(r.breakdown)},
                     {"per_step", r.per_step ? breakdown_json(*r.per_step) : json(nullptr)}});
  }
  for (const auto& o : a.ops) {
    ops.push_back({{"op", o.op}, {"instances", o.instances}, {"duration_p50_ms", o.duration_p50_ms},
                   {"duration_p99_ms", o.duration_p99_ms}, {"transfer_p50_ms", o.transfer_p50_ms},
                   {"wait_share", o.wait_share}, {"bytes", positive_or_null(o.bytes)},
                   {"algorithm", text_or_null(o.algorithm)}, {"protocol", text_or_null(o.protocol)},
                   {"comm_ranks", o.comm_ranks > 0 ? json(o.comm_ranks) : json(nullptr)},
                   {"comm_nodes", o.comm_nodes},
                   {"algbw_p50_gb_per_second", positive_or_null(o.algbw_p50_gb_per_second)},
                   {"busbw_p50_gb_per_second", positive_or_null(o.busbw_p50_gb_per_second)},
                   {"busbw_share_of_peak", positive_or_null(o.busbw_share_of_peak)}});
  }
  static const std::vector<an::CollectiveInstance> kNone;
  for (const auto& i : with_instances ? a.instances : kNone) {
    json per_rank = json::array();
    for (std::size_t m = 0; m < i.ranks.size(); ++m) {
      per_rank.push_back({{"rank", a.ranks[i.ranks[m]].rank}, {"start_ns", i.start_ns[m]}, {"end_ns", i.end_ns[m]}});
    }
    instances.push_back({{"sequence", i.sequence}, {"op", i.op}, {"skew_ms", i.skew_ms},
                         {"last_rank", a.ranks[i.last_rank].rank}, {"ranks", per_rank}, {"comm", text_or_null(i.comm)},
                         {"bytes", positive_or_null(i.bytes)}, {"algbw_gb_per_second", positive_or_null(i.algbw_gb_per_second)},
                         {"busbw_gb_per_second", positive_or_null(i.busbw_gb_per_second)}});
  }
  json straggler = nullptr;
  if (a.straggler) {
    straggler = {{"rank", a.straggler->rank}, {"last_share", a.straggler->last_share},
                 {"lateness_median_ms", a.straggler->lateness_median_ms},
                 {"extra_per_step_ms", a.straggler->extra_per_step_ms}, {"step_median_ms", a.straggler->step_median_ms},
                 {"exposed_wait_caused_ms", a.straggler->exposed_wait_caused_ms}};
  }
  json out = {{"run", job.run.empty() ? json(nullptr) : json(job.run)}, {"ranks_from", job.ranks_from},
              {"ranks", ranks}, {"ops", ops}, {"matched", a.matched}, {"unmatched", a.unmatched}, {"skipped", a.skipped},
              {"communicators", a.communicators},
              {"step_median_ms", a.step_median_ms}, {"step_collectives", a.step_collectives}, {"steps", a.steps},
              {"straggler", straggler}, {"instances", instances}};
  if (!a.mismatch.empty()) out["mismatch"] = a.mismatch;
  if (!a.no_straggler.empty()) out["no_straggler"] = a.no_straggler;
  if (!with_instances) out.erase("instances");
  return out;
}

HttpResponse collectives_response(const service::Sources& sources, const HttpRequest& request) {
  const TimestampNs now = now_ns();
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  auto w = window_or(request, "15m", now);
  if (!w.ok()) return status_response(w.status());
  if (Status s = service::resolve_run_window(*sources.events, scope->run, *w, now); !s.ok()) return status_response(s);
  an::CollectiveOptions options;
  options.link_peak_bytes_per_second = sources.gpus ? service::link_peak_bytes_per_second(sources.gpus->devices()) : 0;
  auto jobs = service::read_collectives(*sources.events, {w->from_ns, std::min(w->to_ns, now)}, *scope, options);
  if (!jobs.ok()) return status_response(jobs.status());
  json out = json::array();
  bool described = false;
  const std::vector<GpuLink> topology = sources.gpus ? sources.gpus->topology() : std::vector<GpuLink>{};
  for (const auto& job : *jobs) {
    json j = collective_job_json(job, true);
    // The paths between the job's GPUs, as GET /api/v1/devices gives them: what its collectives
    // crossed (NVLink directly or through NVSwitches, else PCIe), where this server sees them.
    std::set<std::string> devices;
    for (const auto& r : job.analysis.ranks) devices.insert(r.device);
    json links = json::array();
    for (const GpuLink& l : topology) {
      if (!devices.contains(l.a) || !devices.contains(l.b)) continue;
      links.push_back({{"a", l.a}, {"b", l.b}, {"link", l.label()}, {"nvlinks", l.nvlinks}, {"via_nvswitch", l.via_nvswitch}});
    }
    j["links"] = std::move(links);
    out.push_back(std::move(j));
    described = described || job.analysis.communicators > 0;
  }
  json unknown = json::object();
  if (!described) unknown["bytes"] = "no collective here was described by NCCL's profiler plugin (perfscope run loads it; "
                                     "NCCL 2.27 or newer): kernel names carry no message sizes, so bytes and bus "
                                     "bandwidth are unknown";
  if (options.link_peak_bytes_per_second <= 0) {
    unknown["link_peak"] = "NVML gives no NVLink peak for these GPUs (no NVLink, or no GPU collector): bus bandwidth "
                           "is not set against a peak";
  }
  return json_response(
      200, {{"window", window_json(*w)},
            {"source", described ? "nccl_profiler" : "kernel_names"},
            {"link_peak_gb_per_second", options.link_peak_bytes_per_second > 0
                                            ? json(options.link_peak_bytes_per_second / 1e9) : json(nullptr)},
            {"method",
             "NCCL's kernels, described by NCCL's profiler plugin where it was loaded (communicator, its ranks, bytes "
             "as nccl-tests counts them, algorithm, protocol), else recognised by name; a run's ranks by their rank tag "
             "(set from the launcher's RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID), else by process; within "
             "each communicator (all undescribed kernels: one) the k-th collective kernel of each member matched with "
             "the k-th of every other; algbw = bytes / (last member's end - last arrival), busbw = algbw x 2(n-1)/n "
             "for all-reduce, x (n-1)/n for all-gather, reduce-scatter and all-to-all, x 1 otherwise (nccl-tests), n "
             "the communicator's ranks; busbw_share_of_peak against the smallest GPU link peak (NVLink links x NVML's "
             "per-link rate), only for communicators within one host; SendRecv kernels (point to point) are not matched; a kernel that ended before another rank's "
             "partner began has none (a lost record, a window edge) and is skipped; matching stopped where operations "
             "differ; per rank and instance: wait = last arrival - own arrival (up to its duration), transfer = end "
             "- max(own arrival, last arrival); straggler: the rank last in >= 2/3 of >= 5 instances whose median "
             "lateness after the next-latest rank and extra compute per step are both >= max(0.1 ms, 10 % of the median "
             "step, and the other ranks' median exposed wait for it (their wait with none of their own compute beside it) "
             "is too; extra_per_step_ms: the "
             "median over successive instances of its time from leaving one to entering the next beyond the other "
             "ranks' mean (each on its own GPU's clock); breakdown per rank over the job's window (first kernel of any "
             "rank to the last one's end): compute = union of its other kernels, communication = union of its "
             "collective kernels, overlapped = communication while compute ran, exposed = communication - overlapped, "
             "idle = window - (compute + exposed), exposed_transfer = per matched collective from the last arrival to "
             "its end with no compute beside it; steps: the smallest period (<= 16) at which the matched "
             "collectives' operations repeat (others allowed within one period of either end), or a multiple of it "
             "whose gaps before it are all over twice the others (gradient buckets), a step from one step's first "
             "arrival to the next's, per_step the median of each figure over the steps"},
            {"unknown", unknown},
            {"jobs", out}});
}

HttpResponse QueryEndpoints::collectives(const HttpRequest& request) const { return collectives_response(sources_, request); }

}  // namespace perfscope::server
