// The report as Markdown, for a pull request or an issue.
#include "server/api/report_format.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "server/api/report_text.hpp"

namespace perfscope::server {

using nlohmann::json;
using namespace report_text;

namespace {

// One line without a column break: a newline as a space, '|' escaped.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r' || c == '\t') out += ' ';
    else if (u < 0x20 || u == 0x7f) out += "\xEF\xBF\xBD";  // other control characters (NUL…) as U+FFFD, seen
    else out += c;
  }
  return out;
}

// Text in a table cell or a line, with no HTML a renderer would pass through (names come from
// producers: a model named "<script>…" stays text).
std::string md_cell(const std::string& text) {
  std::string out;
  for (char c : one_line(text)) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// A name as code: literal inside the span (entities would show as typed there).
std::string md_code(std::string text) {
  std::replace(text.begin(), text.end(), '`', '\'');
  return "`" + one_line(text) + "`";
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

// Run against run (GET /api/v1/runs/compare): totals, then the kernels that moved most.
void render_comparison(std::string& out, const json& c) {
  const std::string a = c["a"]["name"].get<std::string>(), b = c["b"]["name"].get<std::string>();
  out += "## Run comparison: " + md_code(a) + " → " + md_code(b) + "\n\n";
  out += "Verdict: **" + c["verdict"].get<std::string>() + "**. " + md_cell(c["method"]) + ".\n\n";
  auto change = [](const json& t) { return t["change"].is_null() ? std::string("—") : printf_string("%+.1f%%", t["change"].get<double>() * 100); };
  auto value = [](const json& v, const char* unit) {
    if (!v.is_number()) return std::string("—");
    const double x = v.get<double>();
    if (std::string_view(unit) == "ms") return format_duration_ms(x);
    if (std::string_view(unit) == "s") return format_duration_ms(x * 1000);
    if (std::string_view(unit) == "ratio") return format_ratio_percent(x);
    return format_count(x);
  };
  std::vector<std::vector<std::string>> rows;
  for (auto [key, label, unit] : {std::tuple{"wall_s", "Wall time", "s"}, std::tuple{"gpu_busy_ms", "GPU busy", "ms"},
                                  std::tuple{"kernel_ms", "Kernel time", "ms"}, std::tuple{"kernel_count", "Kernels", ""},
                                  std::tuple{"launch_efficiency", "Launch efficiency", "ratio"}}) {
    const json& t = c["totals"][key];
    rows.push_back({label, value(t["a"], unit), value(t["b"], unit), change(t)});
  }
  md_table(out, {"Total", md_code(a), md_code(b), "Change"}, {false, true, true, true}, rows);
  rows.clear();
  for (const json& k : c["kernels"]) {
    if (rows.size() == 20) break;
    rows.push_back({md_code(k["name"]), format_count(num(k, "count_a")) + " / " + format_count(num(k, "count_b")),
                    value(k["mean_a_ms"], "ms"), value(k["mean_b_ms"], "ms"),
                    k["mean_change"].is_null() ? "—" : printf_string("%+.1f%%", k["mean_change"].get<double>() * 100),
                    format_duration_ms(num(k, "moved_ms")),
                    k["p_adjusted"].is_null() ? "—" : format_p_value(k["p_adjusted"].get<double>()),
                    k["verdict"].get<std::string>()});
  }
  if (rows.empty()) {
    out += "No kernels in either run.\n\n";
  } else {
    md_table(out, {"Kernel", "Executions", "Mean a", "Mean b", "Change", "Time moved", "p (adjusted)", "Verdict"},
             {false, true, true, true, true, true, true, false}, rows);
  }
}

// The GPU and host figures (average, peak) and the kernel time.
void render_summary(std::string& out, const json& r) {
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
}

// The window's longest-running kernels, with their work where they reported it.
void render_top_kernels(std::string& out, const json& r) {
  std::vector<std::vector<std::string>> rows;
  out += "## Top kernels\n\n";
  const bool work = any_work(r["kernels"]["top"]);
  for (const json& k : r["kernels"]["top"]) {
    rows.push_back({md_code(k["name"]), format_count(num(k, "count")), format_duration_ms(num(k, "total_ms")),
                    format_duration_ms(num(k, "avg_ms")), format_duration_ms(num(k, "min_ms")),
                    format_duration_ms(num(k, "max_ms")), format_ratio_percent(num(k, "share"))});
    if (work) {
      const KernelWorkCells c = kernel_work_cells(k);
      rows.back().insert(rows.back().end(), {c.tflops, c.gb_per_second, c.roofline});
    }
  }
  if (rows.empty()) {
    out += "No kernels in this window.\n\n";
  } else if (work) {
    md_table(out, {"Kernel", "Count", "Total", "Average", "Min", "Max", "Share", "TFLOP/s", "GB/s", "Roofline"},
             {false, true, true, true, true, true, true, true, true, false}, rows);
  } else {
    md_table(out, {"Kernel", "Count", "Total", "Average", "Min", "Max", "Share"}, {false, true, true, true, true, true, true}, rows);
  }
}

// GPUs against their --device-target.
void render_device_targets(std::string& out, const json& r) {
  std::vector<std::vector<std::string>> rows;
  if (r.contains("devices")) {
    for (const DeviceCheckRow& d : device_check_rows(r["devices"])) rows.push_back({d.gpu, d.figure, d.achieved, d.goal, d.ratio, d.status});
    if (!rows.empty()) {
      out += "## Device targets\n\n";
      md_table(out, {"GPU", "Figure", "Achieved", "Goal", "Ratio", "Status"}, {false, false, true, false, true, false}, rows);
      for (const std::string& rec : device_recommendations(r["devices"])) out += "- " + md_cell(rec) + "\n";
      out += "\n";
    }
  }
}

// Operators (ONNX Runtime nodes and the like), when any were reported.
void render_operators(std::string& out, const json& r) {
  std::vector<std::vector<std::string>> rows;
  if (r.contains("operators") && !r["operators"]["op_types"].empty()) {
    out += "## Operators\n\n";
      for (const json& o : r["operators"]["op_types"]) {
      const json& p = o["percentiles_ms"];
      std::string providers;
      for (const auto& [name, n] : o["providers"].items()) providers += (providers.empty() ? "" : ", ") + name;
      rows.push_back({o["model"].get<std::string>(), md_code(o["op_type"]), format_count(num(o, "count")),
                      format_duration_ms(num(o, "total_ms")), format_duration_ms(num(o, "mean_ms")),
                      format_duration_ms(num(p, "p50")), format_duration_ms(num(p, "p99")),
                      format_ratio_percent(num(o, "share_of_model_time")), providers});
    }
    md_table(out, {"Model", "Op type", "Count", "Total", "Mean", "p50", "p99", "Share of model", "Providers"},
             {false, false, true, true, true, true, true, true, false}, rows);
    for (const json& m : r["operators"]["models"]) {
      if (m["cpu_fallback_share"].is_null()) continue;
      out += "CPU fallback of " + md_code(m["model"]) + ": " + format_ratio_percent(num(m, "cpu_fallback_share")) +
             " of its operator time on CPU providers.\n\n";
    }
  }
}

// Energy per model, where a GPU energy counter and requests shared the window.
void render_energy(std::string& out, const json& r) {
  std::vector<std::vector<std::string>> rows;
  if (r.contains("energy") && !r["energy"]["models"].empty()) {
    out += "## Energy\n\n";
      auto cell = [&](const json& v, const char* fmt) { return v.is_null() ? std::string("—") : printf_string(fmt, v.get<double>()); };
    for (const json& m : r["energy"]["models"]) {
      rows.push_back({md_code(m["model"]), cell(m["joules"], "%.1f J"), cell(m["joules_per_inference"], "%.3g J"),
                      cell(m["joules_per_output_token"], "%.3g J"), cell(m["inferences_per_second_per_watt"], "%.3g"),
                      m["attribution"].get<std::string>()});
    }
    md_table(out, {"Model", "Energy", "Per inference", "Per output token", "Inferences/s per W", "Attribution"},
             {false, true, true, true, true, false}, rows);
    for (const json& g : r["energy"]["gpus"]) {
      out += "GPU " + g["gpu"].get<std::string>() + ": " + cell(g["joules"], "%.1f J");
      if (!g.value("avg_watts", json()).is_null()) {
        out += ", power " + cell(g["avg_watts"], "%.1f W") + " average, " + cell(g["peak_watts"], "%.1f W") + " peak";
      }
      if (!g.value("avg_watts_during_requests", json()).is_null()) {
        out += "; while requests were in flight " + cell(g["avg_watts_during_requests"], "%.1f W") + " average, " +
               cell(g["peak_watts_during_requests"], "%.1f W") + " peak";
      }
      out += "\n\n";
    }
    out += "<sub>" + r["energy"]["method"].get<std::string>() + "</sub>\n\n";
  }
}

// Busy and idle time per device and stream (per run when several).
void render_kernel_timeline(std::string& out, const json& r) {
  std::vector<std::vector<std::string>> rows;
  if (!r["timeline"].empty()) {
    out += "## Kernel timeline\n\n";
      // Several runs: a row per run and device, each over its own span (say whose).
    bool runs = false;
    for (const json& q : r["timeline"]) runs |= q.contains("run") && !q["run"].is_null();
    for (const json& q : r["timeline"]) {
      rows.push_back({q["device"].get<std::string>(), q["stream"].is_null() ? "(all)" : md_code(q["stream"]),
                      format_count(num(q, "kernel_count")), format_ratio_percent(num(q, "busy_ratio")),
                      format_duration_ms(num(q, "idle_ms")), format_duration_ms(num(q, "avg_gap_ms")),
                      format_ratio_percent(num(q, "launch_efficiency")),
                      q["short_kernel_share"].is_null() ? "—" : format_ratio_percent(num(q, "short_kernel_share"))});
    }
    std::vector<std::string> header{"Device", "Stream", "Kernels", "Busy", "Idle", "Avg gap", "Launch efficiency",
                                    "Short kernels"};
    std::vector<bool> right{false, false, true, true, true, true, true, true};
    if (runs) {
      header.insert(header.begin(), "Run");
      right.insert(right.begin(), false);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const json& run = r["timeline"][i]["run"];
        rows[i].insert(rows[i].begin(), run.is_null() ? "(none)" : md_code(run));
      }
      out += "Each run over its own span: the time between runs is no run's idle time.\n\n";
    }
    md_table(out, header, right, rows);
  }
}

// Multi-GPU jobs: each run's ranks with the time breakdown of a step (of the run where no step
// repeats), the straggler or why none, and its collective operations.
void render_collectives(std::string& out, const json& r) {
  if (!r.contains("collectives") || r["collectives"].empty()) return;
  out += "## Multi-GPU jobs\n\n";
  for (const json& job : r["collectives"]) {
    const bool per_step = num(job, "steps") > 0;
    out += "Run " + (job["run"].is_null() ? std::string("(none)") : md_code(job["run"])) + ": " +
           format_count(static_cast<double>(job["ranks"].size())) + " ranks, " + format_count(num(job, "matched")) +
           " collectives matched across them" +
           (per_step ? ", " + format_count(num(job, "steps")) + " steps; each rank's median step below."
                     : "; no repeating step: each rank over the run.") +
           "\n\n";
    if (!job["straggler"].is_null()) {
      const json& s = job["straggler"];
      out += "**Straggler: rank " + md_cell(s["rank"]) + "** — last in " + format_ratio_percent(num(s, "last_share")) +
             " of the collectives, " + format_duration_ms(num(s, "extra_per_step_ms")) + " more compute per " +
             format_duration_ms(num(s, "step_median_ms")) + " step; the others wait " +
             format_duration_ms(num(s, "exposed_wait_caused_ms")) + " for it per collective.\n\n";
    } else if (job.contains("no_straggler")) {
      out += "No straggler: " + md_cell(job["no_straggler"]) + ".\n\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const json& rank : job["ranks"]) {
      const json& b = per_step && !rank["per_step"].is_null() ? rank["per_step"] : rank["breakdown"];
      rows.push_back({md_cell(rank["rank"]), md_cell(rank["device"]), format_duration_ms(num(b, "compute_ms")),
                      format_duration_ms(num(b, "exposed_ms")), format_duration_ms(num(b, "idle_ms")),
                      format_duration_ms(num(b, "overlapped_ms")), format_ratio_percent(num(b, "overlap_ratio")),
                      format_ratio_percent(num(rank, "wait_share")), format_count(num(rank, "last_arrivals"))});
    }
    md_table(out, {"Rank", "GPU", "Compute", "Comm. alone", "Idle", "Comm. hidden", "Overlap", "Waiting", "Last in"},
             {false, false, true, true, true, true, true, true, true}, rows);
    rows.clear();
    bool described = false;
    for (const json& op : job["ops"]) described = described || !op.value("bytes", json()).is_null();
    for (const json& op : job["ops"]) {
      std::vector<std::string> row{md_code(op["op"])};
      if (described) {
        const json& bytes = op.value("bytes", json());
        row.push_back(bytes.is_null() ? "–" : format_bytes(bytes.get<double>()));
        const json& algorithm = op.value("algorithm", json());
        const json& protocol = op.value("protocol", json());
        row.push_back(algorithm.is_null() ? "–"
                                          : md_cell(algorithm.get<std::string>() +
                                                    (protocol.is_string() ? " · " + protocol.get<std::string>() : "")));
      }
      row.insert(row.end(), {format_count(num(op, "instances")), format_duration_ms(num(op, "duration_p50_ms")),
                             format_duration_ms(num(op, "duration_p99_ms")), format_ratio_percent(num(op, "wait_share"))});
      if (described) {
        const json& busbw = op.value("busbw_p50_gb_per_second", json());
        const json& share = op.value("busbw_share_of_peak", json());
        row.push_back(busbw.is_null() ? "–" : format_bandwidth(busbw.get<double>() * 1e9));
        row.push_back(share.is_null() ? "–" : format_ratio_percent(share.get<double>()));
      }
      rows.push_back(std::move(row));
    }
    if (described) {
      md_table(out, {"Collective", "Size", "Algorithm", "Count", "p50", "p99", "Waiting", "Bus bandwidth", "Of peak"},
               {false, true, false, true, true, true, true, true, true}, rows);
    } else {
      md_table(out, {"Collective", "Count", "p50", "p99", "Waiting"}, {false, true, true, true, true}, rows);
    }
  }
  out += "<sub>Compute + comm. alone + idle = the stretch (per step, each a median); comm. hidden ran during "
         "compute, so it is part of compute's time; compute: a rank's other kernels; waiting: the share of its time "
         "in collectives before the last rank arrived. Sizes, algorithms and bus bandwidth (nccl-tests' formula, from "
         "the last rank's arrival to the end, against the GPUs' NVLink peak) where NCCL's profiler plugin described "
         "the collectives; kernel names alone carry no sizes.</sub>\n\n";
}

// Allocation counters, growth and leak suspects.
void render_memory(std::string& out, const json& r) {
  std::vector<std::vector<std::string>> rows;
  out += "## Memory\n\n";
  const json& m = r["memory"];
  md_table(out, {"Statistic", "Value"}, {false, true},
           {{"Total allocated", format_bytes(num(m, "total_allocated_bytes"))},
            {"Current allocated", format_bytes(num(m, "current_allocated_bytes"))},
            {"Peak allocated", format_bytes(num(m, "peak_allocated_bytes"))},
            {"Allocations / frees", format_count(num(m, "allocation_count")) + " / " + format_count(num(m, "free_count"))}});
  if (m.contains("module_statics") && num(m["module_statics"], "count", 0) > 0) {
    out += "CUDA module statics (held while a module is loaded, not allocations): " +
           format_bytes(num(m["module_statics"], "current_bytes")) + " in " +
           format_count(num(m["module_statics"], "count")) + ".\n\n";
  }
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
}

// Exact latency percentiles per model, with the SLA where one is set.
void render_latency(std::string& out, const json& r) {
  std::vector<std::vector<std::string>> rows;
  if (!r["latency"].empty()) {
    out += "## Latency percentiles\n\n";
      std::vector<std::string> warnings;
    const bool sla = r["slo"].contains("latency_ms");
    for (const json& l : r["latency"]) {
      const json& p = l["percentiles_ms"];
      std::vector<std::string> row = {md_code(l["model"]), format_count(num(l, "count")),
                                      format_duration_ms(num(p, "p50")), format_duration_ms(num(p, "p90")),
                                      format_duration_ms(num(p, "p95")), format_duration_ms(num(p, "p99")),
                                      format_duration_ms(num(p, "p99.9"))};
      if (sla) {
        const json s = l.value("sla", json::object());  // none where only a summary was scraped
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
}

// TTFT, TPOT, throughput and goodput of the models that report tokens.
void render_llm_serving(std::string& out, const json& r) {
  std::vector<std::vector<std::string>> rows;
  bool llm = false;
  for (const json& s : r["inference"]) llm = llm || !s["ttft_ms"].is_null();
  if (llm) {
    out += "## LLM serving\n\n";
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
}

// Fired rules with evidence and advice; the clear ones; those not evaluated, grouped by why.
void render_bottlenecks(std::string& out, const json& r) {
  out += "## Bottlenecks\n\n";
  std::vector<std::string> ok;
  // Rules not evaluated, grouped by why (the reason's words before its first ';'), in order.
  std::vector<std::pair<std::string, std::vector<std::string>>> not_evaluated;
  bool any = false;
  for (const json& f : r["bottlenecks"]) {
    const std::string status = f["status"];
    if (status == "ok") {
      ok.push_back(f["title"]);
      continue;
    }
    if (status == "not_evaluated") {
      const std::string reason = f.value("reason", "");
      const std::string why = reason.substr(0, reason.find(';'));
      auto group = std::find_if(not_evaluated.begin(), not_evaluated.end(), [&](const auto& g) { return g.first == why; });
      if (group == not_evaluated.end()) group = not_evaluated.insert(not_evaluated.end(), {why, {}});
      group->second.push_back(f["title"]);
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
    out += "Not evaluated:\n\n";
    for (const auto& [why, titles] : not_evaluated) {
      out += "- " + md_cell(why) + ": ";
      for (std::size_t i = 0; i < titles.size(); ++i) out += (i ? ", " : "") + md_cell(titles[i]);
      out += "\n";
    }
    out += "\n";
  }
}

// Every A/B test's current result.
void render_abtests(std::string& out, const json& r) {
  std::vector<std::vector<std::string>> rows;
  if (!r["abtests"].empty()) {
    out += "## A/B tests\n\n";
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
      if (t.contains("not_evaluated")) {
        auto side = [&](const char* key, std::size_t i) {
          json s;
          if (d.is_object() && d.contains("variants")) {
            if (d["variants"].is_array() && i < d["variants"].size()) s = d["variants"][i];
          } else if (d.is_object()) {
            s = d.value(key, json());
          }
          return s.is_object() ? md_cell(selector_text(s)) : std::string("—");
        };
        rows.push_back({md_cell(t["name"]), side("a", 0), side("b", 1), "—", "—", "—", "—",
                        "not evaluated: " + md_cell(t["not_evaluated"])});
      } else if (t.contains("comparisons")) {
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
}

}  // namespace

std::string render_markdown(const json& document) {
  const json r = printable_strings(document);
  std::string out = "# perfscope report\n\n";
  out += "Host `" + r["report"]["host"].get<std::string>() + "` · perfscope " + r["report"]["version"].get<std::string>() +
         " · " + window_text(r) + "\n\n";

  render_summary(out, r);
  render_top_kernels(out, r);
  render_device_targets(out, r);
  render_operators(out, r);
  render_energy(out, r);
  render_kernel_timeline(out, r);
  render_collectives(out, r);
  render_memory(out, r);
  render_latency(out, r);
  render_llm_serving(out, r);
  render_bottlenecks(out, r);
  render_abtests(out, r);
  if (r.contains("compare")) render_comparison(out, r["compare"]);
  out += "<sub>Percentiles: " + md_cell(r["methods"]["percentiles"]) + ". Generated " + utc_time(r["generated_ns"].get<long long>()) +
         ".</sub>\n";
  return out;
}

}  // namespace perfscope::server
