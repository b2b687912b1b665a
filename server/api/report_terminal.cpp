// The report as aligned terminal tables (the design documents' "Performance Summary",
// "Top Kernels by Execution Time" and "Memory Statistics"), ANSI-coloured on a TTY.
#include "server/api/report_format.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/report_text.hpp"

namespace perfscope::server {

using nlohmann::json;
using namespace report_text;

namespace {

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

// The window and the summary's figures.
void summary_section(const json& r, const Style& st, std::string& out) {
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
}

// The top kernels, with their achieved rates where they reported their work.
void kernels_section(const json& r, const Style& st, std::string& out) {
  std::vector<std::vector<std::string>> rows;
  out += st.heading("=== Top Kernels by Execution Time ===") + "\n\n";
  for (const json& k : r["kernels"]["top"]) {
    rows.push_back({ellipsize(k["name"], 48), format_duration_ms(num(k, "avg_ms")), format_count(num(k, "count")),
                    format_duration_ms(num(k, "total_ms"))});
  }
  const bool work = any_work(r["kernels"]["top"]);
  if (work) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const KernelWorkCells c = kernel_work_cells(r["kernels"]["top"][i]);
      rows[i].insert(rows[i].end(), {c.tflops, c.gb_per_second});
    }
  }
  if (rows.empty()) out += "(no kernels in this window)\n";
  else if (work) text_table(out, {"Kernel Name", "Avg Time", "Count", "Total", "TFLOP/s", "GB/s"}, {false, true, true, true, true, true}, rows);
  else text_table(out, {"Kernel Name", "Avg Time", "Count", "Total"}, {false, true, true, true}, rows);
  out += "\n";
}

// Each GPU against its targets, where targets are configured.
void devices_section(const json& r, const Style& st, std::string& out) {
  std::vector<std::vector<std::string>> rows;
  if (r.contains("devices")) {
    for (const DeviceCheckRow& d : device_check_rows(r["devices"])) rows.push_back({d.gpu, d.figure, d.achieved, d.goal, d.ratio, d.status});
    if (!rows.empty()) {
      out += st.heading("=== Device Targets ===") + "\n\n";
      text_table(out, {"GPU", "Figure", "Achieved", "Goal", "Ratio", "Status"}, {false, false, true, false, true, false}, rows);
      for (const std::string& rec : device_recommendations(r["devices"])) out += "  * " + rec + "\n";
      out += "\n";
    }
  }
}

// The top operators and each model's CPU fallback.
void operators_section(const json& r, const Style& st, std::string& out) {
  std::vector<std::vector<std::string>> rows;
  if (r.contains("operators") && !r["operators"]["op_types"].empty()) {
    out += st.heading("=== Top Operators ===") + "\n\n";
    for (const json& o : r["operators"]["op_types"]) {
      rows.push_back({ellipsize(o["model"], 24), ellipsize(o["op_type"], 24), format_duration_ms(num(o, "mean_ms")),
                      format_count(num(o, "count")), format_duration_ms(num(o, "total_ms"))});
    }
    text_table(out, {"Model", "Op Type", "Mean", "Count", "Total"}, {false, false, true, true, true}, rows);
    for (const json& m : r["operators"]["models"]) {
      if (m["cpu_fallback_share"].is_null()) continue;
      out += "CPU fallback of " + m["model"].get<std::string>() + ": " + format_ratio_percent(num(m, "cpu_fallback_share")) + "\n";
    }
    out += "\n";
  }
}

// Energy per model.
void energy_section(const json& r, const Style& st, std::string& out) {
  std::vector<std::vector<std::string>> rows;
  if (r.contains("energy") && !r["energy"]["models"].empty()) {
    out += st.heading("=== Energy ===") + "\n\n";
    auto cell = [&](const json& v, const char* fmt) { return v.is_null() ? std::string("-") : printf_string(fmt, v.get<double>()); };
    for (const json& m : r["energy"]["models"]) {
      rows.push_back({ellipsize(m["model"], 32), cell(m["joules"], "%.1f J"), cell(m["joules_per_inference"], "%.3g J"),
                      cell(m["joules_per_output_token"], "%.3g J")});
    }
    text_table(out, {"Model", "Energy", "Per Inference", "Per Token"}, {false, true, true, true}, rows);
    out += "\n";
  }
}

// One multi-GPU job: its straggler, each rank's compute, exposed communication, overlap and
// wait, and its collectives by operation and size.
void job_section(const json& job, const Style& st, std::string& out) {
  std::vector<std::vector<std::string>> rows;
  out += st.heading("=== Multi-GPU Job " + (job["run"].is_null() ? std::string("(no run)") : job["run"].get<std::string>()) +
                    " ===") + "\n\n";
  const json& s = job["straggler"];
  if (!s.is_null()) {
    out += "Straggler: rank " + s["rank"].get<std::string>() + ", " + format_duration_ms(num(s, "extra_per_step_ms")) +
           " more compute per " + format_duration_ms(num(s, "step_median_ms")) + " step, last in " +
           format_ratio_percent(num(s, "last_share")) + " of the collectives\n\n";
  } else if (job.contains("no_straggler")) {
    out += "No straggler: " + job["no_straggler"].get<std::string>() + "\n\n";
  }
  const bool per_step = num(job, "steps") > 0;
  for (const json& rank : job["ranks"]) {
    const json& b = per_step && !rank["per_step"].is_null() ? rank["per_step"] : rank["breakdown"];
    rows.push_back({rank["rank"].get<std::string>(), format_duration_ms(num(b, "compute_ms")),
                    format_duration_ms(num(b, "exposed_ms")), format_ratio_percent(num(b, "overlap_ratio")),
                    format_ratio_percent(num(rank, "wait_share"))});
  }
  text_table(out, {"Rank", per_step ? "Compute/step" : "Compute", "Comm. alone", "Overlap", "Waiting"},
             {false, true, true, true, true}, rows);
  out += "\n";
  rows.clear();
  for (const json& op : job["ops"]) {
    const json& bytes = op.value("bytes", json());
    const json& busbw = op.value("busbw_p50_gb_per_second", json());
    const json& share = op.value("busbw_share_of_peak", json());
    rows.push_back({op["op"].get<std::string>(), bytes.is_null() ? "-" : format_bytes(bytes.get<double>()),
                    format_count(num(op, "instances")), format_duration_ms(num(op, "duration_p50_ms")),
                    busbw.is_null() ? "-" : format_bandwidth(busbw.get<double>() * 1e9),
                    share.is_null() ? "-" : format_ratio_percent(share.get<double>())});
  }
  text_table(out, {"Collective", "Size", "Count", "p50", "Bus BW", "Of Peak"}, {false, true, true, true, true, true}, rows);
  out += "\n";
}

// Allocated memory.
void memory_section(const json& r, const Style& st, std::string& out) {
  out += st.heading("=== Memory Statistics ===") + "\n\n";
  const json& m = r["memory"];
  out += "Total Allocated:   " + format_bytes(num(m, "total_allocated_bytes")) + "\n";
  out += "Current Allocated: " + format_bytes(num(m, "current_allocated_bytes")) + "\n";
  out += "Peak Allocated:    " + format_bytes(num(m, "peak_allocated_bytes")) + "\n";
}

// Latency percentiles per model against the SLA.
void latency_section(const json& r, const Style& st, std::string& out) {
  std::vector<std::vector<std::string>> rows;
  if (!r["latency"].empty()) {
    out += "\n" + st.heading("=== Latency Percentiles ===") + "\n\n";
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
}

// The bottlenecks that fired, each with its first recommendation.
void bottlenecks_section(const json& r, const Style& st, std::string& out) {
  bool header = false;
  for (const json& f : r["bottlenecks"]) {
    if (f["status"] != "fired") continue;
    if (!header) out += "\n" + st.heading("=== Bottlenecks ===") + "\n\n";
    header = true;
    out += st.warn("[" + f["severity"].get<std::string>() + "] ") + f["title"].get<std::string>() + "\n";
    if (!f["recommendations"].empty()) out += "  → " + f["recommendations"][0].get<std::string>() + "\n";
  }
}

}  // namespace

std::string render_terminal(const json& document, bool color) {
  const json r = printable_strings(document);
  const Style st{color};
  std::string out;
  out += st.heading("=== Performance Summary ===") + "\n\n";
  summary_section(r, st, out);
  kernels_section(r, st, out);
  devices_section(r, st, out);
  operators_section(r, st, out);
  energy_section(r, st, out);
  for (const json& job : r.value("collectives", json::array())) job_section(job, st, out);
  memory_section(r, st, out);
  latency_section(r, st, out);
  bottlenecks_section(r, st, out);
  return out;
}

}  // namespace perfscope::server
