#include "server/service/processes.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "engine/series/metric_names.hpp"
#include "server/service/scoped_reads.hpp"

namespace perfscope::service {

Result<std::vector<ListedProcess>> gpu_processes_in(const Sources& sources, TimestampNs from_ns, TimestampNs to_ns,
                                                    const std::string& key) {
  std::map<std::pair<std::string, std::string>, ListedProcess> by_key;
  PERFSCOPE_ASSIGN_OR_RETURN(auto stored, sources.events->gpu_processes(from_ns, to_ns, 100'000, key));
  for (GpuProcessRecord& r : stored) {
    std::pair id{r.gpu_uuid, r.key};  // before the record moves (the right side of = runs first)
    by_key[std::move(id)] = ListedProcess{std::move(r), false};
  }
  if (sources.processes) {
    for (GpuProcessRecord& r : sources.processes->running()) {
      if (r.last_seen_ns < from_ns || r.first_seen_ns > to_ns || (!key.empty() && r.key != key)) continue;
      auto [it, fresh] = by_key.try_emplace({r.gpu_uuid, r.key});
      if (fresh) {
        it->second.record = std::move(r);
      } else {
        it->second.record.merge(r);  // the part stored before a restart, and now
      }
      it->second.live = true;
    }
  }
  std::vector<ListedProcess> out;
  for (auto& [id, l] : by_key) out.push_back(std::move(l));
  std::sort(out.begin(), out.end(), [](const ListedProcess& a, const ListedProcess& b) {
    return std::tie(b.live, b.record.last_seen_ns) < std::tie(a.live, a.record.last_seen_ns);
  });
  return out;
}

namespace {

// The group a process counts in under a grouping ("" for processes outside any).
std::string group_key(ProcessGrouping grouping, const ContainerIdentity& c) {
  switch (grouping) {
    case ProcessGrouping::kContainer:
      return c.in_container() ? c.runtime + "/" + c.id : std::string();
    case ProcessGrouping::kPod:  // as the kubelet named it
      return c.pod_name.empty() ? std::string() : c.pod_namespace + "/" + c.pod_name;
    case ProcessGrouping::kNamespace:
      return c.pod_namespace;
    case ProcessGrouping::kNone:
      break;
  }
  return {};
}

bool on_gpu(const GpuProcessRecord& p, const std::string& gpu) { return gpu.empty() || p.gpu == gpu || p.gpu_uuid == gpu; }

std::vector<ProcessGroup> groups_of(const std::vector<ListedProcess>& processes, ProcessGrouping grouping) {
  std::map<std::string, ProcessGroup> groups;
  for (const ListedProcess& l : processes) {
    const GpuProcessRecord& p = l.record;
    const std::string key = group_key(grouping, p.identity.container);
    auto [it, fresh] = groups.try_emplace(key);
    ProcessGroup& g = it->second;
    if (fresh) {
      g.key = key;
      g.who = p.identity.container;
    }
    ++g.processes;
    g.running += l.live ? 1 : 0;
    g.peak_memory_bytes_sum += p.peak_memory_bytes;
    g.cpu_seconds += p.cpu_seconds;
    if (sm_share_known(p)) {
      g.gpu_seconds = g.gpu_seconds.value_or(0) + p.gpu_seconds;
      g.energy_joules = g.energy_joules.value_or(0) + p.energy_joules;
    }
  }
  std::vector<ProcessGroup> out;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

}  // namespace

Result<ProcessList> list_gpu_processes(const Sources& sources, const ProcessQuery& query) {
  ProcessList out;
  out.from_ns = query.from_ns;
  out.to_ns = query.to_ns;
  std::vector<std::int64_t> run_pids;
  if (!query.run.empty()) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto r, sources.events->run(query.run));
    if (!r) return Status::not_found(no_run_message(query.run), "run");
    run_pids = r->pids;
    out.from_ns = std::max(out.from_ns, r->start_ns);
    out.to_ns = std::min(out.to_ns, r->end_ns.value_or(query.now));
  }
  PERFSCOPE_ASSIGN_OR_RETURN(auto listed, gpu_processes_in(sources, out.from_ns, out.to_ns));
  for (ListedProcess& l : listed) {
    if (!on_gpu(l.record, query.gpu)) continue;
    if (!query.run.empty() && std::find(run_pids.begin(), run_pids.end(), l.record.identity.pid) == run_pids.end()) continue;
    out.processes.push_back(std::move(l));
  }
  if (query.grouping != ProcessGrouping::kNone) out.groups = groups_of(out.processes, query.grouping);
  if (sources.processes) out.unattributed_joules = sources.processes->unattributed_joules();
  return out;
}

Result<ListedProcess> gpu_process(const Sources& sources, const std::string& key, const std::string& gpu,
                                  TimestampNs now) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto listed, gpu_processes_in(sources, 0, now, key));
  std::vector<ListedProcess*> found;
  for (ListedProcess& l : listed) {
    if (on_gpu(l.record, gpu)) found.push_back(&l);  // gpu_processes_in kept `key`'s alone
  }
  if (found.empty()) return Status::not_found("no GPU process " + key, "key");
  if (found.size() > 1) return Status::invalid_argument("process " + key + " ran on several GPUs: give gpu", "gpu");
  return std::move(*found.front());
}

Result<std::vector<db::SeriesData>> process_series(const Sources& sources, const GpuProcessRecord& process,
                                                   std::size_t max_points) {
  std::vector<db::SeriesData> out;
  for (const char* family : {metric_names::kGpuProcessMemory, metric_names::kGpuProcessUtilization,
                             metric_names::kGpuProcessCpu, metric_names::kGpuProcessResidentMemory}) {
    db::HistoryQuery q;
    q.name = family;
    q.matchers = {{"gpu", process.gpu}, {"pid", std::to_string(process.identity.pid)}};
    q.from_ns = process.first_seen_ns;
    q.to_ns = process.last_seen_ns;
    q.max_points = max_points;
    PERFSCOPE_ASSIGN_OR_RETURN(auto data, sources.history->query(q));
    for (db::SeriesData& d : data) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace perfscope::service
