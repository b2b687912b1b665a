#include "server/api/report_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <vector>

#include "server/api/report_text.hpp"
#include "web/embedded_assets.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace report_text {

std::string printf_string(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

double num(const json& j, const char* key, double fallback) {
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
  if (!std::isfinite(v)) return "—";  // a figure without data: never "nan"
  if (unit == "ratio") return format_ratio_percent(v);
  if (unit == "bytes") return format_bytes(v);
  if (unit == "bytes_per_second") return format_bandwidth(v);
  if (unit == "watts") return printf_string("%.1f W", v);
  if (unit == "celsius") return printf_string("%.0f °C", v);
  return printf_string("%.3g", v);
}

std::string selector_text(const json& s) {
  std::string out;
  if (!s.is_object()) return out;
  for (const auto& [k, v] : s.items()) {
    if (!out.empty()) out += ' ';
    out += k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

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

KernelWorkCells kernel_work_cells(const json& k) {
  auto cell = [&](const char* key, const char* fmt) {
    const json v = k.value(key, json());
    return v.is_number() ? printf_string(fmt, v.get<double>()) : std::string("—");
  };
  KernelWorkCells c{cell("achieved_tflops", "%.3g"), cell("achieved_gb_per_second", "%.4g"), "—"};
  for (const json& place : k.value("roofline", json::array())) {
    if (!place.contains("bound")) continue;
    c.roofline = place["bound"].get<std::string>() + "-bound, " +
                 printf_string("%.0f%%", 100 * place["fraction_of_attainable"].get<double>()) + " of attainable";
    break;
  }
  return c;
}

bool any_work(const json& kernels) {
  return std::any_of(kernels.begin(), kernels.end(), [](const json& k) { return k.contains("achieved_tflops"); });
}

std::vector<DeviceCheckRow> device_check_rows(const json& devices) {
  std::vector<DeviceCheckRow> rows;
  for (const json& d : devices) {
    for (const json& c : d["checks"]) {
      const std::string figure = c["figure"];
      // Rates in their unit; memory in GiB.
      const double scale = figure == "memory_bytes" ? 1024.0 * 1024 * 1024 : 1;
      const char* unit = figure == "tflops" ? " TFLOP/s" : figure == "gb_per_second" ? " GB/s" : figure == "memory_bytes" ? " GiB" : " W";
      auto value = [&](const json& v) { return v.is_number() ? printf_string("%.4g", v.get<double>() / scale) + unit : std::string("—"); };
      DeviceCheckRow r;
      r.gpu = d["gpu"].get<std::string>();
      r.figure = figure == "tflops" ? "TFLOP/s" : figure == "gb_per_second" ? "Bandwidth" : figure == "memory_bytes" ? "Memory peak" : "Power (mean)";
      r.achieved = c["achieved"].is_null() ? std::string("not measured")
                                           : value(c["achieved"]["value"]) + " (" + c["achieved"]["source"].get<std::string>() + ")";
      if (c["budget"].is_number()) {
        r.goal = "budget " + value(c["budget"]);
        r.ratio = c["of_budget"].is_number() ? format_ratio_percent(c["of_budget"].get<double>()) + " of budget" : "—";
      } else {
        r.goal = (c["minimum"].is_number() ? "min " + value(c["minimum"]) : std::string()) +
                 (c["minimum"].is_number() && c["target"].is_number() ? " · " : "") +
                 (c["target"].is_number() ? "target " + value(c["target"]) : std::string());
        r.ratio = c["efficiency"].is_number() ? format_ratio_percent(c["efficiency"].get<double>()) + " of target"
                  : c["of_minimum"].is_number() ? format_ratio_percent(c["of_minimum"].get<double>()) + " of minimum"
                                                : "—";
      }
      r.status = c["status"].get<std::string>();
      std::replace(r.status.begin(), r.status.end(), '_', ' ');
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

std::vector<std::string> device_recommendations(const json& devices) {
  std::vector<std::string> out;
  for (const json& d : devices) {
    for (const json& c : d["checks"]) {
      if (c["recommendation"].is_string()) out.push_back("GPU " + d["gpu"].get<std::string>() + ": " + c["recommendation"].get<std::string>());
    }
  }
  return out;
}

}  // namespace report_text

using report_text::printf_string;
using report_text::window_text;

std::string format_bytes(double bytes) {
  if (!std::isfinite(bytes)) return "—";
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
  if (!std::isfinite(bytes_per_s)) return "—";
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

std::string script_safe_json(std::string_view text) {
  // Inside <script>, "</script" ends the element and "<!--" followed by "<script" makes the
  // parser hold on past the real end (a kernel named "<!--<script>" blanked the report): no
  // '<' may reach it at all. In JSON '<', '>' and '&' occur only inside strings, where \u003c
  // and its kin mean the same characters; U+2028/2029 are escaped for older script parsers.
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' && (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      // Caret notation, as cat -v shows them: ESC is ^[, NUL ^@, a carriage return ^M. Line
      // breaks and tabs stay: they move no cursor back and start no escape sequence.
      out += '^';
      out += static_cast<char>(c == 0x7F ? '?' : c + 0x40);
    } else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out += "\xEF\xBF\xBD";  // a C1 control (CSI among them): U+FFFD
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

json printable_strings(const json& document) {
  if (document.is_string()) return printable(document.get_ref<const std::string&>());
  if (document.is_array()) {
    json out = json::array();
    for (const json& item : document) out.push_back(printable_strings(item));
    return out;
  }
  if (document.is_object()) {
    json out = json::object();
    for (auto it = document.begin(); it != document.end(); ++it) out[printable(it.key())] = printable_strings(it.value());
    return out;
  }
  return document;
}

std::string render_html(const json& report, const HtmlReportOptions& options) {
  std::string_view uplot_js, uplot_css, report_js, report_css, format_js, notices;
  for (const web::EmbeddedAsset& a : web::embedded_assets()) {
    const std::string_view text(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
    if (a.url_path == "/NOTICE.txt") notices = text;
    if (a.url_path == "/vendor/uPlot.iife.min.js") uplot_js = text;
    if (a.url_path == "/vendor/uPlot.min.css") uplot_css = text;
    if (a.url_path == "/report.js") report_js = text;
    if (a.url_path == "/report.css") report_css = text;
    if (a.url_path == "/lib/format.js") format_js = text;
  }
  // The dashboard's format module writes the report's figures too: inlined ahead of
  // report.js as a plain script (its `export`s dropped), so one file says how a figure reads.
  // The assets are compiled in: made once, not per report.
  static const std::string formats = [format_js] {
    std::string out;
    for (std::size_t at = 0; at < format_js.size();) {
      std::size_t end = format_js.find('\n', at);
      std::string_view line = format_js.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at + 1);
      if (line.starts_with("export ")) line.remove_prefix(7);
      out += line;
      at = end == std::string_view::npos ? format_js.size() : end + 1;
    }
    return out;
  }();
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
  out += "<script type=\"application/json\" id=\"report-data\">" +
         script_safe_json(report.dump(-1, ' ', false, json::error_handler_t::replace)) + "</script>\n";
  // uPlot's MIT licence asks for its notice in every copy: its section of NOTICE, as a comment
  // ("--" cannot occur in it, so the comment cannot end early).
  if (const auto from = notices.find("== uPlot"); from != std::string_view::npos) {
    std::string_view section = notices.substr(from, notices.find("\n== ", from + 1) - from);
    while (!section.empty() && section.back() == '\n') section.remove_suffix(1);
    if (section.find("--") == std::string_view::npos) out += "<!--\n" + std::string(section) + "\n-->\n";
  }
  out += "<script>\n" + inline_safe(uplot_js) + "\n</script>\n";
  out += "<script>\n" + inline_safe(formats) + "\n" + inline_safe(report_js) + "\n</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace perfscope::server
