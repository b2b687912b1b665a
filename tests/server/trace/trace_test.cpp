// The CUPTI-independent half of kernel tracing: activity kinds, record conversion (launch
// correlation in either arrival order, graph launches, demangling, copies, allocations, NCCL's
// descriptions). The sink: trace_sink_test.cpp.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/trace/gpu_work_calls.hpp"
#include "server/trace/trace_sink.hpp"
#include "server/wire/event_codec.hpp"
#include "support/trace_records.hpp"

namespace perfscope::trace {
namespace {

namespace fs = std::filesystem;

TEST(TraceKinds, ParsesListsAndAllAndNamesTheUnknownKind) {
  auto k = parse_trace_kinds("kernel,memcpy");
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(k->kernel && k->memcpy);
  EXPECT_FALSE(k->memset || k->runtime || k->driver || k->memory);
  EXPECT_EQ(format_trace_kinds(*k), "kernel,memcpy");
  EXPECT_EQ(format_trace_kinds(*parse_trace_kinds("all")), "kernel,memcpy,memset,runtime,driver,memory");
  auto launch = parse_trace_kinds("kernel,launch");
  ASSERT_TRUE(launch.ok());
  EXPECT_TRUE(launch->launch);
  EXPECT_FALSE(launch->runtime);
  EXPECT_EQ(format_trace_kinds(*launch), "kernel,launch");
  EXPECT_EQ(format_trace_kinds(TraceKinds{}), "kernel,memcpy,memset,launch,memory");
  auto bad = parse_trace_kinds("kernel,graphs");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "kinds");
  EXPECT_NE(bad.status().message().find("graphs"), std::string::npos);
}

TEST(KernelName, EqualTextIsOneStringWhateverThreadInternsIt) {
  const std::string text = "_Z6matmulPKfS0_Pfi";
  KernelName a(text), b(text.c_str()), other("_Z4gemvPKfPfi");
  EXPECT_EQ(a.id(), b.id());
  EXPECT_EQ(a, b);
  EXPECT_NE(a.id(), other.id());
  EXPECT_EQ(a.str(), text);
  EXPECT_EQ(KernelName(nullptr).str(), "");
  // Threads interning the same names at once get the same strings.
  std::vector<std::vector<const std::string*>> seen(4);
  std::vector<std::thread> threads;
  for (auto& ids : seen) {
    threads.emplace_back([&ids] {
      for (int i = 0; i < 2000; ++i) ids.push_back(KernelName("_Z6kernel" + std::to_string(i % 50)).id());
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& ids : seen) EXPECT_EQ(ids, seen[0]);
  EXPECT_EQ(std::set<const std::string*>(seen[0].begin(), seen[0].end()).size(), 50u);
}

TEST(GpuWorkCalls, LaunchesCopiesAndMemsetsOfBothApisAndNothingElse) {
  for (const char* name : {"cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernelExC_v11060",
                           "cudaLaunchCooperativeKernel_v9000", "cudaGraphLaunch_v10000", "cudaMemcpyAsync_v3020",
                           "cudaMemcpy2DAsync_ptsz_v7000", "cudaMemsetAsync_v3020", "cuLaunchKernel", "cuLaunchKernelEx",
                           "cuGraphLaunch", "cuMemcpyHtoDAsync_v2", "cuMemsetD8_v2"}) {
    EXPECT_TRUE(starts_gpu_work(name)) << name;
  }
  for (const char* name : {"cudaGetDevice_v3020", "cudaGetLastError_v3020", "cudaStreamSynchronize_v3020",
                           "cudaMalloc_v3020", "cudaFree_v3020", "cudaEventRecord_v3020", "cudaStreamGetCaptureInfo_v10010",
                           "cuCtxGetCurrent", "cuMemAlloc_v2", "cuModuleGetFunction", "cuStreamWaitEvent", ""}) {
    EXPECT_FALSE(starts_gpu_work(name)) << name;
  }
}

TEST(TraceConverter, KernelGetsItsLaunchCallInEitherOrder) {
  TraceConverter c({"run-a", "123"});
  std::vector<Event> out;
  c.add(call(1, 1000), out);  // the call first
  c.add(kernel(1, 5000), out);
  c.add(kernel(2, 9000), out);  // the kernel first
  ASSERT_EQ(out.size(), 1u);
  c.add(call(2, 8000), out);
  ASSERT_EQ(out.size(), 2u);
  for (const Event& e : out) ASSERT_TRUE(validate(e).ok()) << validate(e).message();
  const auto& k1 = std::get<KernelEvent>(out[0]);
  EXPECT_EQ(k1.name, "tiny_kernel(int*, int)");
  EXPECT_EQ(k1.launch_start_ns, 1000);
  EXPECT_EQ(k1.launch_end_ns, 4000);
  EXPECT_EQ(k1.start_ns, 5000);
  EXPECT_EQ(k1.end_ns, 6500);
  EXPECT_EQ(k1.stream, "7");
  EXPECT_EQ(k1.shared_mem_bytes, 1536u);
  EXPECT_EQ(k1.registers_per_thread, 16u);
  EXPECT_EQ((*k1.grid)[0], 4u);
  EXPECT_EQ((*k1.block)[0], 256u);
  EXPECT_EQ((*k1.grid)[1], 1u);
  EXPECT_EQ(tag(k1.tags, "run"), "run-a");
  EXPECT_EQ(tag(k1.tags, "pid"), "123");
  EXPECT_EQ(tag(k1.tags, "mangled"), "_Z11tiny_kernelPii");
  EXPECT_EQ(tag(k1.tags, "dynamic_shared_bytes"), "512");
  EXPECT_EQ(std::get<KernelEvent>(out[1]).launch_start_ns, 8000);
  EXPECT_EQ(c.stats().kernels, 2u);
  EXPECT_EQ(c.stats().without_launch, 0u);
}

TEST(TraceConverter, OneGraphLaunchCallStartsManyKernels) {
  TraceConverter c({});
  std::vector<Event> out;
  c.add(kernel(5, 100), out);
  c.add(kernel(5, 200), out);
  c.add(call(5, 10), out);  // releases both waiting kernels
  c.add(kernel(5, 300), out);  // and the call is still known for a later one
  ASSERT_EQ(out.size(), 3u);
  for (const Event& e : out) EXPECT_EQ(std::get<KernelEvent>(e).launch_start_ns, 10);
}

TEST(TraceConverter, KernelWithoutItsCallGoesOutAfterWaitingOrAtTheEnd) {
  TraceConverter c({.run = "", .pid = "", .max_pending_calls = 100, .max_wait_batches = 2});
  std::vector<Event> out;
  c.add(kernel(9, 100), out);
  c.end_batch(out);
  c.end_batch(out);
  EXPECT_TRUE(out.empty());
  c.end_batch(out);  // the third batch without its call
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(std::get<KernelEvent>(out[0]).launch_start_ns.has_value());
  c.add(kernel(10, 200), out);
  c.finish(out);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(c.stats().without_launch, 2u);
}

// NCCL's descriptions (its profiler plugin) tie to the launch call made just before them on the
// same thread, whichever of description, call and kernel comes first.
CollectiveRecord collective(std::uint64_t ts, std::uint32_t thread, std::string func = "AllReduce",
                            std::uint64_t count = 1024) {
  return CollectiveRecord{0xabcULL, 4, 2, 7, std::move(func), "ncclBfloat16", count, "RING", "LL128", 8, thread, ts};
}
const std::string kNcclKernel = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

TEST(TraceConverter, CollectiveDescriptionsTagTheKernelOfTheLaunchJustBeforeThemOnTheirThread) {
  TraceConverter c({});
  std::vector<Event> out;
  c.add(CommunicatorRecord{0xabc, 4, 2}, out);
  c.add(ApiRecord{1, 307, 1000, 2000, 42}, out);    // NCCL's launch on thread 42
  c.add(ApiRecord{2, 211, 1500, 2500, 43}, out);    // another thread's launch, in between
  c.add(collective(3000, 42), out);                 // described after its launch
  c.add(ApiRecord{3, 307, 4000, 5000, 42}, out);    // a later launch: not this description's
  c.add(kernel(1, 10'000, kNcclKernel), out);
  c.add(kernel(2, 10'500), out);
  ASSERT_EQ(out.size(), 2u);
  const auto& k = std::get<KernelEvent>(out[0]);
  EXPECT_EQ(tag(k.tags, "comm"), "0000000000000abc");
  EXPECT_EQ(tag(k.tags, "comm_ranks"), "4");
  EXPECT_EQ(tag(k.tags, "comm_rank"), "2");
  EXPECT_EQ(tag(k.tags, "coll_op"), "AllReduce");
  EXPECT_EQ(tag(k.tags, "coll_bytes"), "2048");  // 1024 bf16 elements
  EXPECT_EQ(tag(k.tags, "algo"), "RING");
  EXPECT_EQ(tag(k.tags, "proto"), "LL128");
  EXPECT_EQ(tag(k.tags, "channels"), "8");
  EXPECT_EQ(tag(std::get<KernelEvent>(out[1]).tags, "comm"), "(absent)");
  EXPECT_EQ(c.stats().collectives, 1u);
  EXPECT_EQ(c.stats().without_collective, 0u);
}

TEST(TraceConverter, ANcclKernelWaitsForItsDescriptionAndADescriptionForItsCall) {
  TraceConverter c({.run = "", .pid = "", .max_pending_calls = 100, .max_wait_batches = 2});
  std::vector<Event> out;
  c.add(CommunicatorRecord{0xabc, 4, 2}, out);
  c.add(collective(3000, 42, "AllGather", 100), out);  // before its call (activity records come late)
  EXPECT_TRUE(out.empty());
  c.add(kernel(1, 10'000, kNcclKernel), out);
  EXPECT_TRUE(out.empty());
  c.add(ApiRecord{1, 307, 1000, 2000, 42}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(tag(std::get<KernelEvent>(out[0]).tags, "coll_bytes"), "800");  // 100 × 2 bytes × 4 ranks
  // Launched, never described: it waits its batches, then goes without, and is counted.
  c.add(ApiRecord{2, 307, 20'000, 21'000, 42}, out);
  c.add(kernel(2, 30'000, kNcclKernel), out);
  c.end_batch(out);
  c.end_batch(out);
  EXPECT_EQ(out.size(), 1u);
  c.end_batch(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(tag(std::get<KernelEvent>(out[1]).tags, "comm"), "(absent)");
  EXPECT_TRUE(std::get<KernelEvent>(out[1]).launch_start_ns.has_value());
  EXPECT_EQ(c.stats().without_collective, 1u);
  EXPECT_EQ(c.stats().without_launch, 0u);
  // A description with no call on its thread is dropped after waiting, and counted.
  c.add(collective(50'000, 99), out);
  c.end_batch(out);
  c.end_batch(out);
  c.end_batch(out);
  EXPECT_EQ(c.stats().collectives_unmatched, 1u);
}

TEST(TraceConverter, AGroupNamesEachOperationOnceAndACommunicatorAcrossHostsSaysSo) {
  TraceConverter c({});
  std::vector<Event> out;
  c.add(CommunicatorRecord{0xabc, 16, 2}, out);
  c.add(ApiRecord{1, 307, 1000, 2000, 42}, out);
  CollectiveRecord reduce = collective(3000, 42, "Reduce", 10);
  reduce.nodes = 2;
  CollectiveRecord all = collective(3100, 42, "AllReduce", 10);
  all.nodes = 2;
  c.add(all, out);
  c.add(reduce, out);
  c.add(collective(3200, 42, "AllReduce", 10), out);
  c.add(kernel(1, 10'000, kNcclKernel), out);
  ASSERT_EQ(out.size(), 1u);
  const auto& k = std::get<KernelEvent>(out[0]);
  EXPECT_EQ(tag(k.tags, "coll_op"), "AllReduce+Reduce") << "Reduce is not AllReduce";
  EXPECT_EQ(tag(k.tags, "colls"), "3");
  EXPECT_EQ(tag(k.tags, "coll_bytes"), "60");
  EXPECT_EQ(tag(k.tags, "comm_nodes"), "2");
}

TEST(TraceConverter, WithoutNcclsPluginItsKernelsAreNotHeld) {
  TraceConverter c({});
  std::vector<Event> out;
  c.add(ApiRecord{1, 307, 1000, 2000, 42}, out);
  c.add(kernel(1, 10'000, kNcclKernel), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(tag(std::get<KernelEvent>(out[0]).tags, "comm"), "(absent)");
  EXPECT_EQ(c.stats().without_collective, 0u);
}

TEST(TraceRecords, CollectiveBytesAsNcclTestsCountThem) {
  EXPECT_EQ(collective_bytes(collective(0, 1, "AllReduce", 1000)), 2000u);
  EXPECT_EQ(collective_bytes(collective(0, 1, "ReduceScatter", 1000)), 8000u);  // one rank's share × 4
  CollectiveRecord unknown = collective(0, 1);
  unknown.datatype = "ncclFloat4";
  EXPECT_EQ(collective_bytes(unknown), 0u);
}

TEST(TraceConverter, ForgetsTheOldestCallsBeyondItsBound) {
  TraceConverter c({.run = "", .pid = "", .max_pending_calls = 3, .max_wait_batches = 2});
  std::vector<Event> out;
  for (std::uint32_t id = 1; id <= 5; ++id) c.add(call(id, id * 100), out);  // cudaGetDevice and friends
  c.add(kernel(1, 1000), out);  // its call was forgotten
  c.add(kernel(5, 1000), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::get<KernelEvent>(out[0]).launch_start_ns, 500);
}

TEST(TraceConverter, PlainAndOverlongNames) {
  TraceConverter c({});
  std::vector<Event> out;
  c.add(kernel(1, 1, "vector_add"), out);  // extern "C": not mangled
  std::string huge = "_Z3fooI" + std::string(3000, 'x');  // not demangleable either: kept, clipped
  c.add(kernel(2, 1, huge), out);
  c.finish(out);
  ASSERT_EQ(out.size(), 2u);
  const auto& plain = std::get<KernelEvent>(out[0]);
  EXPECT_EQ(plain.name, "vector_add");
  EXPECT_EQ(tag(plain.tags, "mangled"), "(absent)");
  const auto& clipped = std::get<KernelEvent>(out[1]);
  EXPECT_EQ(clipped.name.size(), kMaxEventText);
  EXPECT_EQ(clipped.name.substr(clipped.name.size() - 3), "...");
  EXPECT_TRUE(validate(out[1]).ok());
}

TEST(TraceConverter, CopiesAreNamedAsProfilersNameThemWithTheirBytes) {
  using namespace cupti_values;
  TraceConverter c({});
  std::vector<Event> out;
  c.add(CopyRecord{false, kMemcpyHtoD, kMemoryPinned, kMemoryDevice, 1'000'000, 3, 0, 7, 1000, 21000}, out);
  c.add(CopyRecord{true, 0, kMemoryDevice, kMemoryDevice, 4096, 4, 0, 7, 30000, 31000}, out);
  c.finish(out);
  ASSERT_EQ(out.size(), 2u);
  const auto& copy = std::get<KernelEvent>(out[0]);
  EXPECT_EQ(copy.name, "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(tag(copy.tags, "op"), "memcpy");
  EXPECT_EQ(tag(copy.tags, "copy_kind"), "HtoD");
  EXPECT_EQ(tag(copy.tags, "bytes"), "1000000");
  const auto& set = std::get<KernelEvent>(out[1]);
  EXPECT_EQ(set.name, "Memset (Device)");
  EXPECT_EQ(tag(set.tags, "op"), "memset");
  EXPECT_EQ(c.stats().copies, 2u);
}

TEST(TraceConverter, AllocationsBecomeMemoryEventsByKind) {
  using namespace cupti_values;
  TraceConverter c({"r", "1"});
  std::vector<Event> out;
  c.add(MemoryRecord{true, 0x7f0000001000, 1 << 20, 500, 1, kMemoryDevice}, out);
  c.add(MemoryRecord{true, 0x1000, 4096, 600, 0, kMemoryPinned}, out);
  c.add(MemoryRecord{true, 0x2000, 4096, 700, 0, kMemoryManaged}, out);
  c.add(MemoryRecord{false, 0x7f0000001000, 1 << 20, 800, 1, kMemoryDevice}, out);
  ASSERT_EQ(out.size(), 4u);
  const auto& a = std::get<MemoryEvent>(out[0]);
  EXPECT_EQ(a.op, MemoryOp::kAlloc);
  EXPECT_EQ(a.address, "0x7f0000001000");
  EXPECT_EQ(a.size_bytes, 1u << 20);
  EXPECT_EQ(a.kind, MemoryKind::kDevice);
  EXPECT_EQ(a.tag, "device");
  EXPECT_EQ(a.device, "1");
  EXPECT_EQ(std::get<MemoryEvent>(out[1]).kind, MemoryKind::kHost);
  EXPECT_EQ(std::get<MemoryEvent>(out[2]).kind, MemoryKind::kShared);
  EXPECT_EQ(std::get<MemoryEvent>(out[3]).op, MemoryOp::kFree);
  for (const Event& e : out) EXPECT_TRUE(validate(e).ok());
}

TEST(TraceRecords, JsonFormRoundTrips) {
  const TraceRecord records[] = {call(1, 2), kernel(3, 4), CopyRecord{true, 0, 3, 3, 9, 1, 0, 2, 5, 6},
                                 MemoryRecord{false, 0xabc, 10, 11, 0, 3}, CommunicatorRecord{0xfedcba9876543210, 8, 3},
                                 collective(12, 13)};
  for (const TraceRecord& r : records) {
    auto back = record_from_json(record_to_json(r));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(record_to_json(*back), record_to_json(r));
  }
  EXPECT_FALSE(record_from_json(nlohmann::json{{"record", "kernel"}}).ok());
  EXPECT_FALSE(record_from_json(nlohmann::json{{"record", "graph"}}).ok());
}

// Records recorded on an H100-class GPU by the injection library (a CUDA program: one
// allocation, a memset, a copy in, 20 kernels, a copy out, a free) and the events it sent for
// them: conversion here must give the same events.
TEST(TraceConverter, RecordedRecordsGiveTheEventsSentOnTheGpu) {
  const fs::path dir = fs::path(PERFSCOPE_FIXTURES) / "cupti";
  std::ifstream records(dir / "records.ndjson");
  ASSERT_TRUE(records.good());
  TraceConverter c({"fixture", "624"});
  std::vector<Event> out;
  for (std::string line; std::getline(records, line);) {
    auto r = record_from_json(nlohmann::json::parse(line));
    ASSERT_TRUE(r.ok()) << r.status().message();
    c.add(*r, out);
  }
  c.finish(out);
  std::multiset<std::string> ours, sent;
  for (const Event& e : out) ours.insert(server::encode_event(e).dump());
  std::ifstream events(dir / "events.ndjson");
  for (std::string line; std::getline(events, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] != "sample") sent.insert(j.dump());  // the trace's own counts carry their time
  }
  EXPECT_EQ(ours, sent);
  EXPECT_EQ(c.stats().kernels, 20u);
  EXPECT_EQ(c.stats().copies, 3u);
  EXPECT_EQ(c.stats().memory_operations, 2u);
  EXPECT_EQ(c.stats().without_launch, 0u);
}

// ---- the sink ------------------------------------------------------------------------------

}  // namespace
}  // namespace perfscope::trace
