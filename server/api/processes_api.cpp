// GET /api/v1/processes: every process that ran on a GPU in a window, live ones from the
// tracker and past ones from the store (the two parts of a process that outlived a restart
// merged), with their lifetime figures; `gpu=` (index or UUID), `run=` (the run's processes
// while it ran), `group=container|pod|namespace` (sums per container, Kubernetes pod or namespace). GET /api/v1/processes/{key}: one
// process (`gpu=` where it ran on several) and its series over its lifetime.
#include <pwd.h>

#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/wire/event_codec.hpp"
#include "server/service/processes.hpp"

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

json optional_text(const std::string& v) { return v.empty() ? json(nullptr) : json(v); }

// The Kubernetes names are the kubelet's (null where it was not asked, or could not say).
json container_json(const ContainerIdentity& c) {
  return {{"runtime", c.runtime}, {"id", c.id}, {"pod_uid", c.pod_uid}, {"qos_class", c.qos_class},
          {"namespace", optional_text(c.pod_namespace)}, {"pod", optional_text(c.pod_name)}, {"name", optional_text(c.name)}};
}

// What `group=` sums processes by: the parameter's value, the answer's list, the grouping, and
// how a group is named.
struct Grouping {
  const char* name;
  const char* list;
  service::ProcessGrouping grouping;
  json (*describe)(const ContainerIdentity&);
};
constexpr Grouping kGroupings[] = {
    {"container", "containers", service::ProcessGrouping::kContainer,
     [](const ContainerIdentity& c) { return c.in_container() ? container_json(c) : json(nullptr); }},
    // Pods and namespaces as the kubelet named them; processes it named no pod for are one group (null).
    {"pod", "pods", service::ProcessGrouping::kPod,
     [](const ContainerIdentity& c) {
       return c.pod_name.empty() ? json(nullptr) : json{{"namespace", c.pod_namespace}, {"pod", c.pod_name}, {"pod_uid", c.pod_uid}};
     }},
    {"namespace", "namespaces", service::ProcessGrouping::kNamespace,
     [](const ContainerIdentity& c) { return optional_text(c.pod_namespace); }},
};

constexpr const char* kNoShare = "the driver reported no SM share for this process, so none of the GPU's time or energy "
                                 "can be attributed to it";

json process_json(const GpuProcessRecord& p, bool live) {
  const ContainerIdentity& c = p.identity.container;
  // What the newest pass saw, for live processes (the Processes view's live columns).
  json now = live ? json{{"memory_bytes", p.last.memory_bytes}, {"sm_ratio", optional_json(p.last.sm_ratio)},
                         {"cpu_seconds_total", optional_json(p.last.cpu_seconds)},
                         {"rss_bytes", optional_json(p.last.rss_bytes)}}
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
          {"peak_memory_bytes", p.peak_memory_bytes}, {"mean_memory_bytes", optional_json(p.mean_memory_bytes())},
          {"mean_sm_ratio", optional_json(p.mean_sm_ratio())},
          {"max_sm_ratio", service::sm_share_known(p) ? json(p.max_sm_ratio) : json(nullptr)},
          {"gpu_seconds", service::sm_share_known(p) ? json(p.gpu_seconds) : json(nullptr)},
          {"energy_joules", service::sm_share_known(p) ? json(p.energy_joules) : json(nullptr)}, {"cpu_seconds", p.cpu_seconds},
          {"peak_rss_bytes", p.peak_rss_bytes}, {"now", now},
          {"unknown", service::sm_share_known(p) ? json::object()
                                     : json{{"gpu_seconds", kNoShare}, {"energy_joules", kNoShare}, {"max_sm_ratio", kNoShare}}}};
}

}  // namespace

HttpResponse QueryEndpoints::processes(const HttpRequest& request) const {
  const TimestampNs now = now_ns();
  auto w = window_or(request, "1h", now);
  if (!w.ok()) return status_response(w.status());
  service::ProcessQuery query{.from_ns = w->from_ns, .to_ns = std::min(w->to_ns, now), .now = now,
                              .gpu = param(request, "gpu"), .run = param(request, "run")};
  const std::string group = param(request, "group");
  const Grouping* grouping = nullptr;
  for (const Grouping& g : kGroupings) {
    if (group == g.name) grouping = &g;
  }
  if (!group.empty() && !grouping) {
    return error_response(400, "invalid_argument", "'group' must be container, pod or namespace", "group");
  }
  if (grouping) query.grouping = grouping->grouping;
  auto listed = service::list_gpu_processes(sources_, query);
  if (!listed.ok()) return status_response(listed.status());
  json rows = json::array();
  for (const service::ListedProcess& l : listed->processes) rows.push_back(process_json(l.record, l.live));
  json out = {{"window", window_json(*w)}, {"processes", rows},
              {"methods", {{"energy", kEnergyMethod},
                           {"gpu_seconds", "the SM share integrated over the time the process was listed"},
                           {"identity", "a process is its pid and start time (procfs), so a reused pid is a new process; "
                                        "visible=false: perfscope's procfs does not show the pid (another pid namespace)"}}}};
  if (!query.run.empty()) out["run"] = query.run;
  if (grouping) {
    json g = json::array();
    for (const service::ProcessGroup& v : listed->groups) {
      g.push_back({{grouping->name, grouping->describe(v.who)}, {"processes", v.processes}, {"running", v.running},
                   {"peak_memory_bytes_sum", v.peak_memory_bytes_sum}, {"gpu_seconds", optional_json(v.gpu_seconds)},
                   {"energy_joules", optional_json(v.energy_joules)}, {"cpu_seconds", v.cpu_seconds}});
    }
    out[grouping->list] = g;
  }
  json unattributed = json::object();
  for (const auto& [uuid, joules] : listed->unattributed_joules) unattributed[uuid] = joules;
  out["unattributed_joules_since_start"] = unattributed;
  return json_response(200, out);
}

HttpResponse QueryEndpoints::process(const HttpRequest& request, const std::string& key) const {
  auto found = service::gpu_process(sources_, key, param(request, "gpu"), now_ns());
  if (!found.ok()) return status_response(found.status());
  json out = process_json(found->record, found->live);
  auto data = service::process_series(sources_, found->record, 1000);
  if (!data.ok()) return status_response(data.status());
  json series = json::array();
  for (const db::SeriesData& d : *data) {
    json points = json::array();
    if (d.downsampled) {
      for (const Bucket& b : d.buckets) points.push_back({b.start_ns, b.avg()});
    } else {
      for (const Sample& s : d.samples) points.push_back({s.ts_ns, s.value});
    }
    series.push_back({{"name", d.info.key.name}, {"labels", labels_to_json(d.info.key.labels)},
                      {"unit", d.info.family.unit}, {"points", points}});
  }
  out["series"] = series;
  return json_response(200, out);
}

}  // namespace perfscope::server
