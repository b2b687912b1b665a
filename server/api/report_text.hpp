// What the text renderings of a report share (report_format.cpp defines them): numbers read
// from the document, counts, p-values and values in their unit, the window and A/B sides as
// text, and the summary rows. Internal to server/api/ (report_markdown.cpp, report_terminal.cpp).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace perfscope::server::report_text {

std::string printf_string(const char* fmt, double v);
// A number member of an object; `fallback` when absent or not a number.
double num(const nlohmann::json& j, const char* key, double fallback = NAN);
std::string utc_time(long long ns);
// The report's window: "all data", or "FROM to TO" in UTC.
std::string window_text(const nlohmann::json& report);
// Thousands separators: 1,523.
std::string format_count(double v);
std::string format_p_value(double p);
// A value in a series unit (ratio, bytes, bytes_per_second, watts, celsius), else 3 digits.
std::string format_unit_value(double v, const std::string& unit);
// One A/B side or selector as "kernel=matmul variant=tiled".
std::string selector_text(const nlohmann::json& s);

// Summary rows shared by Markdown and the terminal: label, average, peak.
struct SummaryRow {
  std::string label, avg, peak;
};
std::vector<SummaryRow> summary_rows(const nlohmann::json& summary);

// A top kernel's work columns (TFLOP/s, GB/s, roofline place as "memory-bound, 41% of
// attainable"); empty cells ("—") where it reported none. `any_work` of a list: whether any
// kernel of it reported work (the columns are shown then).
struct KernelWorkCells {
  std::string tflops, gb_per_second, roofline;
};
KernelWorkCells kernel_work_cells(const nlohmann::json& kernel);
bool any_work(const nlohmann::json& kernels);

// The checks of every GPU against its --device-target: GPU, figure, achieved (with its
// source), minimum/target or budget, efficiency or share of budget, status; and the
// recommendations that fired, "GPU 0: …".
struct DeviceCheckRow {
  std::string gpu, figure, achieved, goal, ratio, status;
};
std::vector<DeviceCheckRow> device_check_rows(const nlohmann::json& devices);
std::vector<std::string> device_recommendations(const nlohmann::json& devices);

}  // namespace perfscope::server::report_text
