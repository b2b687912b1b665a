#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "server/client/client.hpp"
#include "server/cli/tools.hpp"
#include "server/cli/trace_import.hpp"

namespace perfscope::server {

namespace {

// NDJSON lines from `in` to the server in batches; `what` prefixes messages.
int push_lines(std::istream& in, const PushOptions& options, const std::string& what) {
  auto hp = parse_http_url(options.server);
  if (!hp.ok()) {
    std::cerr << what << ": " << hp.status().message() << "\n";
    return 2;
  }
  HttpPoster poster(*hp, std::chrono::seconds(30));
  poster.set_token(options.token);
  std::uint64_t accepted = 0, line_no = 0, batch_start = 1;
  std::string batch, line;
  std::size_t lines = 0;
  auto send = [&]() -> bool {
    if (lines == 0) return true;
    auto res = poster.post("/api/v1/events", "application/x-ndjson", batch);
    if (!res.ok()) {
      std::cerr << what << ": " << res.status().message() << "\n";
      return false;
    }
    if (res->status != 200) {
      // The server names the event at fault by its index within this batch.
      auto body = nlohmann::json::parse(res->body, nullptr, false);
      std::cerr << what << ": the server refused lines " << batch_start << "-" << line_no << " (HTTP "
                << res->status << "): " << res->body << "\n";
      if (body.is_object() && body.contains("error") && body["error"].value("index", nlohmann::json()).is_number()) {
        std::cerr << what << ": first bad event is input line ~"
                  << batch_start + body["error"]["index"].get<std::uint64_t>() << " (blank lines not counted)\n";
      }
      return false;
    }
    accepted += nlohmann::json::parse(res->body, nullptr, false).value("accepted", 0ull);
    batch.clear();
    lines = 0;
    batch_start = line_no + 1;
    return true;
  };
  while (std::getline(in, line)) {
    ++line_no;
    batch += line;
    batch += '\n';
    if (++lines >= options.batch_lines && !send()) return 1;
  }
  if (!send()) return 1;
  std::cout << "accepted " << accepted << " events\n";
  return 0;
}

}  // namespace

int run_push(const PushOptions& options) { return push_lines(std::cin, options, "perfscope push"); }

int run_import(const PushOptions& options, const ImportOptions& import) {
  std::ifstream in(import.path, std::ios::binary);
  if (!in) {
    std::cerr << "perfscope import: cannot open " << import.path << "\n";
    return 2;
  }
  // Events are objects, so NDJSON starts with '{' and streams line by line, however large (what
  // `perfscope run` wrote offline); a trace is one JSON array.
  in >> std::ws;
  if (in.peek() != '[') return push_lines(in, options, "perfscope import");
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || detect_trace_format(doc).empty()) {
    std::cerr << "perfscope import: " << import.path
              << ": a JSON array, but not a trace perfscope reads (an ONNX Runtime profile); nothing imported\n";
    return 2;
  }
  namespace fs = std::filesystem;
  const std::string run = import.run.empty() ? fs::path(import.path).stem().string() : import.run;
  const std::string model = import.model.empty() ? run : import.model;
  // The profile's times count from its session's start; its end is when the file was written.
  struct stat st {};
  const TimestampNs end_ns = ::stat(import.path.c_str(), &st) == 0
                                 ? static_cast<TimestampNs>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec
                                 : now_ns();
  auto converted = import_onnxruntime_profile(doc, run, model, end_ns);
  if (!converted.ok()) {
    std::cerr << "perfscope import: " << import.path << ": " << converted.status().message() << " (nothing imported)\n";
    return 2;
  }
  std::string ndjson;
  for (const auto& e : converted->events) ndjson += e.dump() + "\n";
  std::istringstream lines(ndjson);
  std::cout << "perfscope import: an ONNX Runtime profile as run " << run << " of model " << model << ": "
            << converted->operators << " operator executions, " << converted->inferences << " model runs\n";
  return push_lines(lines, options, "perfscope import");
}

}  // namespace perfscope::server
