// CUDA activity records in a CUPTI-independent form, and their conversion to perfscope events.
// The injection library (injection.cpp) copies each CUPTI record it drains into one of these
// plain structs; everything after that — launch-call correlation, demangling, naming copies,
// tags — happens here, so it builds and is tested on machines without a CUDA toolkit.
// Enum values are CUPTI's own (CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind); the
// injection library checks them against the headers at compile time.
//
// Value types and a single-threaded converter (the trace sink's thread owns it).
#pragma once

#include <array>
#include <deque>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <optional>

#include <nlohmann/json_fwd.hpp>

#include "engine/events/events.hpp"

namespace perfscope::trace {

// The activity kinds a run can trace (`perfscope run --kinds`).
struct TraceKinds {
  bool kernel = true;
  bool memcpy = true;
  bool memset = true;
  // Runtime and driver API calls that start GPU work (gpu_work_calls.hpp; no other call is
  // recorded): they correlate kernels, copies and memsets with their launches. Enabling the
  // runtime kind hooks every runtime call, though, and a PyTorch program makes ~19 per kernel,
  // so it is not the default (bench/RESULTS.md).
  bool runtime = false;
  bool driver = false;  // launches by Triton, cuBLAS and other driver-API users
  bool memory = true;   // device memory allocations and frees
  // Launch calls only (kernels, cooperative kernels, graphs; runtime and driver API), by CUPTI
  // callbacks on those calls alone: the default. It correlates kernels launched through either
  // API (cuBLAS, Triton) and costs a PyTorch decode loop ~3 % beyond CUPTI's kernel records,
  // where runtime records cost 16–24 %; a bare CUDA launch loop, which makes no other call, pays
  // ~0.9 µs more per launch than with runtime records.
  bool launch = true;
};
// "kernel,memcpy,…" or "all" (every kind but `launch`, which `runtime` and `driver` cover);
// kInvalidArgument naming the unknown kind.
Result<TraceKinds> parse_trace_kinds(std::string_view text);
std::string format_trace_kinds(const TraceKinds& kinds);

// A runtime or driver API call.
struct ApiRecord {
  std::uint32_t correlation_id = 0;
  std::uint32_t cbid = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t thread_id = 0;
};

// A kernel's name, interned: one string per distinct name for the life of the process, so a
// record carries a pointer and CUPTI's thread allocates nothing per kernel. Names are never
// freed (a program has as many as it has kernels). Copying is free; interning is thread-safe.
class KernelName {
 public:
  KernelName() : text_(&empty()) {}  // no lock: a record is default-made on CUPTI's thread
  KernelName(std::string_view text) : text_(&intern(text)) {}  // NOLINT: names are written as text
  KernelName(const char* text) : KernelName(std::string_view(text ? text : "")) {}  // NOLINT
  KernelName(const std::string& text) : KernelName(std::string_view(text)) {}       // NOLINT

  const std::string& str() const { return *text_; }
  operator const std::string&() const { return *text_; }  // NOLINT: reads as the text it is
  // Equal names are the same string, so identity is equality.
  const std::string* id() const { return text_; }
  friend bool operator==(const KernelName& a, const KernelName& b) { return a.text_ == b.text_; }

 private:
  static const std::string& intern(std::string_view text);
  // The interned empty name, looked up once.
  static const std::string& empty() {
    static const std::string& e = intern({});
    return e;
  }
  const std::string* text_;
};

struct KernelRecord {
  KernelName name;  // mangled, as CUPTI reports it
  std::uint32_t correlation_id = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::array<std::int32_t, 3> grid{};
  std::array<std::int32_t, 3> block{};
  std::uint32_t registers_per_thread = 0;
  std::uint32_t static_shared_bytes = 0;
  std::uint32_t dynamic_shared_bytes = 0;
};

// A memcpy or memset on the GPU.
struct CopyRecord {
  bool memset = false;
  std::uint32_t copy_kind = 0;  // CUpti_ActivityMemcpyKind (memcpy only)
  std::uint32_t src_kind = 0;   // CUpti_ActivityMemoryKind (for memset: the destination's)
  std::uint32_t dst_kind = 0;
  std::uint64_t bytes = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

// A memory allocation or release (CUPTI's MEMORY2 records).
struct MemoryRecord {
  bool alloc = true;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t ts_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t memory_kind = 0;  // CUpti_ActivityMemoryKind
};

// NCCL's profiler plugin (nccl_profiler.cpp) is loaded by a communicator: from then on the
// process's NCCL kernels wait for their collectives' descriptions.
struct CommunicatorRecord {
  std::uint64_t hash = 0;
  std::int32_t ranks = 0, rank = 0;
};

// NCCL's description of one collective, as its profiler plugin hands it over. NCCL describes a
// collective on the thread that launched its kernel, right after the launch (hostStreamPlanTask):
// the thread and the time tie it to that launch call, and through the call's correlation id to
// the kernel. Several collectives of one group may share a kernel. Where NCCL enqueues the work
// through a host callback instead (a CUDA graph's capture, CUDA_LAUNCH_BLOCKING, an eager
// collective while a graph of NCCL work is alive) the description comes on CUDA's callback
// thread: it ties to nothing and is counted (ConverterStats::collectives_unmatched).
struct CollectiveRecord {
  std::uint64_t comm_hash = 0;
  std::int32_t comm_ranks = 0, comm_rank = 0;
  std::uint64_t seq = 0;  // NCCL's sequence number of this operation on this communicator
  std::string func;       // "AllReduce", …
  std::string datatype;   // "ncclFloat32", …
  std::uint64_t count = 0;
  std::string algorithm, protocol;
  std::uint32_t channels = 0;
  std::uint32_t thread_id = 0;
  std::uint64_t ts_ns = 0;  // CUPTI's clock, as launch calls are timed
  std::int32_t nodes = 1;   // hosts the communicator spans
};

using TraceRecord = std::variant<ApiRecord, KernelRecord, CopyRecord, MemoryRecord, CommunicatorRecord, CollectiveRecord>;

// The bytes of one collective as nccl-tests counts them (its "size"): count × element size,
// times the ranks for AllGather and ReduceScatter, whose count is one rank's share. 0 when the
// data type is unknown.
std::uint64_t collective_bytes(const CollectiveRecord& c);

// CUPTI's enum values the conversion relies on.
namespace cupti_values {
inline constexpr std::uint32_t kMemcpyHtoD = 1, kMemcpyDtoH = 2, kMemcpyHtoA = 3, kMemcpyAtoH = 4,
                               kMemcpyAtoA = 5, kMemcpyAtoD = 6, kMemcpyDtoA = 7, kMemcpyDtoD = 8,
                               kMemcpyHtoH = 9, kMemcpyPtoP = 10;
inline constexpr std::uint32_t kMemoryPageable = 1, kMemoryPinned = 2, kMemoryDevice = 3, kMemoryArray = 4,
                               kMemoryManaged = 5, kMemoryDeviceStatic = 6, kMemoryManagedStatic = 7;
}  // namespace cupti_values

std::string_view memcpy_kind_name(std::uint32_t kind);  // "HtoD", … ("unknown")
std::string_view memory_kind_name(std::uint32_t kind);  // "device", "pinned", … ("unknown")

// Records as JSON objects, one per line, for recorded-record fixtures (`{"record":"kernel",…}`).
nlohmann::json record_to_json(const TraceRecord& record);
Result<TraceRecord> record_from_json(const nlohmann::json& j);

struct ConverterOptions {
  std::string run;  // the run name, tagged as `run`
  std::string pid;  // the traced process, tagged as `pid`
  // A rank of a multi-process job (distributed_rank_from_environment), tagged as `rank`,
  // `local_rank` and `world_size`; empty outside one.
  std::string rank = {}, local_rank = {}, world_size = {};
  // Launch calls kept while their kernel has not arrived (CUPTI delivers API and GPU records
  // in separate buffers, in either order); the oldest are forgotten beyond this.
  std::size_t max_pending_calls = 100'000;
  // Batches a kernel may wait for its launch call before it is sent without one.
  int max_wait_batches = 2;
};

struct ConverterStats {
  std::uint64_t kernels = 0;
  std::uint64_t copies = 0;
  std::uint64_t memory_operations = 0;
  std::uint64_t api_calls = 0;
  std::uint64_t without_launch = 0;  // kernels and copies sent without their launch call
  std::uint64_t collectives = 0;      // NCCL's descriptions received
  std::uint64_t without_collective = 0;  // NCCL kernels sent without one (plugin loaded)
  std::uint64_t collectives_unmatched = 0;  // descriptions that found no launch call
};

class TraceConverter {
 public:
  explicit TraceConverter(ConverterOptions options);

  // Takes one record; appends the events it completes to `out`.
  void add(const TraceRecord& record, std::vector<Event>& out);
  // After each drained buffer: kernels that have waited too long go out without a launch call.
  void end_batch(std::vector<Event>& out);
  // At the end of the trace: everything still waiting goes out.
  void finish(std::vector<Event>& out);
  const ConverterStats& stats() const { return stats_; }

 private:
  struct Waiting {
    KernelEvent event;
    int batches = 0;
  };
  void add_api(const ApiRecord& api, std::vector<Event>& out);
  void add_gpu_work(std::uint32_t correlation_id, KernelEvent event, std::vector<Event>& out);
  // NCCL's descriptions of collectives, tied to launch calls by thread and time.
  void add_collective(CollectiveRecord c, std::vector<Event>& out);
  // Ties a description to its launch call; the call's correlation id, or none yet.
  std::optional<std::uint32_t> attach_collective(const CollectiveRecord& c);
  // The kernel goes out now: its call is known and no description is awaited (or has come).
  bool ready(std::uint32_t correlation_id, const KernelEvent& event) const;
  void send(std::uint32_t correlation_id, KernelEvent event, std::vector<Event>& out);
  // Emits the kernels waiting on `correlation_id` that are ready.
  void release(std::uint32_t correlation_id, std::vector<Event>& out);
  KernelEvent kernel_event(const KernelRecord& k);
  KernelEvent copy_event(const CopyRecord& c) const;
  MemoryEvent memory_event(const MemoryRecord& m) const;
  const std::string& demangled(const KernelName& mangled);
  Tags base_tags() const;

  ConverterOptions options_;
  // API calls by correlation id, kept after a match: one graph launch call starts many kernels.
  std::unordered_map<std::uint32_t, ApiRecord> calls_;
  std::deque<std::uint32_t> call_order_;  // correlation ids in arrival order, for eviction
  std::unordered_map<std::uint32_t, std::vector<Waiting>> waiting_;  // GPU work before its call
  std::unordered_map<const std::string*, std::string> names_;  // interned mangled name → demangled
  // Collectives: whether NCCL's plugin is loaded; each thread's recent launch calls (start,
  // correlation id), newest last; descriptions by the call they belong to, and those whose call
  // has not arrived yet (with the batches they waited).
  bool nccl_plugin_ = false;
  std::unordered_map<std::uint32_t, std::deque<std::pair<std::uint64_t, std::uint32_t>>> launches_by_thread_;
  std::unordered_map<std::uint32_t, std::vector<CollectiveRecord>> collectives_;
  std::deque<std::uint32_t> collective_order_;  // for eviction
  std::vector<std::pair<CollectiveRecord, int>> unattached_;
  ConverterStats stats_;
};

}  // namespace perfscope::trace
