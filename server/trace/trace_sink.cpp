#include "server/trace/trace_sink.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "engine/base/clock.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::trace {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Result<int> connect_unix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return Status::invalid_argument("socket path too long: " + path);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::io_error(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    ::close(fd);
    return Status::unavailable("cannot connect to " + path + ": " + std::strerror(err));
  }
  return fd;
}

Result<int> open_append(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::io_error("cannot open " + path + ": " + std::strerror(errno));
  return fd;
}

// All of `data`, or false. Sockets use MSG_NOSIGNAL: a reader that went away must not kill the
// traced program with SIGPIPE.
bool write_all(int fd, bool is_socket, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = is_socket ? ::send(fd, data.data(), data.size(), MSG_NOSIGNAL) : ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

DistributedRank distributed_rank_from_environment(const std::function<const char*(const char*)>& getenv_fn) {
  struct Launcher {
    const char *rank, *local_rank, *world_size;
  };
  static constexpr Launcher kLaunchers[] = {
      {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
  };
  auto number = [&](const char* name) -> std::string {
    const char* v = getenv_fn(name);
    if (!v || !*v || std::strlen(v) > 9) return {};
    for (const char* c = v; *c; ++c) {
      if (*c < '0' || *c > '9') return {};
    }
    return v;
  };
  for (const Launcher& l : kLaunchers) {
    std::string rank = number(l.rank);
    if (rank.empty()) continue;
    return {std::move(rank), number(l.local_rank), number(l.world_size)};
  }
  return {};
}

Result<TraceSinkOptions> sink_options_from_environment() {
  TraceSinkOptions o;
  o.socket_path = env(kSocketVariable);
  o.file_path = env(kFileVariable);
  o.records_path = env(kRecordsVariable);
  if (o.socket_path.empty() && o.file_path.empty()) {
    return Status::unavailable(std::string("neither ") + kSocketVariable + " nor " + kFileVariable +
                               " is set (start the program with `perfscope run`)");
  }
  if (std::string kinds = env(kKindsVariable); !kinds.empty()) {
    auto parsed = parse_trace_kinds(kinds);
    if (!parsed.ok()) return parsed.status();
    o.kinds = *parsed;
  }
  const std::string window = env(kWindowVariable), every = env(kEveryVariable);
  if (!window.empty() || !every.empty()) {
    auto schedule = make_trace_schedule("", std::atoll(window.c_str()), std::atoll(every.c_str()));
    if (!schedule.ok()) return schedule.status();
    o.schedule = *schedule;
  }
  o.converter.run = env(kRunVariable);
  o.converter.pid = std::to_string(::getpid());
  DistributedRank rank = distributed_rank_from_environment([](const char* name) { return std::getenv(name); });
  o.converter.rank = std::move(rank.rank);
  o.converter.local_rank = std::move(rank.local_rank);
  o.converter.world_size = std::move(rank.world_size);
  return o;
}

Result<std::unique_ptr<TraceSink>> TraceSink::open(TraceSinkOptions options) {
  const bool is_socket = !options.socket_path.empty();
  auto fd = is_socket ? connect_unix(options.socket_path) : open_append(options.file_path);
  if (!fd.ok()) return fd.status();
  int records_fd = -1;
  if (!options.records_path.empty()) {
    auto r = open_append(options.records_path);
    if (!r.ok()) {
      ::close(*fd);
      return r.status();
    }
    records_fd = *r;
  }
  return std::unique_ptr<TraceSink>(new TraceSink(std::move(options), *fd, is_socket, records_fd));
}

TraceSink::TraceSink(TraceSinkOptions options, int fd, bool is_socket, int records_fd)
    : options_(std::move(options)), fd_(fd), is_socket_(is_socket), records_fd_(records_fd),
      converter_(options_.converter) {
  thread_ = std::thread([this] { run(); });
}

TraceSink::~TraceSink() { close(); }

void TraceSink::push(std::vector<TraceRecord> records) {
  {
    std::lock_guard lock(mu_);
    stats_.records += records.size();
    // Records still arriving while the sink closes (a last flush) are taken until its thread ends.
    if (finished_ || queue_.size() + records.size() > options_.max_queued_records) {
      stats_.records_dropped += records.size();
      return;
    }
    if (queue_.empty()) {
      queue_ = std::move(records);
    } else {
      queue_.insert(queue_.end(), std::make_move_iterator(records.begin()), std::make_move_iterator(records.end()));
    }
  }
  wake_.notify_one();
}

void TraceSink::add_cupti_dropped(std::uint64_t count) {
  if (count == 0) return;
  std::lock_guard lock(mu_);
  stats_.cupti_dropped += count;
}

TraceSinkStats TraceSink::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void TraceSink::close() {
  if (closed_) return;
  closed_ = true;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  if (records_fd_ >= 0) ::close(records_fd_);
}

TimestampNs TraceSink::step_schedule(TimestampNs now) {
  const TraceWindow w = options_.schedule.window_at(now);
  const bool inside = now >= w.open_ns;
  if (inside && !window_open_) {
    window_open_ = true;
    if (options_.on_window) options_.on_window(true);
    {
      std::lock_guard lock(mu_);
      ++stats_.windows;
    }
    std::vector<Event> mark{Event{own_sample("trace_window_seconds", now, static_cast<double>(w.close_ns - now) / 1e9)}};
    write_events(mark);
  } else if (!inside && window_open_) {
    window_open_ = false;
    if (options_.on_window) options_.on_window(false);
  }
  return inside ? w.close_ns : w.open_ns;
}

void TraceSink::run() {
  using namespace std::chrono;
  const bool duty_cycled = options_.schedule.duty_cycled();
  auto next_tick = steady_clock::now() + options_.flush_interval;
  TimestampNs next_change = duty_cycled ? step_schedule(now_ns()) : 0;
  std::vector<TraceRecord> batch;
  std::vector<Event> events;
  for (;;) {
    bool stopping = false;
    auto wake_at = next_tick;
    if (duty_cycled) wake_at = std::min(wake_at, steady_clock::now() + nanoseconds(std::max<TimestampNs>(0, next_change - now_ns())));
    {
      std::unique_lock lock(mu_);
      wake_.wait_until(lock, wake_at, [&] { return stopping_ || !queue_.empty(); });
      batch.swap(queue_);
      stopping = stopping_;
    }
    if (!stopping && duty_cycled && now_ns() >= next_change) next_change = step_schedule(now_ns());
    if (!stopping && steady_clock::now() >= next_tick) {
      next_tick = steady_clock::now() + options_.flush_interval;
      // May call push() from this thread (CUPTI's completion callback runs here then).
      if (options_.on_tick) options_.on_tick();
    }
    if (!batch.empty()) {
      write_records(batch);
      events.clear();
      for (const TraceRecord& r : batch) converter_.add(r, events);
      converter_.end_batch(events);
      write_events(events);
      batch.clear();
    }
    if (stopping) {
      std::unique_lock lock(mu_);
      if (queue_.empty()) {
        finished_ = true;
        break;
      }
    }
  }
  events.clear();
  converter_.finish(events);
  write_events(events);
  write_summary();
}

void TraceSink::write_records(const std::vector<TraceRecord>& records) {
  if (records_fd_ < 0) return;
  std::string text;
  for (const TraceRecord& r : records) {
    text += record_to_json(r).dump();
    text += '\n';
  }
  write_all(records_fd_, false, text);
}

void TraceSink::write_events(std::vector<Event>& events) {
  if (events.empty()) return;
  // The server takes a batch all or nothing; a single event that fails the rules must not
  // cost the others, so each is checked here first.
  const std::uint64_t invalid = std::erase_if(events, [](const Event& e) { return !validate(e).ok(); });
  bool written = !output_failed_ && write_all(fd_, is_socket_, server::encode_ndjson(events));
  if (!written) output_failed_ = true;
  std::lock_guard lock(mu_);
  stats_.converter = converter_.stats();
  stats_.events_lost += invalid;
  if (written) stats_.events_written += events.size();
  else stats_.events_lost += events.size();
}

SampleEvent TraceSink::own_sample(const char* metric, TimestampNs ts, double value) const {
  SampleEvent e;
  e.metric = metric;
  if (!options_.converter.pid.empty()) e.labels.emplace_back("pid", options_.converter.pid);
  if (!options_.converter.run.empty()) e.labels.emplace_back("run", options_.converter.run);
  sort_labels(e.labels);
  e.ts_ns = ts;
  e.value = value;
  return e;
}

void TraceSink::write_summary() {
  TraceSinkStats s = stats();
  s.converter = converter_.stats();
  const TimestampNs now = now_ns();
  auto sample = [&](const char* metric, std::uint64_t value, const char* reason) {
    SampleEvent e = own_sample(metric, now, static_cast<double>(value));
    if (reason) {
      e.labels.emplace_back("reason", reason);
      sort_labels(e.labels);
    }
    return Event{std::move(e)};
  };
  std::vector<Event> counts{sample("trace_records", s.records, nullptr),
                            sample("trace_records_dropped", s.records_dropped, "queue"),
                            sample("trace_records_dropped", s.cupti_dropped, "cupti"),
                            sample("trace_kernels_without_launch", s.converter.without_launch, nullptr)};
  // NCCL's descriptions, where its profiler plugin was loaded: how many came, how many found
  // no launch call, and NCCL kernels that went out without one.
  if (s.converter.collectives) {
    counts.push_back(sample("trace_collectives", s.converter.collectives, nullptr));
    counts.push_back(sample("trace_collectives_unmatched", s.converter.collectives_unmatched, nullptr));
    counts.push_back(sample("trace_collective_kernels_undescribed", s.converter.without_collective, nullptr));
  }
  write_events(counts);
}

}  // namespace perfscope::trace
