// Process identity: cgroup paths as each container runtime writes them (cgroup v1 and v2, the
// systemd and cgroupfs drivers, Kubernetes QoS levels), stat lines with awkward commands, and
// a fixture procfs tree read as the collector reads it.
#include "engine/collectors/process_identity.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.hpp"

namespace perfscope {
namespace {

const std::string kId = "3f5b2a9c1d7e4f6a8b0c2d4e6f8a0b1c3d5e7f9a1b3c5d7e9f1a3b5c7d9e1f3a";
const std::string kPod = "8d2c6a1e-4b7f-4e2a-9c3d-5f6e7a8b9c0d";
std::string underscored(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

struct Case {
  const char* what;
  std::string cgroup;  // the text of /proc/PID/cgroup
  std::string runtime, id, pod_uid, qos;
};

TEST(ProcessIdentity, EveryRuntimesCgroupPathIsRead) {
  const std::string v1_rest = "12:cpuset:/\n11:memory:/\n1:name=systemd:/\n";
  const Case cases[] = {
      {"docker, cgroupfs, v1", "12:cpuset:/docker/" + kId + "\n11:memory:/docker/" + kId + "\n1:name=systemd:/docker/" + kId + "\n",
       "docker", kId, "", ""},
      {"docker, systemd, v2", "0::/system.slice/docker-" + kId + ".scope\n", "docker", kId, "", ""},
      {"docker with a sub-cgroup inside, v2", "0::/system.slice/docker-" + kId + ".scope/init\n", "docker", kId, "", ""},
      {"containerd, nerdctl namespace, cgroupfs", "0::/default/" + kId + "\n", "containerd", kId, "", ""},
      {"Kubernetes burstable on containerd, systemd, v2",
       "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + underscored(kPod) +
           ".slice/cri-containerd-" + kId + ".scope\n",
       "containerd", kId, kPod, "burstable"},
      {"Kubernetes guaranteed on CRI-O, systemd, v2",
       "0::/kubepods.slice/kubepods-pod" + underscored(kPod) + ".slice/crio-" + kId + ".scope\n", "cri-o", kId, kPod,
       "guaranteed"},
      {"CRI-O's conmon", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + underscored(kPod) +
                             ".slice/crio-conmon-" + kId + ".scope\n",
       "cri-o", kId, kPod, "besteffort"},
      {"Kubernetes besteffort, cgroupfs, v1",
       "11:memory:/kubepods/besteffort/pod" + kPod + "/" + kId + "\n4:cpu,cpuacct:/kubepods/besteffort/pod" + kPod + "/" + kId + "\n",
       "kubernetes", kId, kPod, "besteffort"},
      {"a pod's own cgroup", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + underscored(kPod) + ".slice\n",
       "kubernetes", "", kPod, "burstable"},
      {"podman rootful, v2", "0::/machine.slice/libpod-" + kId + ".scope/container\n", "podman", kId, "", ""},
      {"podman rootless, v2",
       "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId + ".scope\n", "podman", kId, "", ""},
      {"podman, cgroupfs", "0::/libpod_parent/libpod-" + kId + "\n", "podman", kId, "", ""},
      {"a systemd service, v2", "0::/system.slice/nvidia-persistenced.service\n", "systemd", "nvidia-persistenced.service", "", ""},
      {"a login session, v1", v1_rest + "1:name=systemd:/user.slice/user-1000.slice/session-3.scope\n", "systemd",
       "session-3.scope", "", ""},
      {"the root cgroup", "0::/\n", "", "", "", ""},
      {"a hex-looking directory of no runtime", "0::/batch/" + kId + "\n", "", "", "", ""},
  };
  for (const Case& c : cases) {
    ContainerIdentity got = parse_cgroup(c.cgroup);
    EXPECT_EQ(got.runtime, c.runtime) << c.what;
    EXPECT_EQ(got.id, c.id) << c.what;
    EXPECT_EQ(got.pod_uid, c.pod_uid) << c.what;
    EXPECT_EQ(got.qos_class, c.qos) << c.what;
    EXPECT_EQ(got.in_container(), !c.runtime.empty() && c.runtime != "systemd") << c.what;
  }
}

TEST(ProcessIdentity, ACgroupV1LineWithAContainerWinsOverRootLines) {
  auto got = parse_cgroup("12:cpuset:/\n11:memory:/docker/" + kId + "\n1:name=systemd:/system.slice/docker.service\n0::/\n");
  EXPECT_EQ(got.runtime, "docker");
  EXPECT_EQ(got.cgroup, "/docker/" + kId);
}

TEST(ProcessIdentity, StartTimeIsCountedAfterTheLastParenthesis) {
  // A command with spaces and a ')' of its own; starttime is the 22nd field.
  const std::string stat =
      "4242 (python3 (worker) 1) S 1 4242 4242 0 -1 4194560 9383 0 0 0 153 25 0 0 20 0 9 0 987654321 3201024 1234 "
      "18446744073709551615 1 1 0 0 0 0 0 16781312 17410 0 0 0 17 3 0 0 0 0 0\n";
  EXPECT_EQ(parse_stat_start_ticks(stat), 987654321u);
  auto usage = parse_stat_usage(stat).value();
  EXPECT_EQ(usage.cpu_ticks, 153u + 25u);
  EXPECT_EQ(usage.rss_pages, 1234u);
  EXPECT_FALSE(parse_stat_start_ticks("4242 (no close S 1"));
  EXPECT_FALSE(parse_stat_start_ticks("4242 (short) S 1 2 3\n"));
}

TEST(ProcessIdentity, AProcessIsReadFromItsProcfsDirectory) {
  testing::TempDir root;
  std::filesystem::create_directories(root.file("4242"));
  auto write = [&](const char* name, const std::string& text) { std::ofstream(root.file(std::string("4242/") + name)) << text; };
  write("stat", "4242 (python3) S 1 4242 4242 0 -1 0 0 0 0 0 0 0 0 0 20 0 9 0 123456 0 0\n");
  write("comm", "python3\n");
  write("cmdline", std::string("python3\0serve.py\0--model\0llama\0", 31));
  write("status", "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n");
  write("cgroup", "0::/system.slice/docker-" + kId + ".scope\n");
  auto p = read_process_identity(root.str(), 4242);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->key(), "4242-123456");
  EXPECT_EQ(p->command, "python3");
  EXPECT_EQ(p->cmdline, "python3 serve.py --model llama");
  EXPECT_EQ(p->uid, 1000u);
  EXPECT_EQ(p->container.runtime, "docker");
  EXPECT_EQ(read_process_identity(root.str(), 4242, 10)->cmdline, "python3 se");
  // A pid this procfs does not show (gone, or another pid namespace) is said to be so.
  auto missing = read_process_identity(root.str(), 99);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace perfscope
