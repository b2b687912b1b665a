// A stand-in for a traced CUDA program where no GPU exists (CI): it replays activity records
// recorded on a real GPU through the injection library's own sink, configured from the same
// environment `perfscope run` gives the program, in buffer-sized pushes as CUPTI's thread does.
// Usage: trace_replay RECORDS.ndjson [--expect-injection PATH] [--per-push N]
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "server/trace/trace_sink.hpp"

int main(int argc, char** argv) {
  using namespace perfscope::trace;
  if (argc < 2) {
    std::cerr << "usage: trace_replay RECORDS.ndjson [--expect-injection PATH] [--per-push N]\n";
    return 2;
  }
  std::size_t per_push = 64;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--expect-injection") == 0) {
      const char* got = std::getenv("CUDA_INJECTION64_PATH");
      if (!got || std::string(got) != argv[i + 1]) {
        std::cerr << "CUDA_INJECTION64_PATH is " << (got ? got : "(unset)") << ", expected " << argv[i + 1] << "\n";
        return 3;
      }
    } else if (std::strcmp(argv[i], "--per-push") == 0) {
      per_push = std::strtoul(argv[i + 1], nullptr, 10);
    }
  }
  auto options = sink_options_from_environment();
  if (!options.ok()) {
    std::cerr << options.status().message() << "\n";
    return 4;
  }
  auto sink = TraceSink::open(std::move(*options));
  if (!sink.ok()) {
    std::cerr << sink.status().message() << "\n";
    return 5;
  }
  std::ifstream in(argv[1]);
  std::vector<TraceRecord> buffer;
  for (std::string line; std::getline(in, line);) {
    auto record = record_from_json(nlohmann::json::parse(line));
    if (!record.ok()) {
      std::cerr << record.status().message() << "\n";
      return 6;
    }
    buffer.push_back(std::move(*record));
    if (buffer.size() >= per_push) (*sink)->push(std::exchange(buffer, {}));
  }
  (*sink)->push(std::move(buffer));
  (*sink)->close();
  return 0;
}
