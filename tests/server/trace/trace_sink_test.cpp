// The trace sink of kernel tracing: file and socket output, a bounded queue, a reader that goes
// away, duty-cycled windows, a rank's identity from its launcher, the environment's settings.
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

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("trace_test_" + std::to_string(::getpid()) + "_" +
                                               std::to_string(reinterpret_cast<std::uintptr_t>(this)));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

std::vector<Event> read_events(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  auto decoded = server::decode_ndjson_events(text.str(), 1);
  EXPECT_FALSE(decoded.error.has_value()) << decoded.error->message;
  return decoded.events;
}

double sample_value(const std::vector<Event>& events, const std::string& metric, const std::string& reason = "") {
  for (const Event& e : events) {
    const auto* s = std::get_if<SampleEvent>(&e);
    if (!s || s->metric != metric) continue;
    std::string r;
    for (const auto& [k, v] : s->labels) r = k == "reason" ? v : r;
    if (r == reason) return s->value;
  }
  return -1;
}

TEST(TraceSink, WritesConvertedEventsAndItsOwnCountsToAFile) {
  TempDir dir;
  TraceSinkOptions o;
  o.file_path = (dir.path / "events.ndjson").string();
  o.records_path = (dir.path / "records.ndjson").string();
  o.converter = {"run-f", "77"};
  auto sink = TraceSink::open(o);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  (*sink)->push({call(1, 10), kernel(1, 100)});
  (*sink)->push({kernel(2, 200), call(2, 150), MemoryRecord{true, 0x10, 64, 300, 0, 3}});
  (*sink)->add_cupti_dropped(5);
  (*sink)->close();
  auto events = read_events(o.file_path);
  int kernels = 0, memory = 0;
  for (const Event& e : events) {
    if (const auto* k = std::get_if<KernelEvent>(&e)) {
      ++kernels;
      EXPECT_TRUE(k->launch_start_ns.has_value());
      EXPECT_EQ(tag(k->tags, "run"), "run-f");
    }
    memory += std::holds_alternative<MemoryEvent>(e);
  }
  EXPECT_EQ(kernels, 2);
  EXPECT_EQ(memory, 1);
  EXPECT_EQ(sample_value(events, "trace_records"), 5);
  EXPECT_EQ(sample_value(events, "trace_records_dropped", "cupti"), 5);
  EXPECT_EQ(sample_value(events, "trace_records_dropped", "queue"), 0);
  auto stats = (*sink)->stats();
  EXPECT_EQ(stats.events_written, 3u + 4u);  // 2 kernels, 1 allocation, 4 counts
  // The raw records, one JSON line each, in arrival order.
  std::ifstream records(o.records_path);
  std::string first;
  std::getline(records, first);
  EXPECT_EQ(nlohmann::json::parse(first)["record"], "api");
}

TEST(TraceSink, AFullQueueDropsAndCountsInsteadOfBlocking) {
  TempDir dir;
  TraceSinkOptions o;
  o.file_path = (dir.path / "events.ndjson").string();
  o.max_queued_records = 10;
  auto sink = TraceSink::open(o);
  ASSERT_TRUE(sink.ok());
  std::vector<TraceRecord> many;
  for (std::uint32_t i = 0; i < 25; ++i) many.push_back(kernel(i, i));
  (*sink)->push(many);  // more than the queue holds: dropped whole
  (*sink)->close();
  EXPECT_EQ((*sink)->stats().records_dropped, 25u);
  EXPECT_EQ(sample_value(read_events(o.file_path), "trace_records_dropped", "queue"), 25);
}

TEST(TraceSink, SocketOutputAndAReaderThatGoesAway) {
  TempDir dir;
  const std::string path = (dir.path / "s.sock").string();
  int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  TraceSinkOptions o;
  o.socket_path = path;
  auto sink = TraceSink::open(o);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  int reader = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(reader, 0);
  (*sink)->push({call(1, 10), kernel(1, 100)});
  std::string got;
  char buf[4096];
  while (got.find('\n') == std::string::npos) {
    ssize_t n = ::recv(reader, buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_NE(got.find("tiny_kernel(int*, int)"), std::string::npos);
  ::close(reader);  // `perfscope run` died: no SIGPIPE, the events are counted as lost
  ::close(listener);
  for (int i = 0; i < 50; ++i) (*sink)->push({kernel(100 + i, 1000)});
  (*sink)->close();
  auto s = (*sink)->stats();
  EXPECT_EQ(s.events_written, 1u);
  EXPECT_GT(s.events_lost, 0u);
}

TEST(TraceSchedule, AnyTwoOfDutyWindowAndEveryFixTheThird) {
  constexpr std::int64_t ms = 1'000'000;
  auto only_duty = make_trace_schedule("5%", 0, 0);
  ASSERT_TRUE(only_duty.ok());
  EXPECT_EQ(only_duty->window_ns, 200 * ms);  // the default window
  EXPECT_EQ(only_duty->every_ns, 4000 * ms);
  EXPECT_DOUBLE_EQ(only_duty->fraction(), 0.05);
  auto with_window = make_trace_schedule("0.25", 50 * ms, 0);
  ASSERT_TRUE(with_window.ok());
  EXPECT_EQ(with_window->every_ns, 200 * ms);
  auto with_every = make_trace_schedule("10%", 0, 3000 * ms);
  ASSERT_TRUE(with_every.ok());
  EXPECT_EQ(with_every->window_ns, 300 * ms);
  auto both = make_trace_schedule("", 100 * ms, 1000 * ms);
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(both->duty_cycled());
  EXPECT_FALSE(make_trace_schedule("", 0, 0)->duty_cycled());
  EXPECT_FALSE(make_trace_schedule("100%", 0, 0)->duty_cycled());  // always open
  // Errors name the option.
  EXPECT_EQ(make_trace_schedule("0%", 0, 0).status().field(), "duty_cycle");
  EXPECT_EQ(make_trace_schedule("150%", 0, 0).status().field(), "duty_cycle");
  EXPECT_EQ(make_trace_schedule("five", 0, 0).status().field(), "duty_cycle");
  EXPECT_EQ(make_trace_schedule("5%", 100 * ms, 1000 * ms).status().field(), "duty_cycle");  // all three
  EXPECT_EQ(make_trace_schedule("", 100 * ms, 0).status().field(), "trace_window");
  EXPECT_EQ(make_trace_schedule("", 0, 100 * ms).status().field(), "trace_every");
  EXPECT_EQ(make_trace_schedule("", 1 * ms, 100 * ms).status().field(), "trace_window");  // too short
  EXPECT_EQ(make_trace_schedule("", 200 * ms, 100 * ms).status().field(), "trace_every");
}

TEST(TraceSchedule, WindowsOpenOnMultiplesOfEveryOfTheWallClock) {
  TraceSchedule s{20, 100};
  EXPECT_EQ(s.window_at(1000).open_ns, 1000);  // a window opens at 1000
  EXPECT_EQ(s.window_at(1000).close_ns, 1020);
  EXPECT_EQ(s.window_at(1019).open_ns, 1000);  // still inside
  EXPECT_EQ(s.window_at(1020).open_ns, 1100);  // closed: the next one
  EXPECT_EQ(s.window_at(1099).close_ns, 1120);
  TraceSchedule always;
  EXPECT_EQ(always.window_at(5).open_ns, 5);
}

TEST(TraceSink, DutyCycleOpensAndClosesWindowsAndMarksEach) {
  TempDir dir;
  TraceSinkOptions o;
  o.file_path = (dir.path / "events.ndjson").string();
  o.converter = {"run-d", "78"};
  o.schedule = {20'000'000, 60'000'000};  // 20 ms of every 60 ms
  std::mutex mu;
  std::vector<std::pair<bool, TimestampNs>> changes;
  o.on_window = [&](bool open) {
    std::lock_guard lock(mu);
    changes.emplace_back(open, now_ns());
  };
  auto sink = TraceSink::open(o);
  ASSERT_TRUE(sink.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  (*sink)->close();
  std::lock_guard lock(mu);
  ASSERT_GE(changes.size(), 8u);  // ~6 windows in 400 ms, each opened and closed
  for (std::size_t i = 1; i < changes.size(); ++i) EXPECT_NE(changes[i].first, changes[i - 1].first);
  // Each change after the first comes at its time on the wall-clock schedule, a little late
  // (the first may open a window already under way). A loaded machine wakes a thread late now
  // and then, so the typical change is judged: the median lateness, not the worst.
  std::vector<TimestampNs> late;
  for (std::size_t i = 1; i < changes.size(); ++i) {
    const auto [open, at] = changes[i];
    const TimestampNs due = open ? 0 : 20'000'000;
    late.push_back((at % 60'000'000 - due + 60'000'000) % 60'000'000);
  }
  std::nth_element(late.begin(), late.begin() + late.size() / 2, late.end());
  EXPECT_LT(late[late.size() / 2], 10'000'000) << "median lateness of a window's change, ns";
  // Every window opened is in the data: a `trace_window_seconds` sample at its opening.
  std::size_t marks = 0, opened = 0;
  for (const auto& [open, at] : changes) opened += open;
  for (const Event& e : read_events(o.file_path)) {
    const auto* s = std::get_if<SampleEvent>(&e);
    if (!s || s->metric != "trace_window_seconds") continue;
    ++marks;
    EXPECT_GT(s->value, 0);
    EXPECT_LE(s->value, 0.020);
    EXPECT_EQ(tag(s->labels, "run"), "run-d");
  }
  EXPECT_EQ(marks, opened);
  EXPECT_EQ((*sink)->stats().windows, opened);
}

TEST(TraceSink, ARankOfAMultiProcessJobComesFromItsLauncher) {
  auto from = [](std::map<std::string, std::string> env) {
    return distributed_rank_from_environment([env = std::move(env)](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  DistributedRank torchrun = from({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}});
  EXPECT_EQ(torchrun.rank, "3");
  EXPECT_EQ(torchrun.local_rank, "1");
  EXPECT_EQ(torchrun.world_size, "8");
  DistributedRank mpi = from({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "6"},
                              {"SLURM_PROCID", "0"}});
  EXPECT_EQ(mpi.rank, "5") << "the first launcher whose rank is set wins";
  EXPECT_EQ(mpi.world_size, "6");
  DistributedRank slurm = from({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}, {"RANK", "two"}});
  EXPECT_EQ(slurm.rank, "2") << "a rank that is no number is no rank";
  EXPECT_EQ(slurm.local_rank, "");
  EXPECT_EQ(from({}).rank, "");

  TraceConverter c({.run = "job", .pid = "77", .rank = "1", .local_rank = "1", .world_size = "2"});
  std::vector<Event> out;
  c.add(kernel(1, 5000), out);
  c.finish(out);
  ASSERT_EQ(out.size(), 1u);
  const auto& k = std::get<KernelEvent>(out[0]);
  EXPECT_EQ(tag(k.tags, "rank"), "1");
  EXPECT_EQ(tag(k.tags, "local_rank"), "1");
  EXPECT_EQ(tag(k.tags, "world_size"), "2");
  EXPECT_TRUE(std::is_sorted(k.tags.begin(), k.tags.end()));
  ASSERT_TRUE(validate(out[0]).ok());
}

TEST(TraceSink, EnvironmentNamesTheOutputAndKinds) {
  ::unsetenv(kSocketVariable);
  ::unsetenv(kFileVariable);
  auto none = sink_options_from_environment();
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("perfscope run"), std::string::npos);
  ::setenv(kFileVariable, "/tmp/x.ndjson", 1);
  ::setenv(kKindsVariable, "kernel,bogus", 1);
  EXPECT_EQ(sink_options_from_environment().status().field(), "kinds");
  ::setenv(kKindsVariable, "kernel", 1);
  ::setenv(kRunVariable, "nightly", 1);
  auto o = sink_options_from_environment();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->file_path, "/tmp/x.ndjson");
  EXPECT_FALSE(o->kinds.memcpy);
  EXPECT_EQ(o->converter.run, "nightly");
  EXPECT_EQ(o->converter.pid, std::to_string(::getpid()));
  EXPECT_FALSE(o->schedule.duty_cycled());
  ::setenv(kWindowVariable, "100000000", 1);
  ::setenv(kEveryVariable, "2000000000", 1);
  o = sink_options_from_environment();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->schedule.window_ns, 100'000'000);
  EXPECT_EQ(o->schedule.every_ns, 2'000'000'000);
  ::setenv(kEveryVariable, "1", 1);
  EXPECT_EQ(sink_options_from_environment().status().field(), "trace_every");
  for (const char* v : {kFileVariable, kKindsVariable, kRunVariable, kWindowVariable, kEveryVariable}) ::unsetenv(v);
}

}  // namespace
}  // namespace perfscope::trace
