#include "engine/series/series.hpp"

#include <algorithm>

namespace perfscope {

std::string_view to_string(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kGauge: break;
  }
  return "gauge";
}

SeriesKey::SeriesKey(std::string series_name, Labels series_labels)
    : name(std::move(series_name)), labels(std::move(series_labels)) {
  sort_labels(labels);
}

void sort_labels(Labels& labels) {
  std::sort(labels.begin(), labels.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
}

std::string SeriesKey::canonical() const {
  if (labels.empty()) return name;
  std::string out = name;
  out += '{';
  out += format_labels(labels);
  out += '}';
  return out;
}

const std::string* SeriesKey::label(std::string_view label_name) const {
  for (const auto& [k, v] : labels) {
    if (k == label_name) return &v;
  }
  return nullptr;
}

std::string format_labels(const Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) out += ',';
    out += k;
    out += "=\"";
    for (char c : v) {
      switch (c) {
        case '\\': out += "\\\\"; break;
        case '"': out += "\\\""; break;
        case '\n': out += "\\n"; break;
        default: out += c;
      }
    }
    out += '"';
  }
  return out;
}

Result<Labels> parse_labels(std::string_view text) {
  Labels labels;
  size_t i = 0;
  while (i < text.size()) {
    size_t eq = text.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') {
      return Status::invalid_argument("malformed labels: " + std::string(text), "labels");
    }
    std::string name(text.substr(i, eq - i));
    if (!is_valid_label_name(name)) {
      return Status::invalid_argument("invalid label name: " + name, "labels");
    }
    std::string value;
    size_t j = eq + 2;
    bool closed = false;
    for (; j < text.size(); ++j) {
      char c = text[j];
      if (c == '\\' && j + 1 < text.size()) {
        char n = text[++j];
        value += n == 'n' ? '\n' : n;
      } else if (c == '"') {
        closed = true;
        ++j;
        break;
      } else {
        value += c;
      }
    }
    if (!closed) return Status::invalid_argument("unterminated label value", "labels");
    labels.emplace_back(std::move(name), std::move(value));
    if (j < text.size()) {
      if (text[j] != ',') return Status::invalid_argument("expected ',' between labels", "labels");
      ++j;
    }
    i = j;
  }
  sort_labels(labels);
  return labels;
}

namespace {
bool is_name_char(char c, bool first, bool allow_colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (allow_colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

bool is_valid_name(std::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!is_name_char(name[i], i == 0, allow_colon)) return false;
  }
  return true;
}
}  // namespace

bool is_valid_metric_name(std::string_view name) { return is_valid_name(name, true); }
bool is_valid_label_name(std::string_view name) { return is_valid_name(name, false); }

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative matcher with single-star backtracking: linear in practice, no recursion.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

SeriesPattern::SeriesPattern(std::string pattern)
    : pattern_(std::move(pattern)), match_canonical_(pattern_.find('{') != std::string::npos) {}

bool SeriesPattern::matches(const SeriesKey& key, const std::string& canonical) const {
  return glob_match(pattern_, match_canonical_ ? std::string_view(canonical) : std::string_view(key.name));
}

}  // namespace perfscope
