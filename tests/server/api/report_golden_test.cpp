// Golden files for the text reports: a fixed dataset is written to a database file with the
// real writer, `perfscope report --db` (run_report) reads it back, and Markdown, terminal
// and CSV output must match tests/fixtures/reports/ byte for byte. The host name, version
// and generation time are the only fields replaced before rendering.
//
// To accept a deliberate change: PERFSCOPE_UPDATE_GOLDEN=1 ctest -R ReportGolden, then review
// the diff of tests/fixtures/reports/.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "db/writer.hpp"
#include "server/http/compression.hpp"
#include "server/api/report_format.hpp"
#include "server/cli/tools.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::server {
namespace {

using nlohmann::json;
constexpr TimestampNs kT0 = 1'735'689'600'000'000'000;  // 2025-01-01 00:00:00 UTC
const std::string kGoldenDir = std::string(PERFSCOPE_FIXTURES) + "/reports/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = kGoldenDir + name;
  if (std::getenv("PERFSCOPE_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  EXPECT_EQ(actual, read_file(path)) << "golden file " << path << " differs (see the header of this test)";
}

class ReportGolden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new perfscope::testing::TempDir();
    SeriesStore store(1000);
    store.declare({"gpu_utilization_ratio", "ratio", MetricType::kGauge, ""});
    store.declare({"gpu_dram_bandwidth_bytes_per_second", "bytes_per_second", MetricType::kGauge, ""});
    store.declare({"host_cpu_utilization_ratio", "ratio", MetricType::kGauge, ""});
    store.declare({"gpu_energy_joules_total", "joules", MetricType::kCounter, ""});
    MemoryTracker memory;
    auto writer = db::Writer::open(db_path(), store, memory);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    const SeriesId util = store.intern(SeriesKey("gpu_utilization_ratio", {{"gpu", "0"}}));
    const SeriesId dram = store.intern(SeriesKey("gpu_dram_bandwidth_bytes_per_second", {{"gpu", "0"}}));
    const SeriesId cpu = store.intern(SeriesKey("host_cpu_utilization_ratio", {{"cpu", "total"}}));
    const SeriesId energy = store.intern(SeriesKey("gpu_energy_joules_total", {{"gpu", "0"}}));
    for (int i = 0; i < 10; ++i) {
      auto batch = std::make_shared<SampleBatch>();
      batch->ts_ns = kT0 + i * 1'000'000'000LL;
      batch->values = {{util, 0.5 + 0.05 * i}, {dram, 1.0e12 + 2.0e11 * i}, {cpu, 0.25}, {energy, 1000.0 + 50 * i}};
      (*writer)->enqueue(batch);
    }
    std::vector<Event> events;
    const struct { const char* name; const char* stream; TimestampNs dur; int n; } kernels[] = {
        {"gemm_kernel_fp32", "7", 8'320'000, 12}, {"reduce_sum, \"fast\"", "7", 2'150'000, 30}, {"conv2d_3x3", "8", 6'740'000, 9}};
    TimestampNs at = kT0;
    for (const auto& k : kernels) {
      for (int i = 0; i < k.n; ++i) {
        KernelEvent e;
        e.name = k.name;
        e.stream = k.stream;
        e.start_ns = at;
        e.end_ns = at + k.dur + i * 1000;
        e.grid = std::array<std::uint32_t, 3>{128, 1, 1};
        e.block = std::array<std::uint32_t, 3>{256, 1, 1};
        events.emplace_back(e);
        at = e.end_ns + 50'000;
      }
    }
    for (int i = 0; i < 40; ++i) {
      InferenceEvent r;
      r.model = "resnet50";
      r.version = "1";
      r.ts_ns = kT0 + i * 100'000'000LL;
      r.latency_ms = 10 + (i * 7) % 13;
      r.ok = i != 5;
      events.emplace_back(r);
    }
    // ONNX Runtime nodes of resnet50: Conv on the GPU provider, one that fell back to the CPU.
    for (int i = 0; i < 6; ++i) {
      OperatorEvent o;
      o.op_type = i < 5 ? "Conv" : "NonZero";
      o.name = i < 5 ? "conv" + std::to_string(i % 2) : "nonzero";
      o.provider = i < 5 ? "CUDAExecutionProvider" : "CPUExecutionProvider";
      o.duration_ms = 0.5 + 0.25 * i;
      o.model = "resnet50";
      o.input_shapes = {{1, 64, 56, 56}};
      o.ts_ns = kT0 + i * 100'000'000LL;
      events.emplace_back(o);
    }
    const std::pair<const char*, std::uint64_t> allocs[] = {{"0xa", 4 << 20}, {"0xb", 6 << 20}, {"0xc", 2 << 20}};
    TimestampNs mt = kT0;
    for (const auto& [addr, size] : allocs) {
      MemoryEvent m;
      m.address = addr;
      m.size_bytes = size;
      m.tag = "weights";
      m.ts_ns = mt += 1'000'000'000;
      events.emplace_back(m);
    }
    for (const char* addr : {"0xb", "0xa"}) {  // shrinking: no leak suspects
      MemoryEvent m;
      m.op = MemoryOp::kFree;
      m.address = addr;
      m.ts_ns = mt += 1'000'000'000;
      events.emplace_back(m);
    }
    Status committed;
    (*writer)->submit(std::move(events), [&](const Status& s) { committed = s; });
    (*writer)->flush();
    (*writer)->stop();
    ASSERT_TRUE(committed.ok()) << committed.message();
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string db_path() { return dir_->file("golden.db"); }

  // `perfscope report --db … --window all` into a file, read back.
  static std::string report(const std::string& format, const std::string& table = "kernels", const std::string& out = "out") {
    ReportOptions o;
    o.db = db_path();
    o.format = format;
    o.window = "all";
    o.table = table;
    o.sla_ms = 18;
    o.output = dir_->file(out);
    EXPECT_EQ(run_report(o), 0);
    return read_file(o.output);
  }
  static json stable_document() {
    json doc = json::parse(report("json"));
    doc["report"]["host"] = "golden-host";
    doc["report"]["version"] = "0.0.0";
    doc["generated_ns"] = kT0 + 3'600'000'000'000LL;
    return doc;
  }

  static perfscope::testing::TempDir* dir_;
};
perfscope::testing::TempDir* ReportGolden::dir_ = nullptr;

TEST_F(ReportGolden, Markdown) { expect_golden("report.md", render_markdown(stable_document())); }

TEST_F(ReportGolden, TerminalPlainAndColoured) {
  const json doc = stable_document();
  const std::string plain = render_terminal(doc, false);
  expect_golden("report.txt", plain);
  EXPECT_EQ(plain.find('\x1b'), std::string::npos) << "no escape codes when piped";
  const std::string coloured = render_terminal(doc, true);
  EXPECT_NE(coloured.find("\x1b[1;36m=== Performance Summary ===\x1b[0m"), std::string::npos);
}

TEST_F(ReportGolden, CsvTables) {
  for (const char* table : {"kernels", "inference", "memory", "samples"}) {
    expect_golden(std::string(table) + ".csv", report("csv", table));
  }
}

TEST_F(ReportGolden, GzippedCsvIsTheSameTable) {
  const std::string packed = report("csv", "inference", "inference.csv.gz");
  std::string plain;
  ASSERT_EQ(gzip_decompress(packed, 1 << 20, plain), InflateError::kNone);
  EXPECT_EQ(plain, report("csv", "inference"));
}

}  // namespace
}  // namespace perfscope::server
