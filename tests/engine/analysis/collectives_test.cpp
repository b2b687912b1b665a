#include "engine/analysis/collectives.hpp"

#include <gtest/gtest.h>

#include <random>

namespace perfscope::analysis {
namespace {

constexpr TimestampNs kMs = 1'000'000;

TEST(CollectiveKernel, NamesOfNcclKernelsOldAndNew) {
  struct Case {
    const char* name;
    CollectiveKernel want;  // op, reduction, dtype, algorithm, protocol
  };
  const Case cases[] = {
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", {"AllReduce", "Sum", "bf16", "RING", "LL"}},
      {"ncclDevKernel_AllReduce_Sum_f32_NVLS_TREE_SIMPLE", {"AllReduce", "Sum", "f32", "NVLS_TREE", "SIMPLE"}},
      {"ncclKernel_AllReduce_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
       {"AllReduce", "Sum", "int8_t", "RING", "LL"}},
      {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", {"SendRecv", "", "", "", ""}},
      {"ncclDevKernel_AllGather_RING_LL128", {"AllGather", "", "", "RING", "LL128"}},
  };
  for (const Case& c : cases) {
    auto k = parse_collective_kernel(c.name);
    ASSERT_TRUE(k) << c.name;
    EXPECT_EQ(k->op, c.want.op) << c.name;
    EXPECT_EQ(k->reduction, c.want.reduction) << c.name;
    EXPECT_EQ(k->dtype, c.want.dtype) << c.name;
    EXPECT_EQ(k->algorithm, c.want.algorithm) << c.name;
    EXPECT_EQ(k->protocol, c.want.protocol) << c.name;
  }
  EXPECT_FALSE(parse_collective_kernel("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)")) << "no operation in it";
  EXPECT_FALSE(parse_collective_kernel("ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(parse_collective_kernel("nccl"));
}

// Two ranks that meet at an all-reduce every `step`; rank 1 computes `extra` longer before each.
// The collective moves data for `transfer` after the last arrival. Arrivals jitter by ±jitter.
std::vector<RankCollectives> job(int steps, TimestampNs step, TimestampNs extra, TimestampNs transfer, TimestampNs jitter,
                                 unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<TimestampNs> j(-jitter, jitter);
  std::vector<RankCollectives> ranks{{"0", "0", {}, {}}, {"1", "1", {}, {}}};
  for (int s = 0; s < steps; ++s) {
    const TimestampNs base = s * step;
    const TimestampNs a0 = base + j(rng), a1 = base + extra + j(rng);
    const TimestampNs done = std::max(a0, a1) + transfer;
    ranks[0].executions.push_back({"AllReduce", a0, done});
    ranks[1].executions.push_back({"AllReduce", a1, done});
  }
  return ranks;
}

TEST(Collectives, TheRankThatComputesLongerIsTheStragglerByItsExtraCompute) {
  auto a = analyze_collectives(job(50, 10 * kMs, 2 * kMs, kMs / 2, 50'000));
  EXPECT_EQ(a.matched, 50u);
  EXPECT_EQ(a.unmatched, 0u);
  EXPECT_TRUE(a.mismatch.empty());
  ASSERT_TRUE(a.straggler) << a.no_straggler;
  EXPECT_EQ(a.straggler->rank, "1");
  EXPECT_DOUBLE_EQ(a.straggler->last_share, 1.0);
  EXPECT_NEAR(a.straggler->extra_per_step_ms, 2.0, 0.05);
  EXPECT_NEAR(a.straggler->lateness_median_ms, 2.0, 0.1);
  EXPECT_NEAR(a.step_median_ms, 10.0, 0.2);
  // Rank 0 waits ~2 ms in each; rank 1 hardly; both move data 0.5 ms.
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_NEAR(a.ranks[0].wait_ms / 50, 2.0, 0.05);
  EXPECT_LT(a.ranks[1].wait_ms / 50, 0.01);
  EXPECT_NEAR(a.ranks[0].transfer_ms / 50, 0.5, 1e-9);
  EXPECT_NEAR(a.ranks[1].transfer_ms / 50, 0.5, 1e-9);
  EXPECT_EQ(a.ranks[1].last_arrivals, 50u);
  ASSERT_EQ(a.ops.size(), 1u);
  EXPECT_EQ(a.ops[0].op, "AllReduce");
  EXPECT_EQ(a.ops[0].instances, 50u);
  EXPECT_NEAR(a.ops[0].transfer_p50_ms, 0.5, 1e-9);
  EXPECT_NEAR(a.ops[0].wait_share, 2.0 / (2.5 + 0.5), 0.02) << "waiting over time in the collective";
}

TEST(Collectives, EqualRanksHaveNoStraggler) {
  auto a = analyze_collectives(job(200, 10 * kMs, 0, kMs / 2, 200'000));
  EXPECT_EQ(a.matched, 200u);
  EXPECT_FALSE(a.straggler);
  EXPECT_NE(a.no_straggler.find("no rank arrived last"), std::string::npos) << a.no_straggler;
  // A rank last every time by 6 % of a step is no straggler either (two equal ranks on two
  // H100s: rank 1 last in 80 % of the all-reduces by a median 0.17 ms of a 2.7 ms step).
  auto hair = analyze_collectives(job(50, 10 * kMs, 600'000, kMs / 2, 0));
  EXPECT_FALSE(hair.straggler);
  EXPECT_NE(hair.no_straggler.find("that matter"), std::string::npos) << hair.no_straggler;
}

TEST(Collectives, MatchingStopsWhereTheRanksDisagreeAndSaysSo) {
  auto ranks = job(10, 10 * kMs, 0, kMs, 0);
  ranks[1].executions[6].op = "AllGather";
  ranks[0].executions.push_back({"AllReduce", 200 * kMs, 201 * kMs});  // one more on rank 0
  auto a = analyze_collectives(ranks);
  EXPECT_EQ(a.matched, 6u);
  EXPECT_EQ(a.unmatched, 5u + 4u);
  EXPECT_NE(a.mismatch.find("instance 6"), std::string::npos) << a.mismatch;
  EXPECT_NE(a.mismatch.find("AllGather on rank 1"), std::string::npos) << a.mismatch;
}

TEST(Collectives, AKernelWithoutAPartnerIsSkippedNotMatchedAStepOff) {
  // Equal ranks; rank 1's first and fifteenth records lost (or a window that began between the
  // ranks' first kernels). Matched a step off, every instance would name rank 1 a straggler.
  auto ranks = job(30, 10 * kMs, 0, kMs / 2, 50'000);
  ranks[1].executions.erase(ranks[1].executions.begin() + 15);
  ranks[1].executions.erase(ranks[1].executions.begin());
  auto a = analyze_collectives(ranks);
  EXPECT_EQ(a.skipped, 2u);
  EXPECT_EQ(a.matched, 28u);
  EXPECT_EQ(a.unmatched, 2u);
  EXPECT_TRUE(a.mismatch.empty()) << a.mismatch;
  EXPECT_FALSE(a.straggler) << a.straggler->rank;
  for (const auto& i : a.instances) EXPECT_LT(i.skew_ms, 0.2) << "instance " << i.sequence;
}

TEST(Collectives, LatenessWithoutExtraComputeIsNoStraggler) {
  // Rank 1's GPU clock reads 0.3 ms ahead: it seems to arrive last by 0.3 ms (15 % of a 2 ms
  // step) every time, yet computes no more than rank 0 between collectives.
  auto ranks = job(50, 2 * kMs, 0, kMs / 2, 0);
  for (auto& e : ranks[1].executions) {
    e.start_ns += 300'000;
    e.end_ns += 300'000;
  }
  auto a = analyze_collectives(ranks);
  EXPECT_EQ(a.matched, 50u);
  EXPECT_EQ(a.ranks[1].last_arrivals, 50u);
  EXPECT_FALSE(a.straggler);
  EXPECT_NE(a.no_straggler.find("more compute per step"), std::string::npos) << a.no_straggler;
}

TEST(Collectives, ATieForLastCountsForNoRank) {
  auto a = analyze_collectives(job(10, 10 * kMs, 0, kMs, 0));
  EXPECT_EQ(a.ranks[0].last_arrivals + a.ranks[1].last_arrivals, 0u);
  EXPECT_FALSE(a.straggler);
}

TEST(Collectives, RanksSortNumericallyAndOneRankMatchesNothing) {
  std::vector<RankCollectives> ranks;
  for (std::string r : {"10", "2", "0"}) ranks.push_back({r, r, {{"AllReduce", 0, kMs}}, {}});
  auto a = analyze_collectives(ranks);
  ASSERT_EQ(a.ranks.size(), 3u);
  EXPECT_EQ(a.ranks[0].rank, "0");
  EXPECT_EQ(a.ranks[1].rank, "2");
  EXPECT_EQ(a.ranks[2].rank, "10");
  auto one = analyze_collectives({{"0", "0", {{"AllReduce", 0, kMs}}, {}}});
  EXPECT_EQ(one.matched, 0u);
  EXPECT_EQ(one.unmatched, 1u);
  EXPECT_EQ(one.no_straggler, "collectives of one rank only");
}

TEST(Collectives, TimeBreakdownSplitsCommunicationIntoOverlappedAndExposed) {
  // Compute [0,10) and [5,12) (one stretch, 12) and [20,30); communication [8,25); window [0,40).
  const auto b = time_breakdown({{0, 10}, {20, 30}, {5, 12}}, {{8, 25}}, 0, 40);
  EXPECT_DOUBLE_EQ(b.window_ms, 40e-6);
  EXPECT_DOUBLE_EQ(b.compute_ms, 22e-6);
  EXPECT_DOUBLE_EQ(b.communication_ms, 17e-6);
  EXPECT_DOUBLE_EQ(b.overlapped_ms, 9e-6);  // [8,12) and [20,25)
  EXPECT_DOUBLE_EQ(b.exposed_ms, 8e-6);     // [12,20)
  EXPECT_DOUBLE_EQ(b.idle_ms, 10e-6);       // [30,40)
  EXPECT_DOUBLE_EQ(b.overlap_ratio, 9.0 / 17.0);
  EXPECT_DOUBLE_EQ(b.exposed_share, 8.0 / 40.0);
  // Clipped to a stretch inside.
  const auto part = time_breakdown({{0, 10}}, {{8, 25}}, 9, 11);
  EXPECT_DOUBLE_EQ(part.overlapped_ms, 1e-6);
  EXPECT_DOUBLE_EQ(part.exposed_ms, 1e-6);
  EXPECT_DOUBLE_EQ(time_breakdown({}, {}, 5, 5).window_ms, 0);
}

TEST(Collectives, StepsAreTheRepeatingCollectivePatternAndEachRankIsBrokenDownPerStep) {
  // Each rank computes from the step's start until it arrives; rank 1 2 ms longer.
  auto ranks = job(20, 10 * kMs, 2 * kMs, kMs, 0);
  for (auto& r : ranks) {
    for (std::size_t s = 0; s < r.executions.size(); ++s) {
      r.compute.push_back({static_cast<TimestampNs>(s) * 10 * kMs - 3 * kMs, r.executions[s].start_ns});
    }
  }
  auto a = analyze_collectives(ranks);
  EXPECT_EQ(a.step_collectives, 1u);
  EXPECT_EQ(a.steps, 19u);
  ASSERT_TRUE(a.ranks[0].per_step && a.ranks[1].per_step);
  // A step: rank 0 computes 3 ms, waits 2 ms in the collective and moves data 1 ms (3 ms
  // exposed), idle 4 ms; rank 1 computes 5 ms, 1 ms exposed, idle 4 ms.
  EXPECT_NEAR(a.ranks[0].per_step->window_ms, 10, 1e-9);
  EXPECT_NEAR(a.ranks[0].per_step->compute_ms, 3, 1e-9);
  EXPECT_NEAR(a.ranks[0].per_step->exposed_ms, 3, 1e-9);
  EXPECT_NEAR(a.ranks[0].per_step->idle_ms, 4, 1e-9);
  EXPECT_NEAR(a.ranks[1].per_step->compute_ms, 5, 1e-9);
  EXPECT_NEAR(a.ranks[1].per_step->exposed_ms, 1, 1e-9);
  EXPECT_NEAR(a.ranks[1].per_step->overlap_ratio, 0, 1e-12);
  // Over the whole window (from rank 0's first compute, 3 ms before the first step, to the
  // last collective's end): twenty steps of compute, each rank's own.
  EXPECT_NEAR(a.ranks[0].breakdown.window_ms, 3 + 19 * 10 + 2 + 1, 1e-9);
  EXPECT_NEAR(a.ranks[0].breakdown.compute_ms, 20 * 3, 1e-9);
  EXPECT_NEAR(a.ranks[1].breakdown.compute_ms, 20 * 5, 1e-9);

  // All-gather then all-reduce in every step: a period of two.
  std::vector<RankCollectives> two{{"0", "0", {}, {}}, {"1", "1", {}, {}}};
  for (int s = 0; s < 10; ++s) {
    for (auto& r : two) {
      r.executions.push_back({"AllGather", s * 10 * kMs, s * 10 * kMs + kMs});
      r.executions.push_back({"AllReduce", s * 10 * kMs + 5 * kMs, s * 10 * kMs + 6 * kMs});
    }
  }
  auto b = analyze_collectives(two);
  EXPECT_EQ(b.step_collectives, 2u);
  EXPECT_EQ(b.steps, 9u);
  ASSERT_TRUE(b.ranks[0].per_step);
  EXPECT_NEAR(b.ranks[0].per_step->communication_ms, 2, 1e-9);
  EXPECT_NEAR(b.ranks[0].per_step->window_ms, 10, 1e-9);
}

TEST(Collectives, AStepOfSeveralBucketsIsFoundByItsGapsAndOddCollectivesAtTheEndsAreAllowed) {
  // A data-parallel job: a broadcast of the weights first, then each 10 ms step all-reduces four
  // gradient buckets 0.5 ms apart after 6 ms of compute, then a barrier's all-reduce.
  std::vector<RankCollectives> ranks{{"0", "0", {}, {}}, {"1", "1", {}, {}}};
  for (auto& r : ranks) r.executions.push_back({"Broadcast", 0, kMs / 10});
  for (int s = 0; s < 12; ++s) {
    for (int b = 0; b < 4; ++b) {
      const TimestampNs at = kMs + s * 10 * kMs + 6 * kMs + b * kMs / 2;
      for (auto& r : ranks) r.executions.push_back({"AllReduce", at, at + kMs / 5});
    }
    for (auto& r : ranks) r.compute.push_back({kMs + s * 10 * kMs, kMs + s * 10 * kMs + 6 * kMs});
  }
  for (auto& r : ranks) r.executions.push_back({"AllReduce", 200 * kMs, 200 * kMs + kMs / 5});
  auto a = analyze_collectives(ranks);
  EXPECT_EQ(a.step_collectives, 4u) << "the four buckets of a step, not each bucket";
  ASSERT_TRUE(a.ranks[0].per_step);
  EXPECT_NEAR(a.ranks[0].per_step->window_ms, 10, 1e-9);
  EXPECT_NEAR(a.ranks[0].per_step->communication_ms, 0.8, 1e-9);
  EXPECT_NEAR(a.ranks[0].per_step->compute_ms, 6, 1e-9);
  // The ranks arrive together: all of the exposed communication moves data.
  EXPECT_NEAR(a.ranks[0].per_step->exposed_transfer_ms, 0.8, 1e-9);
}

TEST(Collectives, ALateRankWhoseWaitIsHiddenBehindTheOthersComputeIsNoStraggler) {
  // Rank 1 computes 2 ms longer before each all-reduce; rank 0 waits for it either exposed or
  // beside a kernel of its own that covers the wait.
  for (bool hidden : {false, true}) {
    auto ranks = job(20, 10 * kMs, 2 * kMs, kMs / 2, 0);
    for (std::size_t s = 0; s < ranks[0].executions.size(); ++s) {
      const TimestampNs arrival = ranks[0].executions[s].start_ns;
      ranks[0].compute.push_back({arrival - 3 * kMs, hidden ? arrival + 2 * kMs : arrival});
      ranks[1].compute.push_back({arrival - 3 * kMs, ranks[1].executions[s].start_ns});
    }
    auto a = analyze_collectives(ranks);
    if (hidden) {
      EXPECT_FALSE(a.straggler);
      EXPECT_NE(a.no_straggler.find("beside their own compute"), std::string::npos) << a.no_straggler;
    } else {
      ASSERT_TRUE(a.straggler) << a.no_straggler;
      EXPECT_EQ(a.straggler->rank, "1");
      EXPECT_NEAR(a.straggler->exposed_wait_caused_ms, 2, 1e-9);
    }
  }
}

}  // namespace
}  // namespace perfscope::analysis

namespace perfscope::analysis {
namespace {

// Described by NCCL: executions of a communicator, with its size and the bytes of each.
RankCollectives::Execution described(std::string op, TimestampNs start, TimestampNs end, std::string comm, int comm_ranks,
                                     double bytes) {
  return {std::move(op), start, end, std::move(comm), comm_ranks, 1, bytes, "RING", "SIMPLE"};
}

TEST(Collectives, BusBandwidthIsNcclTestsFormulaOverTheTimeAfterTheLastArrival) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor("AllReduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor("AllReduce", 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor("AllGather", 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor("Broadcast", 8), 1.0);
  // 64 MiB all-reduced by 4 ranks; the last arrives 0.1 ms after the first, all done 0.25 ms later.
  const double bytes = 64.0 * 1024 * 1024;
  std::vector<RankCollectives> ranks;
  for (int r = 0; r < 4; ++r) {
    RankCollectives rank{std::to_string(r), std::to_string(r), {}, {}};
    for (int k = 0; k < 6; ++k) {
      const TimestampNs base = k * 10 * kMs;
      rank.executions.push_back(described("AllReduce", base + r * 33'000, base + 350'000, "c0", 4, bytes));
    }
    ranks.push_back(std::move(rank));
  }
  CollectiveOptions options;
  options.link_peak_bytes_per_second = 450e9;
  auto a = analyze_collectives(ranks, options);
  ASSERT_EQ(a.matched, 6u);
  EXPECT_EQ(a.communicators, 1u);
  const double algbw = bytes / 251'000;  // from the last arrival (99 µs) to the end (350 µs), in GB/s
  EXPECT_NEAR(a.instances[0].algbw_gb_per_second, algbw, 1e-9);
  EXPECT_NEAR(a.instances[0].busbw_gb_per_second, algbw * 1.5, 1e-9);
  ASSERT_EQ(a.ops.size(), 1u);
  EXPECT_EQ(a.ops[0].bytes, bytes);
  EXPECT_EQ(a.ops[0].algorithm, "RING");
  EXPECT_EQ(a.ops[0].protocol, "SIMPLE");
  EXPECT_EQ(a.ops[0].comm_ranks, 4);
  EXPECT_NEAR(a.ops[0].busbw_p50_gb_per_second, algbw * 1.5, 1e-9);
  EXPECT_NEAR(a.ops[0].busbw_share_of_peak, algbw * 1.5 / 450, 1e-9);
}

TEST(Collectives, EachCommunicatorIsMatchedAmongItsOwnRanks) {
  // Four ranks: tensor-parallel pairs {0,1} and {2,3} all-gather in their own communicators,
  // then all four all-reduce; the pairs' collectives interleave differently on each rank. By
  // position alone the 2nd kernel of rank 0 (an all-gather) would meet rank 2's all-reduce.
  std::vector<RankCollectives> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back({std::to_string(r), std::to_string(r), {}, {}});
  for (int step = 0; step < 8; ++step) {
    const TimestampNs base = step * 10 * kMs;
    for (int r = 0; r < 4; ++r) {
      const std::string pair = r < 2 ? "tp01" : "tp23";
      const TimestampNs pair_start = base + (r < 2 ? 0 : 3 * kMs);  // the pairs gather at different times
      ranks[r].executions.push_back(described("AllGather", pair_start, pair_start + kMs, pair, 2, 1 << 20));
      ranks[r].executions.push_back(described("AllGather", pair_start + 1500'000, pair_start + 2 * kMs, pair, 2, 1 << 20));
      const TimestampNs arrive = base + 6 * kMs + (r == 3 ? kMs : 0);  // rank 3 computes 1 ms more
      ranks[r].executions.push_back(described("AllReduce", arrive, base + 7 * kMs + kMs / 2, "dp", 4, 1 << 24));
    }
  }
  auto a = analyze_collectives(ranks);
  EXPECT_TRUE(a.mismatch.empty()) << a.mismatch;
  EXPECT_EQ(a.communicators, 3u);
  EXPECT_EQ(a.matched, 8u * 5);  // 2 all-gathers in each pair, one all-reduce, per step
  EXPECT_EQ(a.unmatched, 0u);
  for (const auto& inst : a.instances) {
    if (inst.comm == "dp") {
      EXPECT_EQ(inst.ranks.size(), 4u);
      EXPECT_EQ(inst.last_rank, 3u);
    } else {
      ASSERT_EQ(inst.ranks.size(), 2u);
      EXPECT_EQ(inst.ranks[0] / 2, inst.ranks[1] / 2) << "members of one pair";
      EXPECT_EQ(inst.comm, inst.ranks[0] < 2 ? "tp01" : "tp23");
    }
  }
  // Each rank took part in 3 collectives a step; the all-reduce's waiting is rank 3's doing.
  for (const auto& r : a.ranks) EXPECT_EQ(r.instances, 24u) << r.rank;
  EXPECT_EQ(a.ranks[3].last_arrivals, 8u);
  // One row per operation and size.
  ASSERT_EQ(a.ops.size(), 2u);
  EXPECT_EQ(a.ops[0].op, "AllGather");
  EXPECT_EQ(a.ops[0].instances, 32u);
  EXPECT_EQ(a.ops[0].comm_ranks, 2);
  EXPECT_EQ(a.ops[1].op, "AllReduce");
  EXPECT_EQ(a.ops[1].bytes, double(1 << 24));
}

TEST(Collectives, PointToPointIsNotMatchedAndBandwidthNeedsTheWholeCommunicatorOfOneSize) {
  // Two ranks of a 4-rank communicator traced (the other two on another host): matched, but no
  // bandwidth. A pipeline's SendRecv between them is not matched at all. One size differs.
  std::vector<RankCollectives> ranks{{"0", "0", {}, {}}, {"1", "1", {}, {}}};
  for (int k = 0; k < 6; ++k) {
    const TimestampNs base = k * 10 * kMs;
    const double bytes = k == 3 ? 2048 : 1024;
    for (int r = 0; r < 2; ++r) {
      ranks[r].executions.push_back(described("AllReduce", base + r * 1000, base + kMs, "half", 4, r == 1 && k == 3 ? 1024 : bytes));
      ranks[r].executions.push_back(described("AllGather", base + 2 * kMs, base + 3 * kMs, "pair", 2, k == 3 && r == 1 ? 999 : 4096));
      ranks[r].executions.push_back({"SendRecv", base + 5 * kMs + r * kMs, base + 6 * kMs + r * kMs});
    }
  }
  auto a = analyze_collectives(ranks);
  EXPECT_TRUE(a.mismatch.empty()) << a.mismatch;
  EXPECT_EQ(a.matched, 12u) << "the all-reduces and all-gathers; no SendRecv";
  EXPECT_EQ(a.unmatched, 12u) << "the SendRecv kernels";
  for (const auto& inst : a.instances) {
    EXPECT_NE(inst.op, "SendRecv");
    if (inst.comm == "half") {
      EXPECT_EQ(inst.busbw_gb_per_second, 0) << "two of four ranks: not the instance's time";
    }
    if (inst.comm == "pair") {
      EXPECT_EQ(inst.busbw_gb_per_second > 0, inst.bytes == 4096) << "sizes that differ: no bandwidth";
    }
  }
  // The SendRecv kernels are communication all the same.
  EXPECT_NEAR(a.ranks[0].breakdown.communication_ms, 6 * (1.0 + 1.0 + 1.0) - 6 * 0.001, 0.01);
}

TEST(Collectives, UndescribedKernelsJoinTheOneDescribedCommunicatorAndRowsSplitByItsSize) {
  // NCCL described all but two all-reduces of rank 1 (enqueued through a host callback): by
  // position in "their own" list the rank's lists would be two apart.
  std::vector<RankCollectives> ranks{{"0", "0", {}, {}}, {"1", "1", {}, {}}};
  for (int k = 0; k < 10; ++k) {
    const TimestampNs base = k * 10 * kMs;
    for (int r = 0; r < 2; ++r) {
      auto e = described("AllReduce", base + r * 200'000, base + 2 * kMs, "dp", 2, 1 << 20);
      if (r == 1 && (k == 2 || k == 7)) e = {"AllReduce", e.start_ns, e.end_ns};
      ranks[r].executions.push_back(e);
    }
  }
  auto a = analyze_collectives(ranks);
  EXPECT_EQ(a.matched, 10u);
  EXPECT_EQ(a.unmatched, 0u);
  EXPECT_EQ(a.ranks[1].last_arrivals, 10u);
  ASSERT_EQ(a.ops.size(), 2u) << "described of 1 MiB, and those whose size one rank did not give";
  EXPECT_EQ(a.ops[0].bytes, double(1 << 20));
  EXPECT_EQ(a.ops[0].instances, 8u);
  EXPECT_EQ(a.ops[1].bytes, 0);
}

}  // namespace
}  // namespace perfscope::analysis
