#include "engine/events/cardinality.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <utility>
#include <type_traits>

namespace perfscope {

namespace {

constexpr std::string_view kDimensionNames[kDimensionCount] = {
    "kernel_name", "variant", "stream", "device", "model", "operator", "memory_tag", "tag_key", "tag_value", "series",
    "all_tag_values",
};

// A full set looks for stale values at most this often: a producer hammering a full set
// must not pay a sweep per event.
constexpr std::int64_t kSweepEveryNs = 60'000'000'000;

std::string series_key(const SampleEvent& e) { return e.metric + '{' + format_labels(e.labels) + '}'; }

}  // namespace

std::string_view dimension_name(Dimension d) { return kDimensionNames[static_cast<std::size_t>(d)]; }

std::optional<Dimension> dimension_from(std::string_view name) {
  for (std::size_t i = 0; i < kDimensionCount; ++i) {
    if (kDimensionNames[i] == name) return static_cast<Dimension>(i);
  }
  return std::nullopt;
}

Status CardinalityLimits::parse(std::string_view text) {
  CardinalityLimits parsed = *this;  // all or nothing
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view entry = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (entry.empty()) continue;
    const std::size_t eq = entry.find('=');
    const std::optional<Dimension> d = dimension_from(entry.substr(0, eq));
    std::size_t value = 0;
    const char* first = eq == std::string_view::npos ? entry.end() : entry.data() + eq + 1;
    const auto [end, ec] = std::from_chars(first, entry.data() + entry.size(), value);
    if (!d || eq == std::string_view::npos || ec != std::errc{} || end != entry.data() + entry.size() ||
        first == end) {
      std::string names;
      for (std::string_view n : kDimensionNames) names += (names.empty() ? "" : ", ") + std::string(n);
      return Status::invalid_argument("cardinality limit '" + std::string(entry) +
                                          "' is not NAME=COUNT with NAME one of " + names,
                                      "cardinality_limit");
    }
    parsed[*d] = value;
  }
  *this = parsed;
  return Status();
}

bool CardinalityGuard::ValueSet::admit(std::string_view value, std::size_t limit, TimestampNs now,
                                       std::int64_t window_ns) {
  if (auto it = last_seen_.find(value); it != last_seen_.end()) {
    it->second = now;
    return true;
  }
  if (limit != 0 && last_seen_.size() >= limit) {
    if (window_ns <= 0 || now - last_sweep_ < kSweepEveryNs) return false;
    last_sweep_ = now;
    sweep(now, window_ns);
    if (last_seen_.size() >= limit) return false;
  }
  last_seen_.emplace(std::string(value), now);
  return true;
}

std::size_t CardinalityGuard::ValueSet::sweep(TimestampNs now, std::int64_t window_ns) {
  return std::erase_if(last_seen_, [&](const auto& kv) { return now - kv.second > window_ns; });
}

CardinalityGuard::CardinalityGuard(CardinalityLimits limits)
    : limits_(std::move(limits)),
      window_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.window).count()) {}

void CardinalityGuard::check(Dimension d, std::string& value, TimestampNs now, std::size_t& folded,
                             BatchAdmitted& admitted) {
  if (value.empty() || value == kOtherValue) return;
  std::string_view& last = admitted[static_cast<std::size_t>(d)];
  if (value == last) return;
  if (set_of(d).admit(value, limits_[d], now, window_ns_)) {
    last = value;
    return;
  }
  value = kOtherValue;
  ++folded_[static_cast<std::size_t>(d)];
  ++folded;
}

void CardinalityGuard::check_tags(Tags& tags, TimestampNs now, std::size_t& folded) {
  bool dropped = false;
  for (auto& [key, value] : tags) {
    // Keys never expire: each holds a set of values, and the key cap is what bounds those.
    if (!set_of(Dimension::kTagKey).admit(key, limits_[Dimension::kTagKey], now, 0)) {
      key.clear();
      dropped = true;
      ++folded_[static_cast<std::size_t>(Dimension::kTagKey)];
      ++folded;
      continue;
    }
    if (value.empty() || value == kOtherValue) continue;
    auto it = tag_values_.find(key);
    if (it == tag_values_.end()) it = tag_values_.emplace(key, ValueSet{}).first;
    ValueSet& values = it->second;
    if (!values.contains(value) && !room_for_tag_value(now)) {
      value = kOtherValue;
      ++folded_[static_cast<std::size_t>(Dimension::kAllTagValues)];
      ++folded;
      continue;
    }
    const std::size_t before = values.size();  // admit may sweep as well as add
    const bool admitted = values.admit(value, limits_[Dimension::kTagValue], now, window_ns_);
    all_tag_values_ = all_tag_values_ + values.size() - before;
    if (!admitted) {
      value = kOtherValue;
      ++folded_[static_cast<std::size_t>(Dimension::kTagValue)];
      ++folded;
    }
  }
  if (dropped) std::erase_if(tags, [](const auto& kv) { return kv.first.empty(); });
}

bool CardinalityGuard::room_for_tag_value(TimestampNs now) {
  const std::size_t limit = limits_[Dimension::kAllTagValues];
  if (limit == 0 || all_tag_values_ < limit) return true;
  if (window_ns_ <= 0 || now - last_all_tag_sweep_ < kSweepEveryNs) return false;
  last_all_tag_sweep_ = now;
  for (auto& [key, values] : tag_values_) all_tag_values_ -= values.sweep(now, window_ns_);
  return all_tag_values_ < limit;
}

Status CardinalityGuard::admit_series(const std::vector<Event>& events, TimestampNs now) {
  const std::size_t limit = limits_[Dimension::kSeries];
  ValueSet& series = set_of(Dimension::kSeries);
  std::vector<std::string> fresh;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto* sample = std::get_if<SampleEvent>(&events[i]);
    if (!sample) continue;
    std::string key = series_key(*sample);
    if (series.contains(key) || std::find(fresh.begin(), fresh.end(), key) != fresh.end()) continue;
    if (limit != 0 && series.size() + fresh.size() >= limit) {
      ++refused_[static_cast<std::size_t>(Dimension::kSeries)];
      return Status::invalid_argument(
          "event " + std::to_string(i) + ": a new custom series " + key + " would pass the cap of " +
              std::to_string(limit) + " series (--cardinality-limit series=N); is a request id in its metric name " +
              "or labels?",
          "metric");
    }
    fresh.push_back(std::move(key));
  }
  for (std::string& key : fresh) series.insert(std::move(key), now);
  return Status();
}

Status CardinalityGuard::apply(std::vector<Event>& events, TimestampNs now, std::size_t* folded_out) {
  std::size_t folded = 0;
  std::lock_guard lock(mu_);
  if (Status s = admit_series(events, now); !s.ok()) return s;
  BatchAdmitted admitted{};
  // Each named value of an event against its dimension's cap (folded into [other] past it).
  auto fold = [&](std::initializer_list<std::pair<Dimension, std::string*>> values) {
    for (auto [dimension, value] : values) check(dimension, *value, now, folded, admitted);
  };
  for (Event& event : events) {
    std::visit(
        [&](auto& e) {
          using T = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<T, KernelEvent>) {
            fold({{Dimension::kKernelName, &e.name}, {Dimension::kVariant, &e.variant}, {Dimension::kStream, &e.stream},
                  {Dimension::kDevice, &e.device}});
          } else if constexpr (std::is_same_v<T, MemoryEvent>) {
            fold({{Dimension::kMemoryTag, &e.tag}, {Dimension::kDevice, &e.device}});
          } else if constexpr (std::is_same_v<T, CommandBufferEvent>) {
            fold({{Dimension::kStream, &e.queue}, {Dimension::kDevice, &e.device}});
          } else if constexpr (std::is_same_v<T, InferenceEvent>) {
            fold({{Dimension::kModel, &e.model}, {Dimension::kModel, &e.version}});
          } else if constexpr (std::is_same_v<T, OperatorEvent>) {
            fold({{Dimension::kOperator, &e.op_type}, {Dimension::kOperator, &e.name}, {Dimension::kModel, &e.model}});
          } else if constexpr (std::is_same_v<T, RunEvent>) {
            // A run's name is the value its events carry as the tag run=NAME: one count.
            Tags name_tag = {{"run", std::move(e.name)}};
            check_tags(name_tag, now, folded);
            e.name = name_tag.empty() ? std::string(kOtherValue) : std::move(name_tag.front().second);
          }
          if constexpr (!std::is_same_v<T, SampleEvent>) check_tags(e.tags, now, folded);
        },
        event);
  }
  if (folded_out) *folded_out = folded;
  return Status();
}

std::vector<DimensionStats> CardinalityGuard::stats() const {
  std::lock_guard lock(mu_);
  std::vector<DimensionStats> out;
  for (std::size_t i = 0; i < kDimensionCount; ++i) {
    const auto d = static_cast<Dimension>(i);
    DimensionStats s{d, limits_[d], sets_[i].size(), folded_[i], refused_[i]};
    if (d == Dimension::kTagValue) {
      for (const auto& [key, set] : tag_values_) s.distinct = std::max(s.distinct, set.size());
    }
    if (d == Dimension::kAllTagValues) s.distinct = all_tag_values_;
    out.push_back(s);
  }
  return out;
}

}  // namespace perfscope
