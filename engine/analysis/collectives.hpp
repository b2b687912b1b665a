// Collective operations of multi-GPU jobs (NCCL all-reduce, all-gather, …) across their ranks:
// each collective instance matched across ranks, how long each rank waited in it for the last
// one to arrive and how long it then moved data, per rank and per operation, and the straggler
// — the rank that arrives last most often, with how much later it comes.
//
// The source is the kernels NCCL launches. Where NCCL's profiler plugin described them (the
// tracing library is one: server/trace/nccl_profiler.cpp) each carries its communicator, that
// communicator's size, the bytes nccl-tests would count, algorithm and protocol; else they are
// recognised by name alone (the kernel-name fallback: no bytes, one communicator assumed).
// Every rank launches a communicator's collectives in the same order — NCCL's sequence numbers
// count them — so within one communicator the k-th collective kernel of one rank is the k-th of
// every other member; matching stops, and says where, at the first instance whose operation
// differs between ranks. A kernel that ended before another rank's partner began has none (a lost
// record, a window edge between the ranks' kernels): it is skipped, and counted. A communicator
// may hold some of the job's ranks only (tensor-parallel groups within data-parallel ones).
//
// Point-to-point kernels (SendRecv) pair two ranks, not all of a communicator's: they count as
// communication in each rank's breakdown but are not matched. Where NCCL described some kernels
// of a job and one communicator only, the kernels it did not describe (enqueued through a host
// callback: ties to no launch) are taken as that communicator's, so that the ranks' lists stay
// in step.
//
// Bandwidth as nccl-tests defines it: algbw = bytes / time, busbw = algbw × a factor per
// operation (all-reduce 2(n−1)/n; all-gather, reduce-scatter and all-to-all (n−1)/n; the rest 1),
// n the communicator's ranks. The time is the instance's data movement: from the last member's
// arrival to the last member's end (what waiting for a late rank adds is not the links' doing).
// Only where every rank of the communicator was traced and all give the same bytes.
//
// On one rank, a collective's kernel starts when that rank arrives and spins until the last
// rank has arrived, then moves data: wait = last arrival − own arrival (up to its duration),
// transfer = end − max(own arrival, last arrival). Arrival times are GPU start times on one
// clock (the ranks of one host; across hosts the clocks' offsets would enter the skew).
//
// Pure functions over values.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/clock.hpp"

namespace perfscope::analysis {

// What an NCCL kernel's name says: the operation ("AllReduce", "AllGather", "ReduceScatter",
// "Broadcast", "Reduce", "SendRecv", "AllToAll"), and where the name has them the reduction,
// data type, algorithm and protocol. nullopt for a kernel that is no NCCL collective.
struct CollectiveKernel {
  std::string op, reduction, dtype, algorithm, protocol;
};
std::optional<CollectiveKernel> parse_collective_kernel(std::string_view name);

// One rank's collective kernels (any order; they are sorted by start).
struct RankCollectives {
  std::string rank;    // the rank's name (its `rank` tag, else its process)
  std::string device;  // the GPU its kernels ran on (the first seen)
  struct Execution {
    std::string op;
    TimestampNs start_ns = 0, end_ns = 0;
    // From NCCL's description, where there is one: the communicator (empty: not described), its
    // ranks, the bytes (0: unknown), algorithm and protocol.
    std::string comm = {};
    int comm_ranks = 0;
    int comm_nodes = 1;  // hosts the communicator spans: its bandwidth is not NVLink's beyond one
    double bytes = 0;
    std::string algorithm = {}, protocol = {};
  };
  std::vector<Execution> executions;
  // Its other kernels ("compute": every kernel that is no collective), for the time breakdown.
  struct Span {
    TimestampNs start_ns = 0, end_ns = 0;
  };
  std::vector<Span> compute;
};

// Where a rank's time went over a stretch, as Holistic Trace Analysis breaks it down: its
// compute kernels' union, its collective kernels' union, the part of the communication during
// which compute ran (overlapped, hidden) and the rest (exposed: the GPU did nothing else), and
// idle (neither). compute + exposed + idle = window.
struct TimeBreakdown {
  double window_ms = 0;
  double compute_ms = 0;
  double communication_ms = 0;
  double overlapped_ms = 0;
  double exposed_ms = 0;
  double idle_ms = 0;
  double overlap_ratio = 0;  // overlapped / communication; 0 without communication
  double exposed_share = 0;  // exposed / window
  // Of the exposed time, what moved data: in each matched collective, from the last rank's
  // arrival to the kernel's end with none of its compute beside it (exposed − this is waiting
  // for other ranks, or collectives that matched no other rank's).
  double exposed_transfer_ms = 0;
};

struct CollectiveOptions {
  // A straggler is named when one rank arrives last in at least this share of the matched
  // instances, at least min_instances of them, and its median lateness (its arrival after the
  // next-latest rank's) and its extra compute per step (Straggler::extra_per_step_ms) are each at
  // least min_lateness_ms and min_lateness_of_step of the median step (the time between
  // successive instances' first arrivals): lateness without extra compute is a clock offset. So
  // must the exposed wait it causes the others be (Straggler::exposed_wait_caused_ms): a rank
  // late into a collective the others run beside their compute holds nobody up.
  double min_last_share = 2.0 / 3.0;
  std::size_t min_instances = 5;
  double min_lateness_ms = 0.1;
  double min_lateness_of_step = 0.10;
  std::size_t max_instances_listed = 200;  // the newest instances kept in `instances`
  // The links' peak per GPU and direction (NVLink links × per-link rate, or PCIe), bytes/s; 0:
  // unknown. Bus bandwidth is set against it.
  double link_peak_bytes_per_second = 0;
  // A matched all-reduce's, all-gather's, reduce-scatter's or all-to-all's kernels overlap (none
  // can end before every rank arrived): a rank's kernel that ended more than this before the
  // last rank's began has no partner (a lost record, a window edge) and is skipped. A
  // broadcast's root may finish before the others arrive: those are never skipped.
  TimestampNs overlap_tolerance_ns = 50'000;
};

struct CollectiveInstance {
  std::size_t sequence = 0;  // 0 for the first matched instance in the window
  std::string op;
  std::vector<std::size_t> ranks;             // its members: indices into CollectiveAnalysis::ranks
  std::vector<TimestampNs> start_ns, end_ns;  // per member, in the order of `ranks`
  std::size_t last_rank = 0;                  // index (into CollectiveAnalysis::ranks) of the last to arrive
  double skew_ms = 0;                          // last arrival − first arrival
  // NCCL's description of its first member's kernel (empty, 0: not described).
  std::string comm;
  int comm_ranks = 0, comm_nodes = 1;
  std::string algorithm, protocol;
  double bytes = 0;  // 0: unknown
  double algbw_gb_per_second = 0, busbw_gb_per_second = 0;  // 0: unknown
};

// nccl-tests' bus-bandwidth factor of an operation over n ranks (1 for one it does not know).
double bus_bandwidth_factor(std::string_view op, int n);

struct RankCollectiveSummary {
  std::string rank, device;
  std::size_t instances = 0;  // matched instances it took part in
  double total_ms = 0, wait_ms = 0, transfer_ms = 0;
  double wait_share = 0;      // wait / total
  std::size_t last_arrivals = 0;
  double mean_arrival_offset_ms = 0;  // its arrival after the mean arrival of the other ranks
  // Over the job's window: from the first kernel of any rank to the last one's end (one span for
  // every rank, so that they compare; the ranks of one host share one clock).
  TimeBreakdown breakdown;
  // Per step where steps were found (CollectiveAnalysis::step_collectives): each figure's
  // median over the steps, overlap_ratio and exposed_share of those medians.
  std::optional<TimeBreakdown> per_step;
};

// One operation of one size (the kernel-name fallback: of any size).
struct CollectiveOpSummary {
  std::string op;
  double bytes = 0;  // 0: unknown
  std::string algorithm, protocol;  // NCCL's choice for most of them (empty: not described)
  int comm_ranks = 0;               // ranks of its communicator (0: not described)
  int comm_nodes = 1;               // hosts it spans (more than one: not set against the NVLink peak)
  std::size_t instances = 0;
  double duration_p50_ms = 0, duration_p99_ms = 0;  // per rank and instance (nearest rank)
  double transfer_p50_ms = 0;
  double wait_share = 0;  // waiting over the time ranks spent in it
  double algbw_p50_gb_per_second = 0, busbw_p50_gb_per_second = 0;  // 0: bytes unknown
  double busbw_share_of_peak = 0;  // of CollectiveOptions::link_peak_bytes_per_second; 0: unknown
};

struct Straggler {
  std::string rank;
  double last_share = 0;              // of the matched instances, those it arrived last in
  double lateness_median_ms = 0;      // after the next-latest rank, where it was last
  // The compute it adds to a step: the median over successive instances of its time between
  // leaving one and entering the next, beyond the other ranks' mean of the same. Each rank's
  // time is on its own GPU's clock, so an offset between the GPUs' clocks cancels; a median,
  // so that warm-up steps do not weigh in.
  double extra_per_step_ms = 0;
  double step_median_ms = 0;
  // What its lateness costs the other ranks: the median, over the instances it arrived last in,
  // of their mean wait for it with none of their own compute beside it. A straggler is named only
  // when this too is at least the lateness that matters (a wait hidden behind compute is free).
  double exposed_wait_caused_ms = 0;
};

struct CollectiveAnalysis {
  std::vector<RankCollectiveSummary> ranks;
  std::vector<CollectiveOpSummary> ops;
  std::size_t matched = 0;       // instances matched across every member
  std::size_t communicators = 0; // described communicators (0: the kernel-name fallback only)
  std::size_t unmatched = 0;     // collective kernels left unmatched (skipped ones included)
  std::size_t skipped = 0;       // kernels without a partner on every rank, skipped to keep in step
  std::string mismatch;          // why matching stopped early (empty: it did not)
  std::optional<Straggler> straggler;
  std::string no_straggler;      // why none was named (empty when one was)
  double step_median_ms = 0;
  // Steps: `step_collectives` matched collectives make a step (0: no repeating pattern of at
  // most kMaxStepCollectives, or too few instances), a step running from one step's first
  // arrival to the next's; `steps` whole steps were found. The period is the smallest at which
  // the operations repeat (other collectives allowed within one period of either end), or a
  // multiple of it where the arrivals cluster into steps (a data-parallel step's gradient
  // buckets): see find_steps in collectives.cpp.
  std::size_t step_collectives = 0, steps = 0;
  std::vector<CollectiveInstance> instances;  // the newest max_instances_listed
};

inline constexpr std::size_t kMaxStepCollectives = 16;

// The breakdown of one rank's time over [from, to): compute and communication as spans (any
// order, overlapping or not).
TimeBreakdown time_breakdown(std::vector<RankCollectives::Span> compute, std::vector<RankCollectives::Span> communication,
                             TimestampNs from, TimestampNs to);

// Ranks with no collective kernel are left out; fewer than two ranks match nothing.
CollectiveAnalysis analyze_collectives(std::vector<RankCollectives> ranks, const CollectiveOptions& options = {});

}  // namespace perfscope::analysis
