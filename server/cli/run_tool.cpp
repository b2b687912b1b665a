// `perfscope run -- command args…`: starts the command with the CUPTI injection library set up
// (CUDA_INJECTION64_PATH) and a unix socket to report to, reads the NDJSON events every traced
// process writes there, and forwards them to the server in batches — or, when no server
// answers (or it goes away), appends them to a file for `perfscope import`. One process, one
// thread: poll() over the socket's connections, waitpid() for the command.
//
// `perfscope relay --socket PATH`: the same socket and forwarding without a command, until
// stopped — for programs started elsewhere with the library and the socket in their
// environment (a sidecar beside a Kubernetes workload, which then needs no perfscope binary).
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/base/clock.hpp"
#include "server/service/query_time.hpp"
#include "server/cli/tools.hpp"
#include "server/cli/trace_forwarder.hpp"
#include "server/client/client.hpp"
#include "server/trace/cupti_library.hpp"
#include "server/trace/trace_sink.hpp"
#include "server/wire/event_codec.hpp"

extern char** environ;

namespace perfscope::server {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr const char* kWhat = "perfscope run";
constexpr const char* kRelay = "perfscope relay";
// After the command exits, how long descendants that still hold a connection may keep sending.
constexpr auto kDescendantGrace = std::chrono::seconds(10);

std::string find_library(const std::string& configured) {
  if (!configured.empty()) return fs::exists(configured) ? configured : "";
  if (const char* env = std::getenv("PERFSCOPE_CUPTI_LIBRARY"); env && *env) return fs::exists(env) ? env : "";
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (fs::path candidate : {exe.parent_path() / "libperfscope_cupti.so", exe.parent_path() / "../lib/libperfscope_cupti.so"}) {
    if (fs::exists(candidate)) return fs::absolute(candidate).lexically_normal().string();
  }
  return "";
}

std::string default_name(const std::string& command) {
  char stamp[32];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return fs::path(command).filename().string() + "-" + stamp;
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

// A run's report as one NDJSON line, forwarded with the trace (so an import registers it too).
std::string run_line(const RunEvent& run) { return encode_event(run).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// A listening unix socket: in a private temporary directory (`perfscope run`), or at a given
// path that any user may connect to (a relay's, in a volume its pod shares); removed on
// destruction.
class TraceSocket {
 public:
  explicit TraceSocket(std::string at = {}) {
    if (at.empty()) {
      std::string dir_template = (fs::temp_directory_path() / "perfscope-run-XXXXXX").string();
      if (!::mkdtemp(dir_template.data())) return;
      dir_ = dir_template;
      path_ = dir_ + "/trace.sock";
    } else {
      path_ = std::move(at);
      // A socket left by a relay that was killed is replaced; anything else at the path is not ours.
      struct stat st{};
      if (::lstat(path_.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
          errno = EEXIST;
          return;
        }
        ::unlink(path_.c_str());
      }
    }
    sockaddr_un addr{};
    if (path_.size() >= sizeof addr.sun_path) {
      errno = ENAMETOOLONG;
      return;
    }
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      const int err = errno;
      ::close(fd_);
      fd_ = -1;
      errno = err;
      return;
    }
    bound_ = fd_ >= 0;
    if (fd_ >= 0 && ::listen(fd_, 128) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    // A workload beside a relay may run as another user: connecting needs write permission.
    if (fd_ >= 0 && dir_.empty()) ::chmod(path_.c_str(), 0777);
  }
  ~TraceSocket() {
    if (fd_ >= 0) ::close(fd_);
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
    else if (bound_) fs::remove(path_, ec);  // only the socket this one made
  }
  TraceSocket(const TraceSocket&) = delete;
  TraceSocket& operator=(const TraceSocket&) = delete;
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  int fd_ = -1;
  bool bound_ = false;
};

// The current environment with `extra` set (replacing variables of the same names).
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const auto& [k, v] : extra) replaced |= entry.substr(0, k.size() + 1) == k + "=";
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

struct Connection {
  int fd;
  std::string pending;      // a line not yet complete
  bool discarding = false;  // inside a line too long to keep, until its end
};
constexpr std::size_t kMaxLine = 4 << 20;

// The traced processes' connections to a trace socket, read line by line into a forwarder.
class TracePump {
 public:
  explicit TracePump(const TraceSocket& socket) : socket_(socket) {}
  ~TracePump() {
    for (auto& c : connections_) ::close(c.fd);
  }
  TracePump(const TracePump&) = delete;
  TracePump& operator=(const TracePump&) = delete;

  // Waits up to `timeout_ms` for something to read, takes new connections and what every one
  // sent, and flushes the forwarder when a batch is due.
  void pass(int timeout_ms, Forwarder& forwarder) {
    std::vector<pollfd> fds{{socket_.fd(), POLLIN, 0}};
    for (const auto& c : connections_) fds.push_back({c.fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), timeout_ms);
    for (int fd; (fd = ::accept4(socket_.fd(), nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
      connections_.push_back({fd, {}, false});
      ++processes_;
    }
    for (std::size_t i = 0; i < connections_.size();) {
      Connection& c = connections_[i];
      ssize_t n = ::recv(c.fd, buffer_, sizeof buffer_, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        ++i;
        continue;
      }
      if (n <= 0) {  // the process closed its end (it exited, or its sink closed)
        ::close(c.fd);
        connections_.erase(connections_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      // Only the new bytes are searched for line ends; a line longer than kMaxLine is dropped
      // whole (no event is that long), up to its end.
      std::size_t from = c.pending.size(), start = 0;
      c.pending.append(buffer_, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = c.pending.find('\n', from)) != std::string::npos; start = from = nl + 1) {
        if (!c.discarding) forwarder.add_line(std::string_view(c.pending).substr(start, nl - start));
        c.discarding = false;
      }
      c.pending.erase(0, start);
      if (c.pending.size() > kMaxLine) {
        if (!c.discarding) ++lines_dropped_;
        c.discarding = true;
        c.pending.clear();
      }
      ++i;
    }
    if (forwarder.due()) forwarder.flush();
  }
  std::size_t open() const { return connections_.size(); }
  std::size_t lines_dropped() const { return lines_dropped_; }
  std::size_t processes() const { return processes_; }

 private:
  const TraceSocket& socket_;
  std::vector<Connection> connections_;
  std::size_t processes_ = 0;  // connections ever taken: one per traced process
  std::size_t lines_dropped_ = 0;
  char buffer_[1 << 16];
};

// The command started with `variables` added to its environment; 0 when it could not start
// (said on stderr).
pid_t spawn_traced(const std::vector<std::string>& command,
                   const std::vector<std::pair<std::string, std::string>>& variables) {
  std::vector<std::string> env = child_environment(variables);
  std::vector<char*> envp, argv;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  if (int err = ::posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), envp.data()); err != 0) {
    std::cerr << kWhat << ": cannot start " << command.front() << ": " << std::strerror(err) << "\n";
    return 0;
  }
  return child;
}

// Forwards what the traced processes send until the command has ended and no traced process
// holds a connection (or the descendants' grace has passed); SIGTERM to the command when
// `stop` is set. The command's wait status.
int pump_until_done(pid_t child, TracePump& pump, Forwarder& forwarder, const std::atomic<bool>& stop) {
  int status = 0;
  std::optional<Clock::time_point> child_ended;
  bool signalled = false;
  for (;;) {
    if (!child_ended && ::waitpid(child, &status, WNOHANG) == child) child_ended = Clock::now();
    if (stop && !signalled && !child_ended) {
      ::kill(child, SIGTERM);
      signalled = true;
    }
    // Once the command has ended: one last look for connections, then stop when none is open.
    pump.pass(!child_ended ? 100 : pump.open() == 0 ? 0 : 50, forwarder);
    if (child_ended && pump.open() == 0) break;
    if (child_ended && Clock::now() - *child_ended > kDescendantGrace) {
      std::cerr << kWhat << ": " << pump.open()
                << " traced process(es) still running after the command ended; not waiting for them\n";
      break;
    }
  }
  return status;
}

}  // namespace

int run_traced(const RunOptions& options, const std::atomic<bool>& stop) {
  if (options.command.empty()) {
    std::cerr << kWhat << ": no command given (perfscope run [options] -- command args…)\n";
    return 2;
  }
  auto kinds = trace::parse_trace_kinds(options.kinds);
  if (!kinds.ok()) {
    std::cerr << kWhat << ": --kinds: " << kinds.status().message() << "\n";
    return 2;
  }
  // --trace-window and --trace-every as nanoseconds (0: not given).
  auto duration = [](const std::string& text, const char* option, const char* field) -> Result<std::int64_t> {
    if (text.empty()) return std::int64_t{0};
    auto ns = parse_duration_ns(text, field);
    if (!ns.ok()) return Status::invalid_argument(std::string(option) + ": " + ns.status().message(), field);
    return ns;
  };
  auto window = duration(options.trace_window, "--trace-window", "trace_window");
  auto every = duration(options.trace_every, "--trace-every", "trace_every");
  for (const auto* d : {&window, &every}) {
    if (!d->ok()) {
      std::cerr << kWhat << ": " << d->status().message() << "\n";
      return 2;
    }
  }
  auto schedule = trace::make_trace_schedule(options.duty_cycle, *window, *every);
  if (!schedule.ok()) {
    std::cerr << kWhat << ": " << schedule.status().message() << "\n";
    return 2;
  }
  const std::string library = find_library(options.library);
  if (library.empty()) {
    std::cerr << kWhat << ": the CUPTI injection library (libperfscope_cupti.so) was not found"
              << (options.library.empty() ? " beside the perfscope executable or in PERFSCOPE_CUPTI_LIBRARY"
                                          : " at " + options.library)
              << "; it is built with perfscope (cmake --build, target perfscope_cupti)\n";
    return 2;
  }
  std::string cupti;
  if (!options.cupti.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(options.cupti, ec)) {
      std::cerr << kWhat << ": --cupti: no library at " << options.cupti << "\n";
      return 2;
    }
    cupti = fs::absolute(options.cupti).lexically_normal().string();
  }
  const std::string name = options.name.empty() ? default_name(options.command.front()) : options.name;
  const std::string fallback = options.output.empty() ? "perfscope-run-" + name + ".ndjson" : options.output;
  Forwarder forwarder(kWhat, options.server, options.token, fallback);
  if (!forwarder.to_server()) {
    std::cerr << kWhat << ": no server at " << options.server << " (" << forwarder.reason() << "); events go to "
              << fallback << " until one answers\n";
  }
  TraceSocket socket;
  if (socket.fd() < 0) {
    std::cerr << kWhat << ": cannot create the trace socket: " << std::strerror(errno) << "\n";
    return 1;
  }

  std::vector<std::pair<std::string, std::string>> variables{{"CUDA_INJECTION64_PATH", library},
                                                             {trace::kSocketVariable, socket.path()},
                                                             {trace::kKindsVariable, trace::format_trace_kinds(*kinds)},
                                                             {trace::kRunVariable, name}};
  if (!cupti.empty()) variables.emplace_back(trace::kCuptiPathVariable, cupti);
  // NCCL's profiler plugin is the same library: collectives get their communicator, bytes and
  // algorithm. A plugin of the user's own is left in place (NCCL loads one only).
  if (const char* own = std::getenv("NCCL_PROFILER_PLUGIN"); own && *own) {
    std::cerr << kWhat << ": NCCL_PROFILER_PLUGIN is set (" << own
              << "): collectives are known by their kernels' names only\n";
  } else {
    variables.emplace_back("NCCL_PROFILER_PLUGIN", library);
  }
  if (schedule->duty_cycled()) {
    variables.emplace_back(trace::kWindowVariable, std::to_string(schedule->window_ns));
    variables.emplace_back(trace::kEveryVariable, std::to_string(schedule->every_ns));
  }
  const pid_t child = spawn_traced(options.command, variables);
  if (child == 0) return 127;

  // Registered at once, so the run is listed while it goes on; reported again when it ends.
  RunEvent run;
  run.name = name;
  run.command = options.command;
  run.host = host_name();
  run.pids = {static_cast<std::int64_t>(child)};
  run.start_ns = now_ns();
  run.kinds = trace::format_trace_kinds(*kinds);
  if (schedule->duty_cycled()) {
    run.trace_window_ns = schedule->window_ns;
    run.trace_every_ns = schedule->every_ns;
  }
  forwarder.add_line(run_line(run));
  forwarder.flush();

  TracePump pump(socket);
  const int status = pump_until_done(child, pump, forwarder, stop);
  run.end_ns = now_ns();
  run.exit_status = exit_code(status);
  forwarder.complete(run);
  forwarder.add_line(run_line(run));
  forwarder.flush();
  forwarder.print_summary(name, options.server, pump.processes());
  return *run.exit_status;
}

namespace {
// Copies the library into `dir`, readable and loadable by any user, beside and then renamed
// over: a program that has an older copy mapped (the relay restarted) keeps it whole. The
// reason it could not, or empty.
std::string install_library(const std::string& library, const std::string& dir) {
  const fs::path to = fs::path(dir) / "libperfscope_cupti.so", part = fs::path(dir) / ".libperfscope_cupti.so.part";
  std::error_code ec;
  if (fs::copy_file(library, part, fs::copy_options::overwrite_existing, ec)) {
    fs::permissions(part, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec, ec);
    if (!ec) fs::rename(part, to, ec);
  }
  if (!ec) return {};
  std::error_code ignored;
  fs::remove(part, ignored);
  return ec.message();
}
}  // namespace

int run_relay(const RelayOptions& options, const std::atomic<bool>& stop) {
  if (!options.library_into.empty()) {
    const std::string library = find_library(options.library);
    const std::string why = library.empty() ? "libperfscope_cupti.so was not found beside perfscope"
                                             : install_library(library, options.library_into);
    if (!why.empty()) {
      std::cerr << kRelay << ": cannot copy the injection library into " << options.library_into << ": " << why << "\n";
      return 1;
    }
  }
  const std::string name = options.name.empty() ? default_name(host_name()) : options.name;
  // Beside the socket by default: the volume the pod shares is writable where the root may not be.
  const std::string fallback = !options.output.empty() ? options.output
                               : (fs::path(options.socket).parent_path() / ("perfscope-run-" + name + ".ndjson")).string();
  Forwarder forwarder(kRelay, options.server, options.token, fallback);
  if (!forwarder.to_server()) {
    std::cerr << kRelay << ": no server at " << options.server << " (" << forwarder.reason() << "); events go to "
              << fallback << " until one answers\n";
  }
  TraceSocket socket(options.socket);
  if (socket.fd() < 0) {
    std::cerr << kRelay << ": cannot listen on " << options.socket << ": "
              << (errno == EEXIST ? "something that is not a socket is there" : std::strerror(errno)) << "\n";
    return 1;
  }
  std::cerr << kRelay << ": run " << name << ": traced programs report to " << options.socket << "\n";
  // The run: registered at once, its processes the ones that report, ended when the relay is.
  RunEvent run;
  run.name = name;
  run.command = {"perfscope", "relay", "--socket", options.socket};
  run.host = host_name();
  run.start_ns = now_ns();
  forwarder.add_line(run_line(run));
  forwarder.flush();
  TracePump pump(socket);
  while (!stop) pump.pass(100, forwarder);
  // Stopped: what the processes still connected send within the grace period.
  for (const auto until = Clock::now() + kDescendantGrace; pump.open() > 0 && Clock::now() < until;) pump.pass(50, forwarder);
  run.end_ns = now_ns();
  run.exit_status = 0;
  forwarder.complete(run);
  forwarder.add_line(run_line(run));
  forwarder.flush();
  forwarder.print_summary(name, options.server, pump.processes());
  if (pump.lines_dropped() > 0) {
    std::cerr << kRelay << ": " << pump.lines_dropped() << " lines longer than " << (kMaxLine >> 20) << " MiB dropped\n";
  }
  return 0;
}

}  // namespace perfscope::server
