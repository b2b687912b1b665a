// A stand-in for a traced CUDA program where no GPU exists (CI): it replays activity records
// recorded on a real GPU through the injection library's own sink, configured from the same
// environment `perfscope run` gives the program, in buffer-sized pushes as CUPTI's thread does.
// --rebase 1 moves every timestamp so the first record falls at the moment of the replay and
// paces the records as they were recorded (each pushed once its time has come), as when the
// same program runs again later.
// A duty cycle (PERFSCOPE_TRACE_WINDOW_NS/EVERY_NS) is followed as the library follows it: the
// sink's thread opens and closes the windows, and a record whose time comes while none is
// open is not recorded, as CUPTI records nothing with its kinds disabled.
// --repeat N replays the recording N times back to back (a program that loops), each copy
// shifted past the one before and with correlation ids of its own.
// --slow NAME=FACTOR stretches the kernels whose (mangled) name contains NAME by FACTOR: the
// same program with one kernel made slower, for run comparisons.
// Usage: trace_replay RECORDS.ndjson [--expect-injection PATH] [--per-push N] [--rebase 1]
//                     [--slow NAME=FACTOR] [--repeat N]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/trace/trace_sink.hpp"

namespace {

using namespace perfscope::trace;

// Where a record keeps its times.
std::vector<std::uint64_t*> times(TraceRecord& r) {
  return std::visit(
      [](auto& x) -> std::vector<std::uint64_t*> {
        if constexpr (requires { x.ts_ns; }) {
          return {&x.ts_ns};
        } else if constexpr (std::is_same_v<std::decay_t<decltype(x)>, CommunicatorRecord>) {
          return {};
        } else {
          return {&x.start_ns, &x.end_ns};
        }
      },
      r);
}

// The recording `repeat` times back to back, each copy shifted past the one before and with
// correlation ids of its own.
void repeat_records(std::vector<TraceRecord>& records, std::size_t repeat) {
  std::uint64_t first = UINT64_MAX, last = 0;
  std::uint32_t max_correlation = 0;
  for (auto& r : records) {
    for (auto* t : times(r)) {
      first = std::min(first, *t);
      last = std::max(last, *t);
    }
    std::visit([&](auto& x) {
      if constexpr (requires { x.correlation_id; }) max_correlation = std::max(max_correlation, x.correlation_id);
    }, r);
  }
  const std::size_t one = records.size();
  for (std::size_t copy = 1; copy < repeat; ++copy) {
    for (std::size_t i = 0; i < one; ++i) {
      TraceRecord r = records[i];
      for (auto* t : times(r)) *t += copy * (last - first + 1'000'000);
      std::visit([&](auto& x) {
        if constexpr (requires { x.correlation_id; }) {
          if (x.correlation_id) x.correlation_id += static_cast<std::uint32_t>(copy) * (max_correlation + 1);
        }
      }, r);
      records.push_back(std::move(r));
    }
  }
}

// Every timestamp moved so that the first record falls now.
void rebase_records(std::vector<TraceRecord>& records) {
  std::uint64_t first = UINT64_MAX;
  for (auto& r : records) {
    for (auto* t : times(r)) first = std::min(first, *t);
  }
  const auto now = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  for (auto& r : records) {
    for (auto* t : times(r)) *t = *t - first + now;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: trace_replay RECORDS.ndjson [--expect-injection PATH] [--per-push N]\n";
    return 2;
  }
  std::size_t per_push = 64;
  std::size_t repeat = 1;
  bool rebase = false;
  std::string slow_name;
  double slow_factor = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--expect-injection") == 0) {
      const char* got = std::getenv("CUDA_INJECTION64_PATH");
      if (!got || std::string(got) != argv[i + 1]) {
        std::cerr << "CUDA_INJECTION64_PATH is " << (got ? got : "(unset)") << ", expected " << argv[i + 1] << "\n";
        return 3;
      }
    } else if (std::strcmp(argv[i], "--per-push") == 0) {
      per_push = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (std::strcmp(argv[i], "--repeat") == 0) {
      repeat = std::max<std::size_t>(1, std::strtoul(argv[i + 1], nullptr, 10));
    } else if (std::strcmp(argv[i], "--rebase") == 0) {
      rebase = std::strcmp(argv[i + 1], "0") != 0;
    } else if (std::strcmp(argv[i], "--slow") == 0) {
      std::string spec = argv[i + 1];
      slow_name = spec.substr(0, spec.find('='));
      slow_factor = spec.find('=') == std::string::npos ? 1 : std::strtod(spec.c_str() + spec.find('=') + 1, nullptr);
    }
  }
  auto options = sink_options_from_environment();
  if (!options.ok()) {
    std::cerr << options.status().message() << "\n";
    return 4;
  }
  std::atomic<bool> recording = !options->schedule.duty_cycled();
  options->on_window = [&recording](bool open) { recording = open; };
  auto sink = TraceSink::open(std::move(*options));
  if (!sink.ok()) {
    std::cerr << sink.status().message() << "\n";
    return 5;
  }
  std::ifstream in(argv[1]);
  std::vector<TraceRecord> records;
  for (std::string line; std::getline(in, line);) {
    auto record = record_from_json(nlohmann::json::parse(line));
    if (!record.ok()) {
      std::cerr << record.status().message() << "\n";
      return 6;
    }
    records.push_back(std::move(*record));
  }
  if (!slow_name.empty()) {
    for (auto& r : records) {
      if (auto* k = std::get_if<KernelRecord>(&r); k && k->name.str().find(slow_name) != std::string::npos) {
        k->end_ns = k->start_ns + static_cast<std::uint64_t>(static_cast<double>(k->end_ns - k->start_ns) * slow_factor);
      }
    }
  }
  if (repeat > 1) repeat_records(records, repeat);
  if (rebase) rebase_records(records);
  std::vector<TraceRecord> buffer;
  for (auto& record : records) {
    if (rebase) {
      std::uint64_t at = 0;
      for (auto* t : times(record)) at = std::max(at, *t);
      std::this_thread::sleep_until(std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(at))));
    }
    if (!recording) continue;
    buffer.push_back(std::move(record));
    if (buffer.size() >= per_push) (*sink)->push(std::exchange(buffer, {}));
  }
  (*sink)->push(std::move(buffer));
  (*sink)->close();
  return 0;
}
