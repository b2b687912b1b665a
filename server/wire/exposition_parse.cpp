#include "server/wire/exposition_parse.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace perfscope::server {
namespace {

struct LineError {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw LineError{std::move(message)}; }

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

// "NaN", "+Inf", "-Inf", "Inf" (any case), or a decimal number; the whole token.
std::optional<double> parse_float(std::string_view token) {
  if (token.empty()) return std::nullopt;
  std::string_view body = token;
  bool negative = false;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  auto equals_nocase = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return (x | 0x20) == (y | 0x20);
           });
  };
  if (equals_nocase(body, "inf") || equals_nocase(body, "infinity")) {
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (equals_nocase(body, "nan")) return std::numeric_limits<double>::quiet_NaN();
  if (body.empty() || !(body.front() == '.' || (body.front() >= '0' && body.front() <= '9'))) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (ec == std::errc::result_out_of_range) {
    // Beyond a double: as Go's ParseFloat, ±Inf for huge magnitudes, 0 for tiny ones.
    const bool tiny = body.find_first_of("eE") != std::string_view::npos &&
                      body.find('-', body.find_first_of("eE")) != std::string_view::npos;
    value = tiny ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  if (end != body.data() + body.size()) return std::nullopt;
  return negative ? -value : value;
}

std::optional<ExpositionType> parse_type(std::string_view text) {
  if (text == "counter") return ExpositionType::kCounter;
  if (text == "gauge") return ExpositionType::kGauge;
  if (text == "histogram") return ExpositionType::kHistogram;
  if (text == "summary") return ExpositionType::kSummary;
  if (text == "untyped" || text == "unknown") return ExpositionType::kUntyped;
  if (text == "info") return ExpositionType::kInfo;
  if (text == "stateset") return ExpositionType::kStateSet;
  if (text == "gaugehistogram") return ExpositionType::kGaugeHistogram;
  return std::nullopt;
}

// One line, read left to right.
class Cursor {
 public:
  Cursor(std::string_view line, const ExpositionLimits& limits) : s_(line), limits_(limits) {}

  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }
  void skip_spaces() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  bool take(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  void expect(char c, const char* what) {
    if (!take(c)) fail(std::string("expected ") + what + (at_end() ? " at the end of the line" : ", found '" + std::string(1, peek()) + "'"));
  }
  std::string_view rest() const { return s_.substr(std::min(i_, s_.size())); }

  // A metric or label name ([a-zA-Z_:][a-zA-Z0-9_:]*), or a quoted one (UTF-8 names).
  std::string name(const char* what) {
    if (peek() == '"') return quoted(what);
    const std::size_t start = i_;
    if (!name_start(peek())) fail(std::string("expected ") + what);
    while (!at_end() && name_char(s_[i_])) ++i_;
    return bounded(std::string(s_.substr(start, i_ - start)), what);
  }

  // "text" with the escapes \\, \" and \n.
  std::string quoted(const char* what) {
    expect('"', "'\"'");
    std::string out;
    while (true) {
      if (at_end()) fail(std::string("unterminated quoted ") + what);
      const char c = s_[i_++];
      if (c == '"') break;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (at_end()) fail(std::string("unterminated quoted ") + what);
      const char e = s_[i_++];
      if (e == '\\') out.push_back('\\');
      else if (e == '"') out.push_back('"');
      else if (e == 'n') out.push_back('\n');
      else fail(std::string("invalid escape \\") + e + " in " + what);
    }
    return bounded(std::move(out), what);
  }

  // Up to the next space or the end.
  std::string_view token() {
    const std::size_t start = i_;
    while (!at_end() && s_[i_] != ' ' && s_[i_] != '\t') ++i_;
    return s_.substr(start, i_ - start);
  }

 private:
  std::string bounded(std::string text, const char* what) const {
    if (text.size() > limits_.max_name_bytes) {
      fail(std::string(what) + " longer than " + std::to_string(limits_.max_name_bytes) + " bytes");
    }
    return text;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  const ExpositionLimits& limits_;
};

// The suffixes a family's samples may carry, by type.
bool suffix_allowed(ExpositionType type, std::string_view suffix) {
  using T = ExpositionType;
  switch (type) {
    case T::kCounter: return suffix == "_total" || suffix == "_created";
    case T::kHistogram: return suffix == "_bucket" || suffix == "_sum" || suffix == "_count" || suffix == "_created";
    case T::kGaugeHistogram: return suffix == "_bucket" || suffix == "_gsum" || suffix == "_gcount";
    case T::kSummary: return suffix == "_sum" || suffix == "_count" || suffix == "_created";
    case T::kInfo: return suffix == "_info";
    default: return false;
  }
}

class Parser {
 public:
  Parser(bool openmetrics, const ExpositionLimits& limits) : openmetrics_(openmetrics), limits_(limits) {}

  void line(std::string_view text) {
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (seen_eof_) fail("content after # EOF");
    if (text.empty()) {
      if (openmetrics_) fail("empty line (OpenMetrics allows none)");
      return;
    }
    if (text.front() == '#') return comment(text);
    sample(text);
  }

  Exposition finish() {
    if (openmetrics_ && !seen_eof_) fail("missing # EOF at the end of an OpenMetrics exposition");
    return std::move(out_);
  }

 private:
  void comment(std::string_view text) {
    Cursor c(text, limits_);
    c.expect('#', "'#'");
    c.skip_spaces();
    const std::string_view keyword = c.token();
    if (keyword == "EOF" && openmetrics_) {
      c.skip_spaces();
      if (!c.at_end()) fail("text after # EOF");
      seen_eof_ = true;
      return;
    }
    if (keyword != "HELP" && keyword != "TYPE" && keyword != "UNIT") {
      if (openmetrics_) fail("unknown comment line (OpenMetrics allows HELP, TYPE, UNIT and EOF)");
      return;  // a free comment in the text format
    }
    c.skip_spaces();
    const std::string name = c.name("metric name");
    ScrapedFamily& family = family_named(name);
    if (keyword == "TYPE") {
      c.skip_spaces();
      const std::string_view type_text = c.token();
      auto type = parse_type(type_text);
      if (!type) fail("unknown metric type '" + std::string(type_text) + "'");
      if (typed_.contains(name)) fail("second TYPE line for " + name);
      if (!family.samples.empty()) fail("TYPE line for " + name + " after its samples");
      typed_.insert(name);
      family.type = *type;
      return;
    }
    // HELP and UNIT: the rest of the line, after one space.
    c.take(' ');
    std::string_view rest = c.rest();
    std::string value;
    if (keyword == "HELP") {
      // Escapes in HELP: \\ and \n (and \" in OpenMetrics).
      for (std::size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size()) {
          const char e = rest[++i];
          value.push_back(e == 'n' ? '\n' : e);
        } else {
          value.push_back(rest[i]);
        }
      }
      family.help = std::move(value);
    } else {
      family.unit = std::string(rest);
    }
  }

  void sample(std::string_view text) {
    Cursor c(text, limits_);
    ScrapedSample s;
    if (c.peek() == '{') {
      // {"utf8.name", label="v"}: the name quoted inside the braces.
      c.take('{');
      c.skip_spaces();
      s.name = c.quoted("metric name");
      c.skip_spaces();
      if (c.take(',')) labels(c, s.labels);
      else c.expect('}', "'}' or ','");
    } else {
      s.name = c.name("metric name");
      c.skip_spaces();
      if (c.take('{')) labels(c, s.labels);
    }
    c.skip_spaces();
    if (c.at_end()) fail("expected a value after " + s.name);
    const std::string_view value_text = c.token();
    auto value = parse_float(value_text);
    if (!value) fail("invalid value '" + std::string(value_text.substr(0, 64)) + "'");
    s.value = *value;
    c.skip_spaces();
    if (!c.at_end() && c.peek() != '#') {
      const std::string_view ts_text = c.token();
      s.ts_ns = timestamp(ts_text);
      c.skip_spaces();
    }
    if (!c.at_end()) {
      // An exemplar (OpenMetrics): " # {labels} value [timestamp]", skipped.
      if (!openmetrics_ || !c.take('#')) fail("unexpected text after the value");
    }
    if (s.labels.size() > limits_.max_labels_per_sample) {
      fail("more than " + std::to_string(limits_.max_labels_per_sample) + " labels on one sample");
    }
    sort_labels(s.labels);
    if (++out_.sample_count > limits_.max_samples) {
      fail("more than " + std::to_string(limits_.max_samples) + " samples");
    }
    ScrapedFamily& family = family_of(s.name);
    check_shape(family, s);
    family.samples.push_back(std::move(s));
  }

  void labels(Cursor& c, Labels& out) {
    while (true) {
      c.skip_spaces();
      if (c.take('}')) return;
      const bool quoted_name = c.peek() == '"';
      std::string name = c.name("label name");
      // Colons are for metric names only (a quoted name may hold anything).
      if (!quoted_name && name.find(':') != std::string::npos) fail("label name " + name + " contains ':'");
      c.skip_spaces();
      c.expect('=', "'=' after a label name");
      c.skip_spaces();
      std::string value = c.quoted("label value");
      for (const auto& [k, v] : out) {
        if (k == name) fail("duplicate label " + name);
      }
      // An empty value is the label's absence, as Prometheus reads it.
      if (!value.empty()) out.emplace_back(std::move(name), std::move(value));
      c.skip_spaces();
      if (c.take(',')) continue;
      c.expect('}', "',' or '}' in the label set");
      return;
    }
  }

  std::int64_t timestamp(std::string_view text) const {
    if (openmetrics_) {
      auto seconds = parse_float(text);
      if (!seconds || !std::isfinite(*seconds) || std::fabs(*seconds) > 9.2e9) {
        fail("invalid timestamp '" + std::string(text.substr(0, 64)) + "'");
      }
      return static_cast<std::int64_t>(std::llround(*seconds * 1e9));
    }
    std::int64_t ms = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (ec != std::errc() || end != text.data() + text.size() || ms > 9'200'000'000'000 || ms < -9'200'000'000'000) {
      fail("invalid timestamp '" + std::string(text.substr(0, 64)) + "' (milliseconds expected)");
    }
    return ms * 1'000'000;
  }

  // Buckets carry a numeric le, summary quantiles a numeric quantile.
  static void check_shape(const ScrapedFamily& family, const ScrapedSample& s) {
    auto numeric_label = [&](const char* label) {
      for (const auto& [k, v] : s.labels) {
        if (k == label) {
          if (!parse_float(v)) fail(s.name + ": " + label + "=\"" + v + "\" is not a number");
          return;
        }
      }
      fail(s.name + ": a " + to_string(family.type).data() + " sample without its " + label + " label");
    };
    const bool histogram = family.type == ExpositionType::kHistogram || family.type == ExpositionType::kGaugeHistogram;
    if (histogram && s.name == family.name + "_bucket") numeric_label("le");
    if (family.type == ExpositionType::kSummary && s.name == family.name) numeric_label("quantile");
  }

  ScrapedFamily& family_named(const std::string& name) {
    auto [it, fresh] = index_.try_emplace(name, out_.families.size());
    if (fresh) {
      out_.families.push_back(ScrapedFamily{});
      out_.families.back().name = name;
    }
    return out_.families[it->second];
  }

  // The family a sample belongs to: its own name's, else its name less a suffix its type
  // allows, else a new untyped family.
  ScrapedFamily& family_of(const std::string& sample_name) {
    if (auto it = index_.find(sample_name); it != index_.end()) return out_.families[it->second];
    for (std::string_view suffix : {"_bucket", "_sum", "_count", "_created", "_total", "_info", "_gsum", "_gcount"}) {
      if (sample_name.size() <= suffix.size() || !sample_name.ends_with(suffix)) continue;
      auto it = index_.find(sample_name.substr(0, sample_name.size() - suffix.size()));
      if (it != index_.end() && suffix_allowed(out_.families[it->second].type, suffix)) return out_.families[it->second];
    }
    return family_named(sample_name);
  }

  bool openmetrics_;
  const ExpositionLimits& limits_;
  Exposition out_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_set<std::string> typed_;  // families that had their TYPE line
  bool seen_eof_ = false;
};

}  // namespace

std::string_view to_string(ExpositionType type) {
  switch (type) {
    case ExpositionType::kUntyped: return "untyped";
    case ExpositionType::kCounter: return "counter";
    case ExpositionType::kGauge: return "gauge";
    case ExpositionType::kHistogram: return "histogram";
    case ExpositionType::kSummary: return "summary";
    case ExpositionType::kInfo: return "info";
    case ExpositionType::kStateSet: return "stateset";
    case ExpositionType::kGaugeHistogram: return "gaugehistogram";
  }
  return "untyped";
}

Result<Exposition> parse_exposition(std::string_view text, bool openmetrics, const ExpositionLimits& limits) {
  Parser parser(openmetrics, limits);
  std::size_t line_number = 0;
  try {
    while (!text.empty()) {
      ++line_number;
      const std::size_t end = text.find('\n');
      const std::string_view line = text.substr(0, end);
      // The last line may lack its newline in the text format; OpenMetrics ends with "# EOF\n".
      parser.line(line);
      if (end == std::string_view::npos) break;
      text.remove_prefix(end + 1);
    }
    return parser.finish();
  } catch (const LineError& e) {
    return Status::invalid_argument("line " + std::to_string(line_number) + ": " + e.message, "exposition");
  }
}

bool exposition_is_openmetrics(std::string_view content_type) {
  return content_type.starts_with("application/openmetrics-text");
}

}  // namespace perfscope::server
