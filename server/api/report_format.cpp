#include "server/api/report_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <vector>

#include "web/embedded_assets.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace {

std::string printf_string(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

double num(const json& j, const char* key, double fallback = NAN) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return fallback;
  return j[key].get<double>();
}

std::string utc_time(long long ns) {
  std::time_t t = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string window_text(const json& report) {
  const json& w = report["window"];
  if (w.is_string()) return "all data";
  return utc_time(w["from_ns"].get<long long>()) + " to " + utc_time(w["to_ns"].get<long long>());
}


std::string format_count(double v) {
  // Thousands separators: 1,523.
  std::string digits = printf_string("%.0f", v);
  std::string out;
  const std::size_t lead = digits.size() % 3;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i >= lead && i > 0 && (i - lead) % 3 == 0 && digits[0] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_p_value(double p) { return p < 1e-4 ? printf_string("%.1e", p) : printf_string("%.4f", p); }

std::string format_unit_value(double v, const std::string& unit) {
  if (unit == "ratio") return format_ratio_percent(v);
  if (unit == "bytes") return format_bytes(v);
  if (unit == "bytes_per_second") return format_bandwidth(v);
  if (unit == "watts") return printf_string("%.1f W", v);
  if (unit == "celsius") return printf_string("%.0f °C", v);
  return printf_string("%.3g", v);
}

// One A/B side or selector as "kernel=matmul variant=tiled".
std::string selector_text(const json& s) {
  std::string out;
  if (!s.is_object()) return out;
  for (const auto& [k, v] : s.items()) {
    if (!out.empty()) out += ' ';
    out += k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

// Summary rows shared by Markdown and the terminal: label, average, peak.
struct SummaryRow {
  std::string label, avg, peak;
};
std::vector<SummaryRow> summary_rows(const json& summary) {
  std::vector<SummaryRow> rows;
  auto add = [&](const char* key, const char* label, const std::string& unit) {
    const json& s = summary[key];
    if (s.is_null()) return;
    rows.push_back({label, format_unit_value(num(s, "avg"), unit), format_unit_value(num(s, "peak"), unit)});
  };
  add("gpu_utilization", "GPU utilization", "ratio");
  add("memory_bandwidth", "Memory bandwidth", "bytes_per_second");
  add("gpu_memory_used", "GPU memory used", "bytes");
  add("gpu_power", "GPU power", "watts");
  add("gpu_temperature", "GPU temperature", "celsius");
  add("host_cpu_utilization", "Host CPU utilization", "ratio");
  return rows;
}

// --- Markdown ---

std::string md_cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

std::string md_code(std::string text) {
  std::replace(text.begin(), text.end(), '`', '\'');
  return "`" + md_cell(text) + "`";
}

void md_table(std::string& out, const std::vector<std::string>& header, const std::vector<bool>& right,
              const std::vector<std::vector<std::string>>& rows) {
  out += "|";
  for (const auto& h : header) out += " " + h + " |";
  out += "\n|";
  for (std::size_t i = 0; i < header.size(); ++i) out += right[i] ? "---:|" : "---|";
  out += "\n";
  for (const auto& r : rows) {
    out += "|";
    for (const auto& c : r) out += " " + c + " |";
    out += "\n";
  }
  out += "\n";
}

// --- terminal ---

struct Style {
  bool color;
  std::string heading(const std::string& s) const { return color ? "\x1b[1;36m" + s + "\x1b[0m" : s; }
  std::string bold(const std::string& s) const { return color ? "\x1b[1m" + s + "\x1b[0m" : s; }
  std::string warn(const std::string& s) const { return color ? "\x1b[33m" + s + "\x1b[0m" : s; }
  std::string bad(const std::string& s) const { return color ? "\x1b[31m" + s + "\x1b[0m" : s; }
};

// Display width of UTF-8 text: code points (every character perfscope prints is one column).
std::size_t width(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad(const std::string& s, std::size_t w, bool right) {
  const std::size_t n = width(s);
  if (n >= w) return s;
  return right ? std::string(w - n, ' ') + s : s + std::string(w - n, ' ');
}

std::string ellipsize(const std::string& s, std::size_t w) {
  if (width(s) <= w) return s;
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size() && n + 1 < w; ++i) {
    out += s[i];
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++n;
    // Keep a multi-byte character whole.
    while (i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) out += s[++i];
  }
  return out + "…";
}

void text_table(std::string& out, const std::vector<std::string>& header, const std::vector<bool>& right,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> w(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) w[i] = width(header[i]);
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) l += "  ";
      l += pad(cells[i], i + 1 == cells.size() && !right[i] ? 0 : w[i], right[i]);
    }
    out += l + "\n";
  };
  line(header);
  std::vector<std::string> rules;
  for (std::size_t x : w) rules.emplace_back(x, '-');
  line(rules);
  for (const auto& r : rows) line(r);
}

}  // namespace

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? printf_string("%.0f B", v) : printf_string("%.2f ", v) + units[u];
}

std::string format_bandwidth(double bytes_per_s) {
  static const char* units[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
  int u = 0;
  double v = bytes_per_s;
  while (std::fabs(v) >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return printf_string("%.1f ", v) + units[u];
}

std::string format_duration_ms(double ms) {
  if (!std::isfinite(ms)) return "—";
  if (std::fabs(ms) >= 1000) return printf_string("%.2f s", ms / 1000);
  if (std::fabs(ms) >= 0.1 || ms == 0) return printf_string("%.2f ms", ms);
  return printf_string("%.1f µs", ms * 1000);
}

std::string format_ratio_percent(double ratio) {
  if (!std::isfinite(ratio)) return "—";
  return printf_string("%.1f%%", ratio * 100);
}

std::string render_markdown(const json& r) {
  std::string out = "# perfscope report\n\n";
  out += "Host `" + r["report"]["host"].get<std::string>() + "` · perfscope " + r["report"]["version"].get<std::string>() +
         " · " + window_text(r) + "\n\n";

  out += "## Summary\n\n";
  const json& summary = r["summary"];
  std::vector<std::vector<std::string>> rows;
  for (const SummaryRow& s : summary_rows(summary)) rows.push_back({s.label, s.avg, s.peak});
  if (rows.empty()) {
    out += "No GPU or host samples in this window.\n\n";
  } else {
    md_table(out, {"Metric", "Average", "Peak"}, {false, true, true}, rows);
  }
  const json& kt = summary["kernel_time"];
  out += "Kernel time: " + format_duration_ms(num(kt, "total_ms")) + " in " + format_count(num(kt, "executions")) +
         " executions" + (kt["avg_ms"].is_null() ? std::string() : " (average " + format_duration_ms(num(kt, "avg_ms")) + ")") +
         ".\n\n";

  out += "## Top kernels\n\n";
  rows.clear();
  for (const json& k : r["kernels"]["top"]) {
    rows.push_back({md_code(k["name"]), format_count(num(k, "count")), format_duration_ms(num(k, "total_ms")),
                    format_duration_ms(num(k, "avg_ms")), format_duration_ms(num(k, "min_ms")),
                    format_duration_ms(num(k, "max_ms")), format_ratio_percent(num(k, "share"))});
  }
  if (rows.empty()) out += "No kernels in this window.\n\n";
  else md_table(out, {"Kernel", "Count", "Total", "Average", "Min", "Max", "Share"}, {false, true, true, true, true, true, true}, rows);

  if (!r["timeline"].empty()) {
    out += "## Kernel timeline\n\n";
    rows.clear();
    for (const json& q : r["timeline"]) {
      rows.push_back({q["device"].get<std::string>(), q["stream"].is_null() ? "(all)" : md_code(q["stream"]),
                      format_count(num(q, "kernel_count")), format_ratio_percent(num(q, "busy_ratio")),
                      format_duration_ms(num(q, "idle_ms")), format_duration_ms(num(q, "avg_gap_ms")),
                      format_ratio_percent(num(q, "launch_efficiency")),
                      q["short_kernel_share"].is_null() ? "—" : format_ratio_percent(num(q, "short_kernel_share"))});
    }
    md_table(out, {"Device", "Stream", "Kernels", "Busy", "Idle", "Avg gap", "Launch efficiency", "Short kernels"},
             {false, false, true, true, true, true, true, true}, rows);
  }

  out += "## Memory\n\n";
  const json& m = r["memory"];
  md_table(out, {"Statistic", "Value"}, {false, true},
           {{"Total allocated", format_bytes(num(m, "total_allocated_bytes"))},
            {"Current allocated", format_bytes(num(m, "current_allocated_bytes"))},
            {"Peak allocated", format_bytes(num(m, "peak_allocated_bytes"))},
            {"Allocations / frees", format_count(num(m, "allocation_count")) + " / " + format_count(num(m, "free_count"))}});
  if (m["growth"]["significant"].get<bool>()) {
    out += "Allocated memory grows by " + format_bytes(num(m["growth"], "slope_per_second")) + "/s (p = " +
           format_p_value(num(m["growth"], "p_value")) + ").\n\n";
  }
  if (!m["leak_suspects"].empty()) {
    out += "Leak suspects (alive longer than " + std::to_string(m["leak_age_s"].get<long long>()) + " s while memory grows):\n\n";
    for (const json& a : m["leak_suspects"]) {
      out += "- " + format_bytes(num(a, "size_bytes")) + " at `" + a["address"].get<std::string>() + "`" +
             (a["tag"].get<std::string>().empty() ? "" : " (" + md_cell(a["tag"]) + ")") + ", " +
             printf_string("%.0f", num(a, "age_s")) + " s old\n";
    }
    out += "\n";
  }

  if (!r["latency"].empty()) {
    out += "## Latency percentiles\n\n";
    rows.clear();
    std::vector<std::string> warnings;
    const bool sla = r["slo"].contains("latency_ms");
    for (const json& l : r["latency"]) {
      const json& p = l["percentiles_ms"];
      std::vector<std::string> row = {md_code(l["model"]), format_count(num(l, "count")),
                                      format_duration_ms(num(p, "p50")), format_duration_ms(num(p, "p90")),
                                      format_duration_ms(num(p, "p95")), format_duration_ms(num(p, "p99")),
                                      format_duration_ms(num(p, "p99.9"))};
      if (sla) {
        const json& s = l["sla"];
        row.push_back(format_count(num(s, "violations")));
        row.push_back(format_ratio_percent(num(s, "compliance_rate")));
      }
      rows.push_back(row);
      for (const json& w : l["warnings"]) warnings.push_back(l["model"].get<std::string>() + ": " + w.get<std::string>());
    }
    std::vector<std::string> header = {"Model", "Requests", "p50", "p90", "p95", "p99", "p99.9"};
    if (sla) {
      header.push_back("Over " + format_duration_ms(num(r["slo"], "latency_ms")));
      header.push_back("SLA compliance");
    }
    std::vector<bool> right(header.size(), true);
    right[0] = false;
    md_table(out, header, right, rows);
    if (!warnings.empty()) {
      for (const auto& w : warnings) out += "- ⚠ " + md_cell(w) + "\n";
      out += "\n";
    }
  }

  bool llm = false;
  for (const json& s : r["inference"]) llm = llm || !s["ttft_ms"].is_null();
  if (llm) {
    out += "## LLM serving\n\n";
    rows.clear();
    for (const json& s : r["inference"]) {
      if (s["ttft_ms"].is_null()) continue;
      rows.push_back({md_code(s["model"]), printf_string("%.2f", num(s, "requests_per_second")),
                      printf_string("%.1f", num(s, "output_tokens_per_second")),
                      format_duration_ms(num(s["ttft_ms"], "p50")), format_duration_ms(num(s["ttft_ms"], "p99")),
                      s["tpot_ms"].is_null() ? "—" : format_duration_ms(num(s["tpot_ms"], "p50")),
                      s["tpot_ms"].is_null() ? "—" : format_duration_ms(num(s["tpot_ms"], "p99")),
                      format_ratio_percent(num(s, "error_rate")),
                      s.contains("goodput_ratio") ? format_ratio_percent(num(s, "goodput_ratio")) : "—"});
    }
    md_table(out, {"Model", "Requests/s", "Output tokens/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "Errors", "Goodput"},
             {false, true, true, true, true, true, true, true, true}, rows);
  }

  out += "## Bottlenecks\n\n";
  std::vector<std::string> ok, not_evaluated;
  bool any = false;
  for (const json& f : r["bottlenecks"]) {
    const std::string status = f["status"];
    if (status == "ok") {
      ok.push_back(f["title"]);
      continue;
    }
    if (status == "not_evaluated") {
      not_evaluated.push_back(f["title"].get<std::string>() + " (" + f.value("reason", "") + ")");
      continue;
    }
    any = true;
    out += "### " + f["title"].get<std::string>() + " — " + f["severity"].get<std::string>() + "\n\n";
    out += "Evidence:";
    for (const auto& [k, v] : f["evidence"].items()) out += " `" + k + "` = " + printf_string("%.4g", v.get<double>()) + ";";
    out.pop_back();
    out += "\n\n";
    for (const json& rec : f["recommendations"]) out += "- " + md_cell(rec) + "\n";
    out += "\n";
  }
  if (!any) out += "No bottleneck detected.\n\n";
  if (!ok.empty()) {
    out += "Checked and clear: ";
    for (std::size_t i = 0; i < ok.size(); ++i) out += (i ? ", " : "") + ok[i];
    out += ".\n\n";
  }
  if (!not_evaluated.empty()) {
    out += "Not evaluated (no data): ";
    for (std::size_t i = 0; i < not_evaluated.size(); ++i) out += (i ? "; " : "") + md_cell(not_evaluated[i]);
    out += ".\n\n";
  }

  if (!r["abtests"].empty()) {
    out += "## A/B tests\n\n";
    rows.clear();
    auto row_of = [&](const json& t, const std::string& control, const std::string& variant, const json& c) {
      const json& ci = c["speedup_ci95"];
      rows.push_back({md_cell(t["name"]), md_cell(control), md_cell(variant), format_count(num(c["a"], "n")) + " / " +
                      format_count(num(c["b"], "n")),
                      c["speedup"].is_null() ? "—" : printf_string("%.3f×", num(c, "speedup")),
                      ci[0].is_null() ? "—" : printf_string("%.3f", ci[0].get<double>()) + "–" + printf_string("%.3f", ci[1].get<double>()),
                      format_p_value(num(c, "p_value_used")), c["verdict"].get<std::string>()});
    };
    for (const json& t : r["abtests"]) {
      const json& d = t["definition"];
      if (t.contains("comparisons")) {
        for (const json& c : t["comparisons"]) {
          row_of(t, selector_text(d["variants"][c["control"].get<std::size_t>()]),
                 selector_text(d["variants"][c["variant"].get<std::size_t>()]), c);
        }
      } else {
        row_of(t, selector_text(d["a"]), selector_text(d["b"]), t);
      }
    }
    md_table(out, {"Test", "Control", "Variant", "Samples", "Speedup", "95% CI", "p", "Verdict"},
             {false, false, false, true, true, true, true, false}, rows);
  }
  out += "<sub>Percentiles: " + md_cell(r["methods"]["percentiles"]) + ". Generated " + utc_time(r["generated_ns"].get<long long>()) +
         ".</sub>\n";
  return out;
}

std::string render_terminal(const json& r, bool color) {
  const Style st{color};
  std::string out;
  out += st.heading("=== Performance Summary ===") + "\n\n";
  out += "Window: " + window_text(r) + "\n\n";
  const json& summary = r["summary"];
  auto block = [&](const char* key, const char* label, const std::string& unit) {
    const json& s = summary[key];
    out += st.bold(label) + std::string(":\n");
    if (s.is_null()) {
      out += "  (no data)\n\n";
      return;
    }
    out += "  Average: " + format_unit_value(num(s, "avg"), unit) + "\n";
    out += "  Peak:    " + format_unit_value(num(s, "peak"), unit) + "\n\n";
  };
  block("gpu_utilization", "GPU Utilization", "ratio");
  block("memory_bandwidth", "Memory Bandwidth", "bytes_per_second");
  const json& kt = summary["kernel_time"];
  out += st.bold("Kernel Execution") + ":\n";
  out += "  Average Time: " + (kt["avg_ms"].is_null() ? std::string("(no kernels)") : format_duration_ms(num(kt, "avg_ms"))) + "\n";
  out += "  Executions:   " + format_count(num(kt, "executions")) + "\n\n";

  out += st.heading("=== Top Kernels by Execution Time ===") + "\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const json& k : r["kernels"]["top"]) {
    rows.push_back({ellipsize(k["name"], 48), format_duration_ms(num(k, "avg_ms")), format_count(num(k, "count")),
                    format_duration_ms(num(k, "total_ms"))});
  }
  if (rows.empty()) out += "(no kernels in this window)\n";
  else text_table(out, {"Kernel Name", "Avg Time", "Count", "Total"}, {false, true, true, true}, rows);
  out += "\n";

  out += st.heading("=== Memory Statistics ===") + "\n\n";
  const json& m = r["memory"];
  out += "Total Allocated:   " + format_bytes(num(m, "total_allocated_bytes")) + "\n";
  out += "Current Allocated: " + format_bytes(num(m, "current_allocated_bytes")) + "\n";
  out += "Peak Allocated:    " + format_bytes(num(m, "peak_allocated_bytes")) + "\n";

  if (!r["latency"].empty()) {
    out += "\n" + st.heading("=== Latency Percentiles ===") + "\n\n";
    rows.clear();
    for (const json& l : r["latency"]) {
      const json& p = l["percentiles_ms"];
      std::string sla = "—";
      if (l.contains("sla")) {
        const double rate = num(l["sla"], "compliance_rate");
        sla = format_ratio_percent(rate);
        if (rate < 0.99) sla = st.bad(sla);
      }
      rows.push_back({ellipsize(l["model"], 32), format_count(num(l, "count")), format_duration_ms(num(p, "p50")),
                      format_duration_ms(num(p, "p95")), format_duration_ms(num(p, "p99")), sla});
    }
    text_table(out, {"Model", "Requests", "p50", "p95", "p99", "SLA met"}, {false, true, true, true, true, true}, rows);
  }
  bool header = false;
  for (const json& f : r["bottlenecks"]) {
    if (f["status"] != "fired") continue;
    if (!header) out += "\n" + st.heading("=== Bottlenecks ===") + "\n\n";
    header = true;
    out += st.warn("[" + f["severity"].get<std::string>() + "] ") + f["title"].get<std::string>() + "\n";
    if (!f["recommendations"].empty()) out += "  → " + f["recommendations"][0].get<std::string>() + "\n";
  }
  return out;
}

std::string render_html(const json& report, const HtmlReportOptions& options) {
  std::string_view uplot_js, uplot_css, report_js, report_css;
  for (const web::EmbeddedAsset& a : web::embedded_assets()) {
    const std::string_view text(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
    if (a.url_path == "/vendor/uPlot.iife.min.js") uplot_js = text;
    if (a.url_path == "/vendor/uPlot.min.css") uplot_css = text;
    if (a.url_path == "/report.js") report_js = text;
    if (a.url_path == "/report.css") report_css = text;
  }
  // Inlined text must not close its element early: "</" becomes "<\/" (the same string in
  // JSON and in the scripts, which hold "</" only inside strings).
  auto inline_safe = [](std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
        out += "<\\/";
        ++i;
      } else {
        out += text[i];
      }
    }
    return out;
  };
  std::string out = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  if (options.auto_refresh) {
    out += "<meta http-equiv=\"refresh\" content=\"" +
           std::to_string(std::max<std::size_t>(1, options.refresh_interval_ms / 1000)) + "\">\n";
  }
  out += "<title>perfscope report — " + window_text(report) + "</title>\n";
  out += "<style>\n" + std::string(uplot_css) + "\n" + std::string(report_css) + "\n</style>\n</head>\n<body>\n";
  out += "<main id=\"report\" data-testid=\"report\"></main>\n";
  out += "<script type=\"application/json\" id=\"report-data\">" + inline_safe(report.dump(-1, ' ', false, json::error_handler_t::replace)) +
         "</script>\n";
  out += "<script>\n" + inline_safe(uplot_js) + "\n</script>\n";
  out += "<script>\n" + inline_safe(report_js) + "\n</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace perfscope::server
