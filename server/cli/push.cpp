#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <new>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "server/client/client.hpp"
#include "server/cli/tools.hpp"
#include "server/cli/trace_import.hpp"
#include "server/http/compression.hpp"

namespace perfscope::server {

namespace {

// A compressed file is inflated in memory, and a trace document is parsed whole (about ten
// bytes of memory per byte of JSON): past this, import refuses the file and says so rather than
// die of an allocation half-way (a 4 MB gzip expanding to 4 GB did).
constexpr std::size_t kMaxImportBytes = std::size_t{1} << 30;

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
  std::ifstream file(import.path, std::ios::binary);
  if (!file) {
    std::cerr << "perfscope import: cannot open " << import.path << "\n";
    return 2;
  }
  // A gzip file (`export_chrome_trace("trace.json.gz")`, a compressed NDJSON) is read whole.
  std::istringstream unzipped;
  std::istream* in = &file;
  if (file.get() == 0x1f && file.get() == 0x8b) {
    file.seekg(0);
    const std::string compressed{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    std::string text;
    if (const auto error = gzip_decompress(compressed, kMaxImportBytes, text); error != InflateError::kNone) {
      std::cerr << "perfscope import: " << import.path << ": "
                << (error == InflateError::kTooLarge ? "larger than 1 GiB uncompressed" : "not a valid gzip file")
                << " (nothing imported)\n";
      return 2;
    }
    unzipped.str(std::move(text));
    in = &unzipped;
  } else {
    file.clear();
    file.seekg(0);
  }
  // Events are objects, one per line, so NDJSON streams line by line, however large (what
  // `perfscope run` wrote offline); a trace is one JSON document: an array (ONNX Runtime), or an
  // object spanning lines or holding traceEvents (the PyTorch profiler).
  *in >> std::ws;
  bool document = in->peek() == '[';
  const auto start = in->tellg();
  if (in->peek() == '{') {
    std::string first_line;
    std::getline(*in, first_line);
    const auto first = nlohmann::json::parse(first_line, nullptr, /*allow_exceptions=*/false);
    // A line that is not a whole object is the start of a document spanning lines.
    document = first.is_discarded() || (first.is_object() && first.contains("traceEvents"));
    in->clear();
    in->seekg(start);
  }
  if (!document) return push_lines(*in, options, "perfscope import");
  std::error_code size_error;
  if (in == &file && std::filesystem::file_size(import.path, size_error) > kMaxImportBytes && !size_error) {
    std::cerr << "perfscope import: " << import.path << ": a trace document larger than 1 GiB is not parsed whole "
              << "(nothing imported); split it, or export NDJSON events, which stream\n";
    return 2;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*in);
  } catch (const std::bad_alloc&) {
    std::cerr << "perfscope import: " << import.path << ": not enough memory to parse the document (nothing imported)\n";
    return 2;
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte: where the document broke (a trace cut short while being written, say).
    std::cerr << "perfscope import: " << import.path << ": not valid JSON at byte " << e.byte << " (nothing imported)\n";
    return 2;
  }
  namespace fs = std::filesystem;
  TraceImportContext context;
  context.run = import.run.empty() ? fs::path(import.path).stem().string() : import.run;
  context.model = import.model.empty() ? context.run : import.model;
  // Times that do not come on the wall clock (ONNX Runtime's count from its session's start)
  // end when the file was written.
  struct stat st {};
  context.end_ns = ::stat(import.path.c_str(), &st) == 0
                       ? static_cast<TimestampNs>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec
                       : now_ns();
  auto converted = import_trace(doc, context);
  if (!converted.ok()) {
    std::cerr << "perfscope import: " << import.path << ": " << converted.status().message() << " (nothing imported)\n";
    return 2;
  }
  std::string ndjson;
  for (const auto& e : converted->events) ndjson += e.dump() + "\n";
  std::istringstream lines(ndjson);
  if (converted->format == "onnxruntime") {
    std::cout << "perfscope import: an ONNX Runtime profile as run " << context.run << " of model " << context.model << ": "
              << converted->operators << " operator executions, " << converted->inferences << " model runs\n";
  } else {
    std::cout << "perfscope import: a PyTorch profiler trace as run " << context.run << ": " << converted->kernels
              << " kernels, " << converted->copies << " copies and memsets (" << converted->with_launch
              << " with their launch call, " << converted->with_work << " with their op's FLOPs), " << converted->operators
              << " top-level operators\n";
  }
  return push_lines(lines, options, "perfscope import");
}

}  // namespace perfscope::server
