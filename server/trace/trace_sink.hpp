// TraceSink: where a traced process's activity records go. CUPTI's thread hands over the
// records of each drained buffer with push(), which never blocks on I/O: the queue is bounded
// and records that do not fit are dropped and counted. One background thread converts them to
// events (TraceConverter), encodes them as NDJSON (the ingest wire format) and writes them to
// the output: the socket of `perfscope run`, or a file that `perfscope import` loads later.
// close() drains everything, writes the trace's own counts (records, records dropped by the
// queue and by CUPTI) as sample events, and joins the thread. With a duty-cycle schedule the
// same thread opens and closes the tracing windows.
//
// CUPTI-independent and free of Asio: it is linked into the injection library, which lives
// inside the traced program. Thread-safety: push(), add_cupti_dropped() and stats() from any
// thread; close() once, from one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/trace/trace_records.hpp"
#include "server/trace/trace_schedule.hpp"

namespace perfscope::trace {

// The environment `perfscope run` sets for the traced command.
inline constexpr const char* kSocketVariable = "PERFSCOPE_TRACE_SOCKET";    // unix socket to write to
inline constexpr const char* kFileVariable = "PERFSCOPE_TRACE_FILE";        // or an NDJSON file
inline constexpr const char* kRecordsVariable = "PERFSCOPE_TRACE_RECORDS";  // raw records (fixtures)
inline constexpr const char* kKindsVariable = "PERFSCOPE_TRACE_KINDS";
inline constexpr const char* kRunVariable = "PERFSCOPE_RUN_NAME";
inline constexpr const char* kWindowVariable = "PERFSCOPE_TRACE_WINDOW_NS";  // duty cycle: both set
inline constexpr const char* kEveryVariable = "PERFSCOPE_TRACE_EVERY_NS";

struct TraceSinkOptions {
  std::string socket_path;   // a `perfscope run` listener, or
  std::string file_path;     // an NDJSON file, appended to
  std::string records_path;  // optional: the raw records as JSON lines, before conversion
  TraceKinds kinds;
  std::size_t max_queued_records = 1'000'000;
  std::chrono::milliseconds flush_interval{500};
  ConverterOptions converter;
  // Called on the sink's thread every flush_interval, without locks held: the injection
  // library asks CUPTI for its partly filled buffers there, so a live view stays current.
  std::function<void()> on_tick;
  // Duty-cycled tracing: the sink's thread calls on_window(true) when a window of the
  // schedule opens (the library attaches CUPTI with its kinds) and on_window(false) when it
  // closes (the library hands over the window's records and detaches), and writes each window
  // it opens as a sample `trace_window_seconds` at the opening time, valued the window's length.
  TraceSchedule schedule;
  std::function<void(bool open)> on_window;
};

// A process's place in a multi-process job, from what its launcher set: torchrun and
// torch.distributed (RANK, LOCAL_RANK, WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK, …_LOCAL_RANK,
// …_SIZE), MPICH and Intel MPI (PMI_RANK, MPI_LOCALRANKID, PMI_SIZE), Slurm (SLURM_PROCID,
// SLURM_LOCALID, SLURM_NTASKS); the first launcher whose rank is set wins. Values that are not
// decimal numbers are ignored; rank empty when no launcher set one.
struct DistributedRank {
  std::string rank, local_rank, world_size;
};
DistributedRank distributed_rank_from_environment(const std::function<const char*(const char*)>& getenv_fn);

// From the variables above and the process id; kUnavailable when no output is named, and
// kInvalidArgument for bad kinds.
Result<TraceSinkOptions> sink_options_from_environment();

struct TraceSinkStats {
  std::uint64_t records = 0;          // handed over by push()
  std::uint64_t records_dropped = 0;  // queue full
  std::uint64_t cupti_dropped = 0;    // CUPTI's own count (its buffers were full)
  std::uint64_t events_written = 0;
  std::uint64_t events_lost = 0;      // the output failed (the reader went away)
  std::uint64_t windows = 0;          // duty cycle: windows opened
  ConverterStats converter;
};

class TraceSink {
 public:
  // Connects to the socket or opens the file; kUnavailable or kIoError when it cannot.
  static Result<std::unique_ptr<TraceSink>> open(TraceSinkOptions options);
  ~TraceSink();
  TraceSink(const TraceSink&) = delete;
  TraceSink& operator=(const TraceSink&) = delete;

  void push(std::vector<TraceRecord> records);
  void add_cupti_dropped(std::uint64_t count);
  void close();
  TraceSinkStats stats() const;
  const TraceSinkOptions& options() const { return options_; }

 private:
  TraceSink(TraceSinkOptions options, int fd, bool is_socket, int records_fd);
  void run();
  void write_events(std::vector<Event>& events);  // drops the invalid ones
  void write_records(const std::vector<TraceRecord>& records);
  void write_summary();
  // The sink's own sample events carry the process and the run.
  SampleEvent own_sample(const char* metric, TimestampNs ts, double value) const;
  // Duty cycle: opens or closes the window due at `now`; returns when the next change is due.
  TimestampNs step_schedule(TimestampNs now);

  const TraceSinkOptions options_;
  const int fd_;
  const bool is_socket_;
  const int records_fd_;  // -1 when not recording
  TraceConverter converter_;  // sink thread only

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<TraceRecord> queue_;  // guarded by mu_
  bool stopping_ = false;           // guarded by mu_
  bool finished_ = false;           // guarded by mu_: the thread has written its last batch
  TraceSinkStats stats_;            // guarded by mu_
  bool output_failed_ = false;      // sink thread only
  bool window_open_ = false;        // sink thread only
  std::thread thread_;
  bool closed_ = false;
};

}  // namespace perfscope::trace
