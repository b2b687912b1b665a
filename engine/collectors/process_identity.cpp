#include "engine/collectors/process_identity.hpp"

#include <algorithm>
#include <vector>

#include "engine/collectors/proc_file.hpp"

namespace perfscope {

namespace {

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) out.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

bool is_hex_id(std::string_view s) {
  return s.size() >= 12 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string_view strip_suffix(std::string_view s, std::string_view suffix) {
  return s.ends_with(suffix) ? s.substr(0, s.size() - suffix.size()) : s;
}

// The runtime and id one path component names, if it names a container.
bool container_of(std::string_view part, std::string_view parent, bool in_kubepods, ContainerIdentity& out) {
  const std::string_view unit = strip_suffix(part, ".scope");
  static constexpr std::pair<std::string_view, std::string_view> kPrefixes[] = {
      {"docker-", "docker"},      {"cri-containerd-", "containerd"}, {"crio-conmon-", "cri-o"},
      {"crio-", "cri-o"},         {"libpod-conmon-", "podman"},      {"libpod-", "podman"},
      {"containerd-", "containerd"},
  };
  for (auto [prefix, runtime] : kPrefixes) {
    if (unit.starts_with(prefix) && is_hex_id(unit.substr(prefix.size()))) {
      out.runtime = runtime;
      out.id = std::string(unit.substr(prefix.size()));
      return true;
    }
  }
  if (!is_hex_id(part)) return false;
  // The cgroupfs driver: a bare id under its runtime's directory.
  if (parent == "docker") out.runtime = "docker";
  else if (parent == "libpod_parent") out.runtime = "podman";
  else if (in_kubepods) out.runtime = "kubernetes";
  else if (parent == "default" || parent == "k8s.io" || parent == "moby") out.runtime = "containerd";
  else return false;
  out.id = std::string(part);
  return true;
}

// Kubernetes' pod UID and QoS class from the components of a kubepods path.
void kubernetes_pod(const std::vector<std::string_view>& parts, ContainerIdentity& out) {
  for (std::string_view p : parts) {
    std::string_view s = strip_suffix(p, ".slice");
    for (std::string_view qos : {"burstable", "besteffort"}) {
      if (s == qos || s == "kubepods-" + std::string(qos)) out.qos_class = std::string(qos);
    }
    const std::size_t pod = s.rfind("pod");
    if (pod == std::string_view::npos || (pod > 0 && s[pod - 1] != '-')) continue;
    std::string uid(s.substr(pod + 3));
    if (uid.size() < 32) continue;
    std::replace(uid.begin(), uid.end(), '_', '-');  // the systemd driver escapes dashes
    out.pod_uid = std::move(uid);
  }
  if (!out.pod_uid.empty() && out.qos_class.empty()) out.qos_class = "guaranteed";
}

ContainerIdentity identify(std::string_view path) {
  ContainerIdentity out;
  out.cgroup = std::string(path);
  const auto parts = components(path);
  const bool in_kubepods = std::any_of(parts.begin(), parts.end(), [](std::string_view p) { return p.starts_with("kubepods"); });
  // From the innermost component out: a container may hold sub-cgroups of its own.
  for (std::size_t i = parts.size(); i-- > 0;) {
    if (container_of(parts[i], i > 0 ? parts[i - 1] : std::string_view(), in_kubepods, out)) {
      if (in_kubepods) kubernetes_pod(parts, out);
      return out;
    }
  }
  if (in_kubepods) {
    kubernetes_pod(parts, out);
    if (!out.pod_uid.empty()) {
      out.runtime = "kubernetes";  // the pod's own cgroup (its pause process, or a pod-level one)
      return out;
    }
  }
  for (std::size_t i = parts.size(); i-- > 0;) {
    if (parts[i].ends_with(".service") || parts[i].ends_with(".scope")) {
      out.runtime = "systemd";
      out.id = std::string(parts[i]);
      return out;
    }
  }
  return out;
}

int rank(const ContainerIdentity& c) {
  if (c.in_container()) return 3;
  if (c.runtime == "systemd") return 2;
  return c.cgroup.empty() || c.cgroup == "/" ? 0 : 1;
}

}  // namespace

ContainerIdentity parse_cgroup(std::string_view text) {
  ContainerIdentity best;
  bool any = false;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // "hierarchy-ID:controller-list:cgroup-path"; the path may itself hold ':'.
    const std::size_t a = line.find(':');
    const std::size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    ContainerIdentity c = identify(trim(line.substr(b + 1)));
    if (!any || rank(c) > rank(best)) best = std::move(c);
    any = true;
  }
  return best;
}

std::optional<std::uint64_t> stat_field(std::string_view stat, int wanted) {
  const std::size_t close = stat.rfind(')');
  if (close == std::string_view::npos || wanted < 3) return std::nullopt;
  std::string_view rest = stat.substr(close + 1);
  // After the command: field 3 (state) onward.
  int field = 2;
  while (!rest.empty()) {
    rest = rest.substr(std::min(rest.find_first_not_of(" \n"), rest.size()));
    if (rest.empty()) break;
    const std::size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    if (++field == wanted) {
      auto v = parse_int(rest.substr(0, end));
      if (!v || *v < 0) return std::nullopt;
      return static_cast<std::uint64_t>(*v);
    }
    rest.remove_prefix(end);
  }
  return std::nullopt;
}

std::optional<ProcessUsage> parse_stat_usage(std::string_view stat) {
  auto utime = stat_field(stat, 14), stime = stat_field(stat, 15), rss = stat_field(stat, 24);
  if (!utime || !stime || !rss) return std::nullopt;
  return ProcessUsage{*utime + *stime, *rss};
}

Result<ProcessIdentity> read_process_identity(const std::string& proc_root, int pid, std::size_t cmdline_cap) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  auto stat = read_small_file(dir + "/stat");
  if (!stat) return Status::not_found("process " + std::to_string(pid) + " is not visible in " + proc_root, "pid");
  ProcessIdentity p;
  p.pid = pid;
  auto start = parse_stat_start_ticks(*stat);
  if (!start) return Status::invalid_argument("cannot read the start time of process " + std::to_string(pid), "pid");
  p.start_ticks = *start;
  if (auto comm = read_small_file(dir + "/comm")) p.command = std::string(trim(*comm));
  if (auto cmdline = read_small_file(dir + "/cmdline")) {
    std::string& c = *cmdline;
    while (!c.empty() && c.back() == '\0') c.pop_back();
    std::replace(c.begin(), c.end(), '\0', ' ');
    if (c.size() > cmdline_cap) c.resize(cmdline_cap);
    p.cmdline = std::move(c);
  }
  if (auto status = read_small_file(dir + "/status")) {
    const std::size_t at = status->find("\nUid:");
    if (at != std::string::npos) {
      std::string_view rest = std::string_view(*status).substr(at + 5);
      rest = rest.substr(0, rest.find_first_of(" \t\n", rest.find_first_not_of(" \t")));
      if (auto uid = parse_int(trim(rest)); uid && *uid >= 0) p.uid = static_cast<std::uint32_t>(*uid);
    }
  }
  if (auto cgroup = read_small_file(dir + "/cgroup")) p.container = parse_cgroup(*cgroup);
  return p;
}

}  // namespace perfscope
