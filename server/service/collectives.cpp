#include "server/service/collectives.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

namespace perfscope::service {

std::vector<std::size_t> arrival_order(const analysis::CollectiveInstance& instance) {
  std::vector<std::size_t> order(instance.start_ns.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return instance.start_ns[x] < instance.start_ns[y]; });
  return order;
}

namespace an = perfscope::analysis;

std::string rank_key(const Tags& tags, const std::string& device, bool by_rank_tag) {
  if (by_rank_tag) return std::string(tag_value(tags, "rank"));
  const std::string_view pid = tag_value(tags, "pid");
  return pid.empty() ? "device " + device : "pid " + std::string(pid);
}

namespace {

// A collective kernel as the analysis takes it: NCCL's description where its profiler plugin
// gave one (the tags the tracing library sets), else what the name says; none for other kernels.
std::optional<an::RankCollectives::Execution> collective_of(const KernelEvent& k) {
  if (!k.name.starts_with("nccl")) return std::nullopt;
  const auto parsed = an::parse_collective_kernel(k.name);
  const std::string_view op = tag_value(k.tags, "coll_op");
  if (!parsed && op.empty()) return std::nullopt;
  an::RankCollectives::Execution e;
  e.op = !op.empty() ? std::string(op) : parsed->op;
  e.start_ns = k.start_ns;
  e.end_ns = k.end_ns;
  e.comm = std::string(tag_value(k.tags, "comm"));
  if (!e.comm.empty()) {
    auto number = [&](std::string_view key) {
      const std::string_view v = tag_value(k.tags, key);
      double out = 0;
      std::from_chars(v.data(), v.data() + v.size(), out);
      return out;
    };
    e.comm_ranks = static_cast<int>(number("comm_ranks"));
    if (const double nodes = number("comm_nodes"); nodes > 1) e.comm_nodes = static_cast<int>(nodes);
    e.bytes = number("coll_bytes");
    e.algorithm = std::string(tag_value(k.tags, "algo"));
    e.protocol = std::string(tag_value(k.tags, "proto"));
  }
  return e;
}

}  // namespace

void CollectiveJobsBuilder::add(const KernelEvent& k) {
  const auto parsed = collective_of(k);
  if (!parsed && !compute_spans_) return;
  Job& job = jobs_[std::string(tag_value(k.tags, "run"))];
  job.collectives = job.collectives || parsed.has_value();
  const std::string_view rank = tag_value(k.tags, "rank");
  auto add_to = [&](std::map<std::string, an::RankCollectives>& into, std::string key) {
    an::RankCollectives& r = into[key];
    if (r.rank.empty()) r.rank = std::move(key);
    if (!parsed) return r.compute.push_back({k.start_ns, k.end_ns});
    if (r.executions.empty()) r.device = k.device;
    r.executions.push_back(*parsed);
  };
  if (!rank.empty()) {
    job.tagged = true;
    add_to(job.by_rank, std::string(rank));
    if (!parsed) return;  // a tagged job's ranks are by tag: its compute is needed there only
  }
  // Collectives by their process too, for jobs whose processes carry no rank.
  add_to(job.by_process, rank_key(k.tags, k.device, false));
}

std::vector<JobCollectives> CollectiveJobsBuilder::finish(const an::CollectiveOptions& options) && {
  std::vector<JobCollectives> out;
  for (auto& [run, job] : jobs_) {
    if (!job.collectives) continue;
    std::vector<an::RankCollectives> ranks;
    auto& from = job.tagged ? job.by_rank : job.by_process;
    for (auto& [key, r] : from) ranks.push_back(std::move(r));
    out.push_back({run, job.tagged ? "rank tag" : "process", an::analyze_collectives(std::move(ranks), options)});
  }
  return out;
}

double link_peak_bytes_per_second(const std::vector<GpuDeviceInfo>& gpus) {
  double peak = 0;
  for (const GpuDeviceInfo& d : gpus) {
    const double p = d.link_peak_bytes_per_second();
    if (p > 0 && (peak == 0 || p < peak)) peak = p;
  }
  return peak;
}

Result<std::vector<JobCollectives>> read_collectives(const db::EventReader& events, const db::TimeRange& range,
                                                     const db::EventScope& scope, const an::CollectiveOptions& options) {
  CollectiveJobsBuilder jobs;
  Status s = events.for_each_kernel(range, scope, [&](const KernelEvent& k) { jobs.add(k); });
  if (!s.ok()) return s;
  return std::move(jobs).finish(options);
}

}  // namespace perfscope::service
