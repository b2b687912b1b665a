#include "server/api/metrics_exposition.hpp"

#include <charconv>
#include <cmath>

namespace perfscope::server {

namespace {

void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_labels(std::string& out, const Labels& labels, const char* extra_name = nullptr,
                   std::string_view extra_value = {}) {
  if (labels.empty() && !extra_name) return;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    append_escaped(out, v, true);
    out += '"';
  }
  if (extra_name) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

// The family name OpenMetrics uses in its metadata: a counter's without `_total`.
std::string_view metadata_name(const MetricFamily& f, std::string_view full, ExpositionFormat format) {
  if (format == ExpositionFormat::kOpenMetrics && f.type == MetricType::kCounter && full.ends_with("_total")) {
    return full.substr(0, full.size() - 6);
  }
  return full;
}

}  // namespace

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  // General notation, shortest round trip: "0.0001", "1e-06", "24247037952" (as Go clients print).
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  return std::string(buf, ec == std::errc() ? end : buf);
}

ExpositionFormat negotiate_exposition(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos ? ExpositionFormat::kOpenMetrics
                                                                              : ExpositionFormat::kPrometheusText;
}

std::string_view exposition_content_type(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                                  : "text/plain; version=0.0.4; charset=utf-8";
}

std::string render_exposition(const std::vector<ExpositionFamily>& families, ExpositionFormat format,
                              std::string_view prefix) {
  std::string out;
  const bool om = format == ExpositionFormat::kOpenMetrics;
  for (const ExpositionFamily& f : families) {
    if (f.samples.empty() && f.histograms.empty()) continue;
    const std::string name = std::string(prefix) + f.family.name;
    const std::string_view meta = metadata_name(f.family, name, format);
    out += "# HELP ";
    out += meta;
    out += ' ';
    // OpenMetrics escapes quotes in HELP too; the text format leaves them.
    append_escaped(out, f.family.help.empty() ? f.family.name : f.family.help, om);
    out += "\n# TYPE ";
    out += meta;
    out += ' ';
    out += to_string(f.family.type);
    out += '\n';
    // OpenMetrics requires the unit to be the name's suffix; only then is it declared.
    if (om && !f.family.unit.empty() && std::string_view(meta).ends_with("_" + f.family.unit)) {
      out += "# UNIT ";
      out += meta;
      out += ' ';
      out += f.family.unit;
      out += '\n';
    }
    for (const ExpositionSample& s : f.samples) {
      out += name;
      append_labels(out, s.labels);
      out += ' ';
      out += format_metric_value(s.value);
      out += '\n';
    }
    for (const ExpositionHistogram& h : f.histograms) {
      for (std::size_t i = 0; i < h.cumulative.size(); ++i) {
        out += name;
        out += "_bucket";
        const std::string le = i < f.bounds.size() ? format_metric_value(f.bounds[i]) : "+Inf";
        append_labels(out, h.labels, "le", le);
        out += ' ';
        out += std::to_string(h.cumulative[i]);
        out += '\n';
      }
      out += name;
      out += "_sum";
      append_labels(out, h.labels);
      out += ' ';
      out += format_metric_value(h.sum);
      out += '\n';
      out += name;
      out += "_count";
      append_labels(out, h.labels);
      out += ' ';
      out += std::to_string(h.count);
      out += '\n';
    }
  }
  if (om) out += "# EOF\n";
  return out;
}

}  // namespace perfscope::server
