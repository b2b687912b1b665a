// GET /api/v1/processes: every process that ran on a GPU in a window, live ones from the
// tracker and past ones from the store (the two parts of a process that outlived a restart
// merged), with their lifetime figures; `gpu=` (index or UUID), `run=` (the run's processes
// while it ran), `group=container|pod|namespace` (sums per container, Kubernetes pod or namespace). GET /api/v1/processes/{key}: one
// process (`gpu=` where it ran on several) and its series over its lifetime.
#include <pwd.h>

#include <map>

#include "engine/collectors/process_tracker.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/wire/event_codec.hpp"
#include "engine/series/metric_names.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace {

constexpr const char* kEnergyMethod =
    "the board's energy in each interval between two sampling passes (power x interval) split by the processes' SM "
    "shares in it (NVML's per-process samples); intervals in which no process had an SM share are nobody's "
    "(unattributed_joules). A process's energy includes its share of the board's static power while it computes and "
    "nothing of its memory traffic or other engines; processes of other pid namespaces count under their host pid.";

std::string user_name(std::optional<std::uint32_t> uid) {
  if (!uid) return {};
  passwd entry{};
  passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(*uid, &entry, buf, sizeof buf, &found) == 0 && found) return found->pw_name;
  return std::to_string(*uid);
}

json optional_number(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

json optional_text(const std::string& v) { return v.empty() ? json(nullptr) : json(v); }

// The Kubernetes names are the kubelet's (null where it was not asked, or could not say).
json container_json(const ContainerIdentity& c) {
  return {{"runtime", c.runtime}, {"id", c.id}, {"pod_uid", c.pod_uid}, {"qos_class", c.qos_class},
          {"namespace", optional_text(c.pod_namespace)}, {"pod", optional_text(c.pod_name)}, {"name", optional_text(c.name)}};
}

// What `group=` sums processes by: the key of a process's group, and how the group is named.
struct Grouping {
  const char* name;      // the parameter's value
  const char* list;      // the answer's list
  std::string (*key)(const ContainerIdentity&);
  json (*describe)(const ContainerIdentity&);
};
constexpr Grouping kGroupings[] = {
    {"container", "containers",
     [](const ContainerIdentity& c) { return c.in_container() ? c.runtime + "/" + c.id : std::string(); },
     [](const ContainerIdentity& c) { return c.in_container() ? container_json(c) : json(nullptr); }},
    // Pods and namespaces as the kubelet named them; processes it named no pod for are one group (null).
    {"pod", "pods",
     [](const ContainerIdentity& c) { return c.pod_name.empty() ? std::string() : c.pod_namespace + "/" + c.pod_name; },
     [](const ContainerIdentity& c) {
       return c.pod_name.empty() ? json(nullptr) : json{{"namespace", c.pod_namespace}, {"pod", c.pod_name}, {"pod_uid", c.pod_uid}};
     }},
    {"namespace", "namespaces", [](const ContainerIdentity& c) { return c.pod_namespace; },
     [](const ContainerIdentity& c) { return optional_text(c.pod_namespace); }},
};

// Unknown is not zero: a process for which the driver never reported an SM share has no
// share of the board's time or energy that can be attributed to it (0 would read as "idle").
constexpr const char* kNoShare = "the driver reported no SM share for this process, so none of the GPU's time or energy "
                                 "can be attributed to it";
bool share_known(const GpuProcessRecord& p) { return p.sm_observed_seconds > 0; }

json process_json(const GpuProcessRecord& p, bool live) {
  const ContainerIdentity& c = p.identity.container;
  // What the newest pass saw, for live processes (the Processes view's live columns).
  json now = live ? json{{"memory_bytes", p.last.memory_bytes}, {"sm_ratio", optional_number(p.last.sm_ratio)},
                         {"cpu_seconds_total", optional_number(p.last.cpu_seconds)},
                         {"rss_bytes", optional_number(p.last.rss_bytes)}}
                  : json(nullptr);
  // A stored row marked running whose process the tracker no longer lists ended while no
  // perfscope watched: when is unknown.
  const char* state = live ? "running" : p.running ? "unknown" : "exited";
  return {{"gpu", p.gpu}, {"gpu_uuid", p.gpu_uuid}, {"key", p.key}, {"pid", p.identity.pid},
          {"visible", p.visible}, {"command", p.identity.command}, {"cmdline", p.identity.cmdline},
          {"uid", p.identity.uid ? json(*p.identity.uid) : json(nullptr)}, {"user", user_name(p.identity.uid)},
          {"container", c.in_container() ? container_json(c) : json(nullptr)},
          {"systemd_unit", c.runtime == "systemd" ? json(c.id) : json(nullptr)},
          {"state", state}, {"first_seen_ns", p.first_seen_ns}, {"last_seen_ns", p.last_seen_ns},
          {"duration_s", static_cast<double>(p.last_seen_ns - p.first_seen_ns) / 1e9},
          {"peak_memory_bytes", p.peak_memory_bytes}, {"mean_memory_bytes", optional_number(p.mean_memory_bytes())},
          {"mean_sm_ratio", optional_number(p.mean_sm_ratio())},
          {"max_sm_ratio", share_known(p) ? json(p.max_sm_ratio) : json(nullptr)},
          {"gpu_seconds", share_known(p) ? json(p.gpu_seconds) : json(nullptr)},
          {"energy_joules", share_known(p) ? json(p.energy_joules) : json(nullptr)}, {"cpu_seconds", p.cpu_seconds},
          {"peak_rss_bytes", p.peak_rss_bytes}, {"now", now},
          {"unknown", share_known(p) ? json::object()
                                     : json{{"gpu_seconds", kNoShare}, {"energy_joules", kNoShare}, {"max_sm_ratio", kNoShare}}}};
}

}  // namespace

HttpResponse QueryEndpoints::processes(const HttpRequest& request) const {
  const TimestampNs now = now_ns();
  auto w = window_or(request, "1h", now);
  if (!w.ok()) return status_response(w.status());
  TimestampNs from = w->from_ns, to = std::min(w->to_ns, now);
  const std::string gpu = param(request, "gpu"), group = param(request, "group"), run_name = param(request, "run");
  const Grouping* grouping = nullptr;
  for (const Grouping& g : kGroupings) {
    if (group == g.name) grouping = &g;
  }
  if (!group.empty() && !grouping) {
    return error_response(400, "invalid_argument", "'group' must be container, pod or namespace", "group");
  }
  std::vector<std::int64_t> run_pids;
  if (!run_name.empty()) {
    auto r = sources_.events->run(run_name);
    if (!r.ok()) return status_response(r.status());
    if (!*r) return error_response(404, "not_found", no_run_message(run_name), "run");
    run_pids = (*r)->pids;
    from = std::max(from, (*r)->start_ns);
    to = std::min(to, (*r)->end_ns.value_or(now));
  }
  auto listed = service::gpu_processes_in(sources_, from, to);
  if (!listed.ok()) return status_response(listed.status());
  json rows = json::array();
  struct Group {
    json who;
    std::size_t processes = 0, running = 0, with_share = 0;  // with_share: processes whose SM share is known
    double peak_memory_bytes = 0, gpu_seconds = 0, energy_joules = 0, cpu_seconds = 0;
  };
  std::map<std::string, Group> groups;
  for (const ListedProcess& l : *listed) {
    const GpuProcessRecord& p = l.record;
    if (!gpu.empty() && p.gpu != gpu && p.gpu_uuid != gpu) continue;
    if (!run_name.empty() && std::find(run_pids.begin(), run_pids.end(), p.identity.pid) == run_pids.end()) continue;
    json row = process_json(p, l.live);
    if (grouping) {
      const ContainerIdentity& c = p.identity.container;
      Group& g = groups[grouping->key(c)];
      if (g.processes == 0) g.who = grouping->describe(c);
      ++g.processes;
      g.running += l.live ? 1 : 0;
      g.peak_memory_bytes += p.peak_memory_bytes;  // each process's own peak: an upper bound of the sum's
      if (share_known(p)) {
        ++g.with_share;
        g.gpu_seconds += p.gpu_seconds;
        g.energy_joules += p.energy_joules;
      }
      g.cpu_seconds += p.cpu_seconds;
    }
    rows.push_back(std::move(row));
  }
  json out = {{"window", window_json(*w)}, {"processes", rows},
              {"methods", {{"energy", kEnergyMethod},
                           {"gpu_seconds", "the SM share integrated over the time the process was listed"},
                           {"identity", "a process is its pid and start time (procfs), so a reused pid is a new process; "
                                        "visible=false: perfscope's procfs does not show the pid (another pid namespace)"}}}};
  if (!run_name.empty()) out["run"] = run_name;
  if (grouping) {
    json g = json::array();
    for (const auto& [key, v] : groups) {
      g.push_back({{grouping->name, v.who}, {"processes", v.processes}, {"running", v.running},
                   {"peak_memory_bytes_sum", v.peak_memory_bytes},
                   // Over the processes whose share is known; unknown when none is.
                   {"gpu_seconds", v.with_share ? json(v.gpu_seconds) : json(nullptr)},
                   {"energy_joules", v.with_share ? json(v.energy_joules) : json(nullptr)}, {"cpu_seconds", v.cpu_seconds}});
    }
    out[grouping->list] = g;
  }
  json unattributed = json::object();
  if (sources_.processes) {
    for (const auto& [uuid, joules] : sources_.processes->unattributed_joules()) unattributed[uuid] = joules;
  }
  out["unattributed_joules_since_start"] = unattributed;
  return json_response(200, out);
}

HttpResponse QueryEndpoints::process(const HttpRequest& request, const std::string& key) const {
  const TimestampNs now = now_ns();
  auto listed = service::gpu_processes_in(sources_, 0, now, key);
  if (!listed.ok()) return status_response(listed.status());
  const std::string gpu = param(request, "gpu");
  std::vector<const ListedProcess*> found;
  for (const ListedProcess& l : *listed) {
    if (l.record.key == key && (gpu.empty() || l.record.gpu == gpu || l.record.gpu_uuid == gpu)) found.push_back(&l);
  }
  if (found.empty()) return error_response(404, "not_found", "no GPU process " + key, "key");
  if (found.size() > 1) {
    return error_response(400, "invalid_argument", "process " + key + " ran on several GPUs: give gpu", "gpu");
  }
  const GpuProcessRecord& p = found.front()->record;
  json out = process_json(p, found.front()->live);
  // Its series over its lifetime: the pid and GPU label them; the lifetime keeps a reused pid out.
  json series = json::array();
  for (const char* family : {metric_names::kGpuProcessMemory, metric_names::kGpuProcessUtilization, metric_names::kGpuProcessCpu,
                             metric_names::kGpuProcessResidentMemory}) {
    db::HistoryQuery q;
    q.name = family;
    q.matchers = {{"gpu", p.gpu}, {"pid", std::to_string(p.identity.pid)}};
    q.from_ns = p.first_seen_ns;
    q.to_ns = p.last_seen_ns;
    q.max_points = 1000;
    auto data = sources_.history->query(q);
    if (!data.ok()) return status_response(data.status());
    for (const auto& d : *data) {
      json points = json::array();
      if (d.downsampled) {
        for (const Bucket& b : d.buckets) points.push_back({b.start_ns, b.avg()});
      } else {
        for (const Sample& s : d.samples) points.push_back({s.ts_ns, s.value});
      }
      series.push_back({{"name", d.info.key.name}, {"labels", labels_to_json(d.info.key.labels)},
                        {"unit", d.info.family.unit}, {"points", points}});
    }
  }
  out["series"] = series;
  return json_response(200, out);
}

}  // namespace perfscope::server
