// Who a process is, as the Processes view and per-process GPU attribution name it: a key that
// survives pid reuse (pid + start time since boot, from /proc/PID/stat), its command, command
// line (capped), user id, and the container it runs in, read from its cgroup path.
//
// Container runtimes write recognisable cgroup paths (v1: one line per hierarchy; v2: the
// single `0::` line), under the systemd or the cgroupfs driver:
//   Docker      /docker/ID                      /system.slice/docker-ID.scope
//   containerd  /default/ID (nerdctl)            …/cri-containerd-ID.scope (Kubernetes)
//   CRI-O       …/crio-ID.scope                  (conmon's own scope: crio-conmon-ID.scope)
//   Podman      /libpod_parent/libpod-ID         /machine.slice/libpod-ID.scope, rootless under user@UID.service
//   Kubernetes  /kubepods/QOS/podUID/ID          /kubepods.slice/kubepods-QOS.slice/kubepods-QOS-podUID.slice/…
//               (a Guaranteed pod has no QOS level; systemd writes the pod UID with '_' for '-')
//   systemd     /system.slice/NAME.service, /user.slice/user-1000.slice/session-3.scope
// Anything else is no container (runtime empty); the path is kept as it was read.
//
// Pure parsing plus one reader over a procfs root (a parameter, so tests use fixture trees).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/base/status.hpp"

namespace perfscope {

struct ContainerIdentity {
  std::string runtime;    // "docker", "containerd", "cri-o", "podman", "kubernetes" (runtime unknown), "systemd", or empty
  std::string id;         // the container id (64 hex digits as runtimes write it), or the systemd unit
  std::string pod_uid;    // Kubernetes pods: the pod's UID with dashes
  std::string qos_class;  // Kubernetes pods: "guaranteed", "burstable" or "besteffort"
  std::string cgroup;     // the path it was read from
  // Kubernetes names, from the kubelet (PodDirectory), not the cgroup: empty when unknown.
  std::string pod_namespace, pod_name, name;
  // The `container` label of its series: the Kubernetes container's name where known, else the
  // runtime's short id (12 hex digits, as `docker ps` shows it).
  std::string label() const { return !name.empty() ? name : id.substr(0, 12); }
  bool in_container() const { return !runtime.empty() && runtime != "systemd"; }
};

// The container of a process from the text of /proc/PID/cgroup: the unified (v2) line when
// there is one, else the v1 hierarchy whose path says the most (a container id over a slice).
ContainerIdentity parse_cgroup(std::string_view proc_pid_cgroup);

struct ProcessIdentity {
  int pid = 0;
  std::uint64_t start_ticks = 0;  // clock ticks after boot (stat field 22)
  std::string command;            // comm
  std::string cmdline;            // arguments joined by spaces, at most `cmdline_cap` bytes
  std::optional<std::uint32_t> uid;  // real uid (status "Uid:")
  ContainerIdentity container;
  // "PID-START": unique for the boot even when the pid is reused.
  std::string key() const { return std::to_string(pid) + "-" + std::to_string(start_ticks); }
};

// Reads PROC_ROOT/PID/{stat,comm,cmdline,status,cgroup}. not_found when the process is not
// visible there (gone, or in another pid namespace): callers say so rather than guess.
Result<ProcessIdentity> read_process_identity(const std::string& proc_root, int pid, std::size_t cmdline_cap = 4096);

// Fields of /proc/PID/stat by their number in proc(5) (1: pid); the command (field 2) may hold
// spaces and parentheses, so fields are counted after the last ')'. Numeric fields 3 onward.
std::optional<std::uint64_t> stat_field(std::string_view stat, int field);
// The start time of a process (field 22: clock ticks after boot).
inline std::optional<std::uint64_t> parse_stat_start_ticks(std::string_view stat) { return stat_field(stat, 22); }

// What a process costs the host at one reading: CPU time (user + system, fields 14 and 15, in
// clock ticks) and resident pages (field 24).
struct ProcessUsage {
  std::uint64_t cpu_ticks = 0;
  std::uint64_t rss_pages = 0;
};
std::optional<ProcessUsage> parse_stat_usage(std::string_view stat);

}  // namespace perfscope
