// The events applications report about their own work: kernel executions, memory
// allocations, command-buffer (stream) submissions, inference requests, operator timings,
// custom gauge samples, and the runs they belong to. Plain value types; validate() checks one against the rules every
// producer must meet (in-process API and network ingest alike) and names the failing field.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/series/series.hpp"

namespace perfscope {

// The longest name, id or tag value an event may carry, in bytes.
inline constexpr std::size_t kMaxEventText = 1024;
// Text longer than kMaxEventText bytes (kernel names of heavily templated code run to
// kilobytes) keeps its head, cut at a UTF-8 character boundary, and says it was cut ("...").
std::string clip_event_text(std::string text);

// Low-cardinality key → value pairs, sorted by key (same encoding as labels).
using Tags = Labels;

// A device a producer names: a GPU by its ordinal ("0", what CUDA tracing and the C++ API
// default to), a CPU producer by a name that begins "cpu" ("cpu0", as the demo's). The kind
// decides which advice fits the work.
bool is_cpu_device(std::string_view device);

struct KernelEvent {
  std::string name;
  std::string device = "0";
  std::string variant;  // empty when the kernel is not part of an A/B test
  std::string stream;
  TimestampNs start_ns = 0;
  TimestampNs end_ns = 0;
  std::optional<std::array<std::uint32_t, 3>> grid;
  std::optional<std::array<std::uint32_t, 3>> block;
  std::optional<std::uint64_t> shared_mem_bytes;
  std::optional<std::uint32_t> registers_per_thread;
  std::optional<TimestampNs> launch_start_ns;  // the CPU launch call, when known
  std::optional<TimestampNs> launch_end_ns;
  // The work of one execution, when the reporter knows it (a GEMM's 2·M·N·K, the bytes it
  // reads and writes): achieved FLOP/s and bandwidth and the roofline come from these.
  std::optional<double> flops, bytes;
  // The data type the FLOPs are counted in ("bf16", "fp8", …; kDataTypes in gpu_specs.hpp):
  // which compute ceiling of the roofline the kernel is set against. Empty when not said.
  std::string dtype;
  Tags tags;

  double duration_ms() const { return static_cast<double>(end_ns - start_ns) / 1e6; }
};

enum class MemoryOp { kAlloc, kFree };
enum class MemoryKind { kDevice, kShared, kHost };
std::string_view to_string(MemoryOp op);
std::string_view to_string(MemoryKind kind);
std::optional<MemoryKind> memory_kind_from(std::string_view text);

struct MemoryEvent {
  MemoryOp op = MemoryOp::kAlloc;
  std::string address;  // any id stable between an allocation and its free
  std::uint64_t size_bytes = 0;  // required for alloc; for free, filled from the allocation
  MemoryKind kind = MemoryKind::kDevice;
  std::string tag;
  std::string device = "0";
  TimestampNs ts_ns = 0;
  Tags tags;
};

struct CommandBufferEvent {
  std::string id;
  std::string queue;  // a CUDA stream or a Metal command queue
  std::string device = "0";
  TimestampNs enqueue_ns = 0;
  TimestampNs submit_ns = 0;
  TimestampNs start_ns = 0;
  TimestampNs end_ns = 0;
  Tags tags;
};

struct InferenceEvent {
  std::string model;
  std::string version;
  TimestampNs ts_ns = 0;  // completion time
  double latency_ms = 0;
  std::optional<double> queue_ms;
  std::optional<double> compute_ms;
  std::uint32_t batch_size = 1;
  bool ok = true;
  std::optional<double> ttft_ms;  // LLM: time to first token
  std::optional<std::uint64_t> input_tokens;
  std::optional<std::uint64_t> output_tokens;
  Tags tags;

  // Time per output token: (latency − ttft) / (output_tokens − 1); none without ttft or with at
  // most one output token.
  std::optional<double> tpot_ms() const {
    if (!ttft_ms || !output_tokens || *output_tokens <= 1) return std::nullopt;
    return (latency_ms - *ttft_ms) / static_cast<double>(*output_tokens - 1);
  }
};

struct OperatorEvent {
  std::string op_type;  // Conv, MatMul, …
  std::string name;
  std::string provider;  // cpu, gpu, npu, …
  double duration_ms = 0;
  std::string model;
  std::vector<std::vector<std::int64_t>> input_shapes;
  TimestampNs ts_ns = 0;
  Tags tags;
};

// A custom gauge: one sample of a series the application names.
struct SampleEvent {
  std::string metric;
  Labels labels;
  TimestampNs ts_ns = 0;
  double value = 0;
};

// A run: one traced program (`perfscope run`, an import of its file) or an in-process
// producer's named stretch of work. Its events carry the tag run=NAME. Reported when it
// starts and again when it ends; reports of one name merge (earliest start, latest end, pids
// joined, figures of the latest report), so a run imported after it was streamed stays one.
struct RunEvent {
  std::string name;
  std::vector<std::string> command;  // the command line, as started
  std::string host;
  std::vector<std::int64_t> pids;    // processes that reported
  TimestampNs start_ns = 0;
  std::optional<TimestampNs> end_ns;  // absent while the run goes on
  std::optional<int> exit_status;     // the command's (128 + signal when a signal ended it)
  std::string kinds;                  // traced activity kinds ("kernel,memcpy,…"), if traced
  std::optional<std::uint64_t> records;  // trace records received
  std::optional<std::uint64_t> dropped;  // trace records lost (queue full, CUPTI)
  std::vector<std::string> gpus;      // devices its kernels ran on
  // Duty-cycled tracing: activity is recorded in windows of trace_window_ns that open every
  // trace_every_ns of the wall clock (both set, or neither: traced throughout).
  std::optional<std::int64_t> trace_window_ns;
  std::optional<std::int64_t> trace_every_ns;
  Tags tags;
};

// A run's state as its reports give it: running until it ends, then by its exit status.
std::string_view run_status(const RunEvent& run);

using Event =
    std::variant<KernelEvent, MemoryEvent, CommandBufferEvent, InferenceEvent, OperatorEvent, SampleEvent, RunEvent>;

// The wire name of the i-th alternative of Event ("kernel", "memory", …).
std::string_view event_type_name(std::size_t index);
std::string_view event_type(const Event& event);

// Ok, or kInvalidArgument naming the field at fault.
Status validate(const KernelEvent& e);
Status validate(const MemoryEvent& e);
Status validate(const CommandBufferEvent& e);
Status validate(const InferenceEvent& e);
Status validate(const OperatorEvent& e);
Status validate(const SampleEvent& e);
Status validate(const RunEvent& e);
Status validate(const Event& e);

// The value of one tag, empty when absent.
std::string_view tag_value(const Tags& tags, std::string_view key);

// Input shapes as text: "1x3x224x224,1000" (dims joined by x, inputs by comma).
std::string format_shapes(const std::vector<std::vector<std::int64_t>>& shapes);

}  // namespace perfscope
