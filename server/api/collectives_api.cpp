#include "server/api/collectives_api.hpp"

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
                   {"wait_share", o.wait_share}, {"bytes", nullptr}, {"bus_bandwidth_gb_per_second", nullptr}});
  }
  static const std::vector<an::CollectiveInstance> kNone;
  for (const auto& i : with_instances ? a.instances : kNone) {
    json per_rank = json::array();
    for (std::size_t r = 0; r < i.start_ns.size(); ++r) {
      per_rank.push_back({{"rank", a.ranks[r].rank}, {"start_ns", i.start_ns[r]}, {"end_ns", i.end_ns[r]}});
    }
    instances.push_back({{"sequence", i.sequence}, {"op", i.op}, {"skew_ms", i.skew_ms},
                         {"last_rank", a.ranks[i.last_rank].rank}, {"ranks", per_rank}});
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
              {"step_median_ms", a.step_median_ms}, {"step_collectives", a.step_collectives}, {"steps", a.steps},
              {"straggler", straggler}, {"instances", instances}};
  if (!a.mismatch.empty()) out["mismatch"] = a.mismatch;
  if (!a.no_straggler.empty()) out["no_straggler"] = a.no_straggler;
  if (!with_instances) out.erase("instances");
  return out;
}

HttpResponse collectives_response(const ApiContext& ctx, const HttpRequest& request) {
  const TimestampNs now = now_ns();
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  auto w = window_or(request, "15m", now);
  if (!w.ok()) return status_response(w.status());
  if (Status s = service::resolve_run_window(*ctx.events, scope->run, *w, now); !s.ok()) return status_response(s);
  auto jobs = service::read_collectives(*ctx.events, {w->from_ns, std::min(w->to_ns, now)}, *scope);
  if (!jobs.ok()) return status_response(jobs.status());
  json out = json::array();
  for (const auto& job : *jobs) out.push_back(collective_job_json(job, true));
  return json_response(
      200, {{"window", window_json(*w)},
            {"source", "kernel_names"},
            {"method",
             "NCCL's kernels recognised by name; a run's ranks by their rank tag (set from the launcher's RANK, "
             "OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID), else by process; the k-th collective kernel of each "
             "rank matched with the k-th of every other (one communicator); a kernel that ended before another rank's "
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
            {"unknown", {{"bytes", "kernel names carry no message sizes: bytes and bus bandwidth are unknown"}}},
            {"jobs", out}});
}

}  // namespace perfscope::server
