// GET /api/v1/report?format=csv&table=samples|kernels|inference|memory|abtests: one table as
// RFC 4180 CSV (CRLF line ends, fields quoted when they hold a comma, quote or line break,
// quotes doubled), a header row whose column names carry their units, optionally gzipped
// (`compress=gzip`, a .csv.gz download). Rows stream from the database one at a time into a
// spooled body (server/http/spooled_body.hpp): a table of any size costs a block of memory.
#include <cmath>

#include "server/api/api.hpp"
#include "server/api/report_format.hpp"
#include "server/api/selector.hpp"
#include "server/api/api_helpers.hpp"
#include "server/http/compression.hpp"
#include "server/http/spooled_body.hpp"
#include "server/api/metrics_exposition.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace {

// Rows into a spooled body, which keeps the first write error (finish() returns it).
class CsvWriter {
 public:
  explicit CsvWriter(SpooledBody& body) : body_(body) {}
  // A text cell. One that begins with =, +, -, @, a tab or a carriage return is a formula to a
  // spreadsheet (a kernel named "=HYPERLINK(…)" would run when the file is opened): it gets a
  // leading apostrophe, as OWASP and the spreadsheet tools advise. Numbers are written as they are.
  // Control characters (an escape sequence in a name) are shown, not passed to the reader's
  // terminal or spreadsheet: printable() writes them in caret notation.
  CsvWriter& field(std::string_view raw) {
    const std::string text = printable(raw);
    if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos) {
      return cell("'" + text);
    }
    return cell(text);
  }
  CsvWriter& field(std::int64_t v) { return cell(std::to_string(v)); }
  CsvWriter& field(std::uint64_t v) { return cell(std::to_string(v)); }
  CsvWriter& field(double v) { return cell(std::isfinite(v) ? format_metric_value(v) : std::string()); }
  template <typename T>
  CsvWriter& field(const std::optional<T>& v) {
    if (v) return field(*v);
    return field(std::string_view());
  }
  void end_row() {
    out_ += "\r\n";
    first_ = true;
    body_.drain(out_);
  }
  // Hands over the rest; the body is complete when this is ok.
  Status finish() { return body_.finish(out_); }
  void header(std::initializer_list<std::string_view> names) {
    for (auto n : names) field(n);
    end_row();
  }

 private:
  CsvWriter& cell(std::string_view text) {
    separate();
    if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
      out_ += text;
      return *this;
    }
    out_ += '"';
    for (char c : text) {
      if (c == '"') out_ += '"';
      out_ += c;
    }
    out_ += '"';
    return *this;
  }
  void separate() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  SpooledBody& body_;
  std::string out_;
  bool first_ = true;
};

std::string dims(const std::optional<std::array<std::uint32_t, 3>>& d) {
  if (!d) return {};
  return std::to_string((*d)[0]) + "x" + std::to_string((*d)[1]) + "x" + std::to_string((*d)[2]);
}

}  // namespace

namespace {

constexpr std::string_view kCsvTables[] = {"samples", "kernels", "inference", "memory", "abtests"};

}  // namespace

HttpResponse QueryEndpoints::csv_table(const HttpRequest& request) const {
  CsvQuery query;
  query.table = param(request, "table");
  query.series = param(request, "series");
  const std::string compress = param(request, "compress");
  if (compress != "" && compress != "gzip") {
    return error_response(400, "invalid_argument", "'compress' must be gzip or absent", "compress");
  }
  const TimestampNs now = now_ns();
  auto w = window_or(request, kDefaultReportWindow, now);
  if (!w.ok()) return status_response(w.status());
  query.range = {w->all ? 0 : w->from_ns, std::min(w->to_ns, now)};
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  query.scope = std::move(*scope);
  if (std::find(std::begin(kCsvTables), std::end(kCsvTables), query.table) == std::end(kCsvTables)) {
    return error_response(400, "invalid_argument", "'table' must be samples, kernels, inference, memory or abtests", "table");
  }
  // A .csv.gz file when asked for one; otherwise gzip on the wire when the client takes it.
  const bool wire_gzip = compress.empty() && accepts_gzip(request.accept_encoding);
  auto body = spool_body(spool_dir_, compress == "gzip" || wire_gzip);
  if (!body.ok()) return status_response(body.status());
  if (Status s = write_csv_table(query, **body); !s.ok()) return status_response(s);
  const bool file_gzip = compress == "gzip";
  HttpResponse out = spooled_response(std::move(*body),
                                      file_gzip ? "application/gzip" : "text/csv; charset=utf-8; header=present", wire_gzip);
  const std::string filename = "perfscope-" + query.table + (file_gzip ? ".csv.gz" : ".csv");
  out.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + filename + "\"");
  return out;
}

Status QueryEndpoints::write_csv_table(const CsvQuery& query, SpooledBody& body) const {
  const db::TimeRange& range = query.range;
  const db::EventScope& scope = query.scope;
  const std::string& table = query.table;
  CsvWriter csv(body);
  Status s;
  if (table == "samples") {
    csv.header({"ts_ns", "metric", "labels", "unit", "value"});
    db::HistoryQuery q;
    q.name = query.series.empty() ? "*" : query.series;
    q.from_ns = range.from_ns;
    q.to_ns = range.to_ns;
    q.max_points = SIZE_MAX;
    auto data = sources_.history->query(q);
    if (!data.ok()) return data.status();
    for (const auto& d : *data) {
      const std::string labels = format_labels(d.info.key.labels);
      for (const Sample& p : d.samples) {
        csv.field(p.ts_ns).field(d.info.key.name).field(labels).field(d.info.family.unit).field(p.value);
        csv.end_row();
      }
    }
  } else if (table == "kernels") {
    csv.header({"name", "variant", "device", "stream", "start_ns", "end_ns", "duration_ms", "launch_start_ns",
                "launch_end_ns", "grid", "block", "shared_mem_bytes", "registers_per_thread", "tags"});
    s = sources_.events->for_each_kernel(range, scope, [&](const KernelEvent& k) {
      csv.field(k.name).field(k.variant).field(k.device).field(k.stream).field(k.start_ns).field(k.end_ns)
          .field(k.duration_ms()).field(k.launch_start_ns).field(k.launch_end_ns).field(dims(k.grid)).field(dims(k.block))
          .field(k.shared_mem_bytes).field(k.registers_per_thread ? std::optional<std::uint64_t>(*k.registers_per_thread) : std::nullopt)
          .field(format_labels(k.tags));
      csv.end_row();
    });
  } else if (table == "inference") {
    csv.header({"model", "version", "ts_ns", "latency_ms", "queue_ms", "compute_ms", "ttft_ms", "tpot_ms", "batch_size",
                "input_tokens", "output_tokens", "status", "tags"});
    auto events = sources_.events->inference_events(range, scope);
    if (!events.ok()) return events.status();
    for (const InferenceEvent& e : *events) {
      csv.field(e.model).field(e.version).field(e.ts_ns).field(e.latency_ms).field(e.queue_ms).field(e.compute_ms)
          .field(e.ttft_ms).field(e.tpot_ms()).field(static_cast<std::uint64_t>(e.batch_size)).field(e.input_tokens)
          .field(e.output_tokens).field(e.ok ? "ok" : "error").field(format_labels(e.tags));
      csv.end_row();
    }
  } else if (table == "memory") {
    csv.header({"ts_ns", "op", "address", "size_bytes", "kind", "tag", "device", "tags"});
    s = sources_.events->for_each_memory_event(range, [&](const MemoryEvent& e) {
      csv.field(e.ts_ns).field(to_string(e.op)).field(e.address)
          .field(e.op == MemoryOp::kAlloc ? std::optional<std::uint64_t>(e.size_bytes) : std::nullopt)
          .field(to_string(e.kind)).field(e.tag).field(e.device).field(format_labels(e.tags));
      csv.end_row();
    }, scope);
  } else if (table == "abtests") {
    constexpr int kAbFigureColumns = 11;  // n_control … p_value_used, between the sides and the verdict
    csv.header({"id", "name", "control", "variant", "n_control", "n_variant", "mean_control_ms", "mean_variant_ms",
                "median_control_ms", "median_variant_ms", "speedup", "speedup_ci95_low", "speedup_ci95_high",
                "mann_whitney_p_value", "p_value_used", "verdict"});
    auto tests = report_abtests();
    if (!tests.ok()) return tests.status();
    for (const ListedAbTest& t : *tests) {
      // Listed without figures: the report's time for A/B tests was spent, or the definition no
      // longer evaluates (a run it names is gone); the report's JSON says which.
      if (!t.evaluation) {
        csv.field(t.record.id).field(t.record.name).field("").field("");
        for (int i = 0; i < kAbFigureColumns; ++i) csv.field(NAN);
        csv.field("not_evaluated");
        csv.end_row();
        continue;
      }
      const service::AbDefinition& d = *t.definition;
      for (std::size_t i = 0; i < t.evaluation->results.size(); ++i) {
        const analysis::AbResult& r = t.evaluation->results[i];
        // A/B: a against b; A/B/n: the control (the first variant) against each other one.
        csv.field(t.record.id).field(t.record.name).field(selector_json(d.sides[0]).dump())
            .field(selector_json(d.sides[i + 1]).dump()).field(static_cast<std::uint64_t>(r.a.n))
            .field(static_cast<std::uint64_t>(r.b.n)).field(r.a.mean_ms).field(r.b.mean_ms)
            .field(r.a.median_ms).field(r.b.median_ms).field(r.speedup)
            .field(r.speedup_ci95.low).field(r.speedup_ci95.high).field(r.mann_whitney.p_value)
            .field(r.p_value_used).field(analysis::to_string(r.verdict));
        csv.end_row();
      }
    }
  }
  if (!s.ok()) return s;
  return csv.finish();
}

}  // namespace perfscope::server
