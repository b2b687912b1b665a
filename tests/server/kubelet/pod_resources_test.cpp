// The PodResources decoder on hand-encoded protobuf (the wire format by the book: tags, varints,
// length-delimited fields), and the directory's matching of device plugin ids to GPUs.
#include "server/kubelet/pod_resources.hpp"

#include <gtest/gtest.h>

#include "engine/collectors/pod_directory.hpp"

namespace perfscope::server {
namespace {

std::string varint(std::uint64_t v) {
  std::string out;
  do {
    unsigned char b = v & 0x7F;
    v >>= 7;
    out.push_back(static_cast<char>(v ? b | 0x80 : b));
  } while (v);
  return out;
}
std::string field(int number, const std::string& payload) { return varint(std::uint64_t(number) << 3 | 2) + varint(payload.size()) + payload; }
std::string number_field(int number, std::uint64_t v) { return varint(std::uint64_t(number) << 3) + varint(v); }

std::string devices(const std::string& resource, std::vector<std::string> ids) {
  std::string out = field(1, resource);
  for (const auto& id : ids) out += field(2, id);
  return out + field(3, field(1, number_field(1, 0)));  // topology: NUMA node 0
}

TEST(PodResourcesTest, DecodesPodsContainersAndDevicesSkippingWhatItDoesNotRead) {
  const std::string container = field(2, devices("nvidia.com/gpu", {"GPU-a", "GPU-b"})) + field(1, "vllm") +
                                field(3, number_field(1, 2) + number_field(1, 3)) +  // cpu_ids, packed
                                number_field(9, 42) +                                 // a field of a newer kubelet
                                std::string("\x55\x01\x02\x03\x04", 5);               // fixed32, field 10
  const std::string pod = field(1, "llm-0") + field(2, "serving") + field(3, container) + field(3, field(1, "no-devices"));
  const std::string response = field(1, pod) + field(1, field(1, "empty") + field(2, "kube-system"));
  auto decoded = decode_list_pod_resources(response);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_EQ(decoded->size(), 1u);
  const PodDevices& d = decoded->front();
  EXPECT_EQ(d.ref, (PodRef{"serving", "llm-0", "vllm"}));
  EXPECT_EQ(d.resource, "nvidia.com/gpu");
  EXPECT_EQ(d.device_ids, (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_TRUE(decode_list_pod_resources("")->empty());  // a node without pods
}

TEST(PodResourcesTest, RefusesMalformedMessages) {
  const std::string good = field(1, field(1, "p") + field(2, "ns") + field(3, field(1, "c") + field(2, devices("nvidia.com/gpu", {"0"}))));
  for (std::size_t cut = 1; cut < good.size(); ++cut) {
    auto r = decode_list_pod_resources(good.substr(0, cut));
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  EXPECT_FALSE(decode_list_pod_resources(std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12)).ok());  // varint too long
  EXPECT_FALSE(decode_list_pod_resources(std::string("\x0b", 1)).ok());  // a group: not in these messages
  EXPECT_FALSE(decode_list_pod_resources(std::string("\x00\x01", 2)).ok());  // field number 0
}

TEST(PodResourcesTest, CallingAMissingSocketSaysSo) {
  auto r = list_pod_resources("/nonexistent/kubelet.sock", std::chrono::milliseconds(200));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("PodResources at /nonexistent/kubelet.sock: cannot connect"), std::string::npos)
      << r.status().message();
}

TEST(PodDirectoryTest, MatchesUuidsReplicasAndIndicesOfNvidiaResourcesOnly) {
  EXPECT_TRUE(device_id_names_gpu("GPU-a", "GPU-a", "0"));
  EXPECT_TRUE(device_id_names_gpu("GPU-a::3", "GPU-a", "0"));
  EXPECT_FALSE(device_id_names_gpu("GPU-ab", "GPU-a", "0"));
  EXPECT_TRUE(device_id_names_gpu("0", "GPU-a", "0"));
  EXPECT_FALSE(device_id_names_gpu("1", "GPU-a", "0"));

  PodDirectory d;
  EXPECT_TRUE(d.holders("GPU-a", "0").empty());
  d.replace({{{"ns", "a", "c"}, "nvidia.com/gpu", {"GPU-a::0"}},
             {{"ns", "b", "c"}, "nvidia.com/gpu", {"GPU-a::1", "GPU-b::0"}},
             {{"ns", "fpga", "c"}, "example.com/fpga", {"1"}},
             {{"ns", "idx", "c"}, "nvidia.com/gpu", {"2"}}},
            1);
  EXPECT_EQ(d.holders("GPU-a", "0"), (std::vector<PodRef>{{"ns", "a", "c"}, {"ns", "b", "c"}}));
  EXPECT_EQ(d.holders("GPU-b", "1"), (std::vector<PodRef>{{"ns", "b", "c"}}));
  EXPECT_TRUE(d.holders("GPU-x", "1").empty());  // the FPGA plugin's "1" is not GPU 1
  EXPECT_EQ(d.holders("GPU-y", "2"), (std::vector<PodRef>{{"ns", "idx", "c"}}));
  // A shared GPU names no one's process; a host process is no pod's.
  EXPECT_FALSE(process_holder(d.holders("GPU-a", "0"), true, 1));
  EXPECT_EQ(process_holder(d.holders("GPU-b", "1"), true, 1), (PodRef{"ns", "b", "c"}));
  EXPECT_FALSE(process_holder(d.holders("GPU-b", "1"), false, 1));
  EXPECT_FALSE(process_holder(d.holders("GPU-b", "1"), true, 2));  // processes of two pods on it
  EXPECT_EQ(d.state().pods, 4u);
  EXPECT_EQ(d.state().gpu_devices, 4u);

  d.failed("gone", 2);
  EXPECT_EQ(d.state().error, "gone");
  EXPECT_EQ(d.holders("GPU-b", "1").size(), 1u);  // the last answer stands
}

}  // namespace
}  // namespace perfscope::server
