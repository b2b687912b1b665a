// Reports rendered from the report document (GET /api/v1/report?format=json): Markdown for a
// pull request, aligned terminal tables (the design documents' "Performance Summary",
// "Top Kernels by Execution Time" and "Memory Statistics"), and one self-contained HTML file
// with the chart library, styles, script and data inlined. Pure functions of the document.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace perfscope::server {

struct HtmlReportOptions {
  bool auto_refresh = false;  // the live-served variant reloads itself
  std::size_t refresh_interval_ms = 5000;
};

std::string render_markdown(const nlohmann::json& report);
// `color`: ANSI colours and bold headings (a TTY); plain text otherwise.
std::string render_terminal(const nlohmann::json& report, bool color);
std::string render_html(const nlohmann::json& report, const HtmlReportOptions& options);

// JSON text made safe to inline in a <script> element: no '<', '>', '&', U+2028 or U+2029
// left unescaped (the same document to a JSON parser).
std::string script_safe_json(std::string_view json_text);
// Text printable on a terminal or in a spreadsheet cell: C0 controls but line breaks and tabs
// in caret notation (ESC as ^[), C1 controls as U+FFFD.
std::string printable(std::string_view text);
// The document with every string (and key) printable on a terminal: control characters but
// line breaks and tabs in caret notation (ESC as ^[), C1 controls as U+FFFD. What names carry
// is the producer's, not the reader's terminal's to interpret.
nlohmann::json printable_strings(const nlohmann::json& document);

// Human units, as every text format prints them.
std::string format_bytes(double bytes);             // "8.20 GiB"
std::string format_bandwidth(double bytes_per_s);   // "285.6 GB/s"
std::string format_duration_ms(double ms);          // "5.42 ms", "420 µs", "1.25 s"
std::string format_ratio_percent(double ratio);     // "75.3%"

}  // namespace perfscope::server
