#include "server/cli/option_specs.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>

#include "server/cli/cli.hpp"
#include "server/service/query_time.hpp"

namespace perfscope::server {
namespace {

// A list option's value refused: the message quotes the whole value, the field names the option.
Status bad_spec(const std::string& spec, const std::string& why, const char* option) {
  return Status::invalid_argument("'" + spec + "': " + why, option);
}

// `HEAD,key=value,…`, the form of the list options (--scrape, --gpu-peak, --device-target): the
// head and the pairs, or why not (the message names the whole spec).
struct ListSpec {
  std::string head;
  std::vector<std::pair<std::string, std::string>> items;
};

Result<ListSpec> split_list_spec(const std::string& spec, const char* option) {
  ListSpec out;
  std::size_t start = spec.find(',');
  out.head = spec.substr(0, start);
  while (start != std::string::npos) {
    const std::size_t comma = spec.find(',', start + 1);
    const std::string part = spec.substr(start + 1, comma == std::string::npos ? std::string::npos : comma - start - 1);
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos) return bad_spec(spec, "expected key=value, got '" + part + "'", option);
    out.items.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    start = comma;
  }
  return out;
}

Result<double> positive_number(const std::string& spec, const std::string& key, const std::string& value, const char* option) {
  double v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || !(v > 0) || !std::isfinite(v)) {
    return bad_spec(spec, key + " must be a positive number, got '" + value + "'", option);
  }
  return v;
}

}  // namespace

// `NAME_PART[,model=TEXT][,bf16=TFLOPS]…[,dram_gb_per_second=N]`: one --gpu-peak.
Result<GpuPeakOverride> parse_gpu_peak(const std::string& spec) {
  auto list = split_list_spec(spec, "gpu-peak");
  if (!list.ok()) return list.status();
  GpuPeakOverride o;
  o.match = list->head;
  if (o.match.empty()) return bad_spec(spec, "name a part of the GPU's name first, e.g. 'H100 NVL'", "gpu-peak");
  for (const auto& [key, value] : list->items) {
    if (key == "model") {
      o.model = value;
      continue;
    }
    if (key != "dram_gb_per_second" && !is_data_type(key)) {
      return bad_spec(spec, "unknown key '" + key + "' (model, dram_gb_per_second, or a data type: " + data_type_list() + ")",
                      "gpu-peak");
    }
    auto v = positive_number(spec, key, value, "gpu-peak");
    if (!v.ok()) return v.status();
    if (key == "dram_gb_per_second") o.dram_bytes_per_second = *v * 1e9;
    else o.tflops.emplace_back(key, *v);
  }
  if (o.tflops.empty() && o.dram_bytes_per_second == 0 && o.model.empty()) {
    return bad_spec(spec, "give at least one figure, e.g. bf16=835", "gpu-peak");
  }
  return o;
}

// `MATCH[,min_tflops=N][,target_tflops=N][,min_gb_per_second=N][,target_gb_per_second=N]
// [,memory_budget=SIZE][,power_budget_watts=N]`: one --device-target.
Result<analysis::DeviceTarget> parse_device_target(const std::string& spec) {
  auto list = split_list_spec(spec, "device-target");
  if (!list.ok()) return list.status();
  analysis::DeviceTarget t;
  t.match = list->head;
  if (t.match.empty()) {
    return bad_spec(spec, "name the GPUs first: *, an index, a UUID or a part of the name", "device-target");
  }
  for (const auto& [key, value] : list->items) {
    if (key == "memory_budget") {
      auto bytes = parse_byte_size(value);
      if (!bytes.ok() || *bytes == 0) return bad_spec(spec, "memory_budget must be a size, e.g. 60GiB", "device-target");
      t.memory_budget_bytes = static_cast<double>(*bytes);
      continue;
    }
    std::optional<double>* field = key == "min_tflops"             ? &t.min_tflops
                                   : key == "target_tflops"        ? &t.target_tflops
                                   : key == "min_gb_per_second"    ? &t.min_gb_per_second
                                   : key == "target_gb_per_second" ? &t.target_gb_per_second
                                   : key == "power_budget_watts"   ? &t.power_budget_watts
                                                                   : nullptr;
    if (!field) {
      return bad_spec(spec, "unknown key '" + key + "' (min_tflops, target_tflops, min_gb_per_second, "
                      "target_gb_per_second, memory_budget, power_budget_watts)", "device-target");
    }
    auto v = positive_number(spec, key, value, "device-target");
    if (!v.ok()) return v.status();
    *field = *v;
  }
  if (t.empty()) return bad_spec(spec, "give at least one figure, e.g. min_tflops=300", "device-target");
  if (t.min_tflops && t.target_tflops && *t.min_tflops > *t.target_tflops) {
    return bad_spec(spec, "min_tflops is above target_tflops", "device-target");
  }
  if (t.min_gb_per_second && t.target_gb_per_second && *t.min_gb_per_second > *t.target_gb_per_second) {
    return bad_spec(spec, "min_gb_per_second is above target_gb_per_second", "device-target");
  }
  return t;
}

// `URL[,job=NAME][,interval=15s][,timeout=10s][,label.KEY=VALUE][,sample_limit=N]
// [,series_limit=N][,body_limit=32MB][,token_file=PATH][,ca_file=PATH]`: one --scrape target.
Result<ScrapeTarget> parse_scrape_target(const std::string& spec) {
  ScrapeTarget t;
  auto bad = [&](const std::string& why) {
    return bad_spec(spec, why, "scrape");
  };
  auto list = split_list_spec(spec, "scrape");
  if (!list.ok()) return list.status();
  t.url = list->head;
  if (!t.url.starts_with("http://") && !t.url.starts_with("https://")) return bad("the URL must start with http:// or https://");
  bool timeout_given = false;
  auto duration = [&](const std::string& text, const char* name) -> Result<std::chrono::milliseconds> {
    auto ns = parse_duration_ns(text, name);
    if (!ns.ok()) return bad(ns.status().message());
    if (*ns < 100'000'000 || *ns > 3'600'000'000'000) return bad(std::string(name) + " must be from 100ms to 1h");
    return std::chrono::milliseconds(*ns / 1'000'000);
  };
  for (const auto& [key, value] : list->items) {
    if (key == "job") {
      t.job = value;
    } else if (key == "interval" || key == "timeout") {
      auto d = duration(value, key.c_str());
      if (!d.ok()) return d.status();
      (key == "interval" ? t.interval : t.timeout) = *d;
      timeout_given = timeout_given || key == "timeout";
    } else if (key.starts_with("label.")) {
      const std::string name = key.substr(6);
      if (!is_valid_label_name(name) || name == "job" || name == "instance") {
        return bad("label name '" + name + "' must match [a-zA-Z_][a-zA-Z0-9_]* and not be job or instance");
      }
      t.labels.emplace_back(name, value);
    } else if (key == "sample_limit" || key == "series_limit") {
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n == 0) return bad(key + " must be a positive integer");
      (key == "sample_limit" ? t.sample_limit : t.series_limit) = n;
    } else if (key == "body_limit") {
      auto bytes = parse_byte_size(value);
      if (!bytes.ok() || *bytes < 1024) return bad("body_limit must be a size of at least 1kB, e.g. 32MB");
      t.body_limit = static_cast<std::size_t>(*bytes);
    } else if (key == "token_file") {
      std::ifstream in(value);
      if (!std::getline(in, t.token) || t.token.empty()) return bad("cannot read a token from '" + value + "'");
      while (!t.token.empty() && (t.token.back() == '\r' || t.token.back() == ' ')) t.token.pop_back();
    } else if (key == "ca_file") {
      if (!std::ifstream(value)) return bad("cannot read the CA file '" + value + "'");
      t.ca_file = value;
    } else {
      return bad("unknown key '" + key +
                 "' (job, interval, timeout, label.NAME, sample_limit, series_limit, body_limit, token_file, ca_file)");
    }
  }
  if (!timeout_given) t.timeout = std::min(t.timeout, t.interval);
  if (t.timeout > t.interval) return bad("timeout must not exceed interval");
  if (!t.ca_file.empty() && !t.url.starts_with("https://")) return bad("ca_file needs an https:// URL");
  return t;
}

}  // namespace perfscope::server
