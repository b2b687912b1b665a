// A real database behind the analysis service, for its tests (tests/server/service/): a writer
// and the readers over one file, gauge samples sent as the sampler sends them, and the sources
// the service reads once everything written is committed. Events to commit are built with
// run_event() and kernel_event().
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "db/sample_reader.hpp"
#include "db/series_history.hpp"
#include "db/writer.hpp"
#include "server/service/sources.hpp"
#include "support/commit_events.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::testing {

inline constexpr TimestampNs kS = 1'000'000'000;
inline constexpr TimestampNs kMs = 1'000'000;

// A run that ended with status 0.
inline RunEvent run_event(const std::string& name, TimestampNs start, TimestampNs end) {
  RunEvent r;
  r.name = name;
  r.command = {"./bench"};
  r.host = "h";
  r.start_ns = start;
  r.end_ns = end;
  r.exit_status = 0;
  return r;
}

// A kernel execution, of `run` when one is named.
inline KernelEvent kernel_event(const std::string& name, TimestampNs start, TimestampNs duration,
                                const std::string& run = "", const std::string& variant = "") {
  KernelEvent k;
  k.name = name;
  k.variant = variant;
  k.start_ns = start;
  k.end_ns = start + duration;
  if (!run.empty()) k.tags = {{"run", run}};
  return k;
}

class ServiceFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = db::Writer::open(dir_.file("service.db"), store_, memory_);
    ASSERT_TRUE(w.ok()) << w.status().message();
    writer_ = std::move(*w);
    events_ = std::make_unique<db::EventReader>(dir_.file("service.db"));
  }

  // Gauge samples through the store and the writer, as the sampler gives them.
  void samples(const MetricFamily& family, const Labels& labels, const std::vector<std::pair<TimestampNs, double>>& points) {
    store_.declare(family);
    const SeriesId id = store_.intern(SeriesKey(family.name, labels));
    for (const auto& [ts, value] : points) {
      auto b = std::make_shared<const SampleBatch>(SampleBatch{ts, {{id, value}}});
      store_.append(*b);
      writer_->enqueue(b);
    }
  }

  // The sources as the server gives them, once everything written is committed.
  const service::Sources& sources() {
    writer_->flush();
    auto reader = db::SampleReader::open(dir_.file("service.db"));
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    samples_ = std::move(*reader);
    history_ = std::make_unique<db::SeriesHistory>(store_, samples_.get());
    sources_ = service::Sources{events_.get(), history_.get(), &memory_, nullptr, nullptr, nullptr, nullptr};
    return sources_;
  }

  TempDir dir_;
  SeriesStore store_{64};
  MemoryTracker memory_;
  std::unique_ptr<db::Writer> writer_;
  std::unique_ptr<db::EventReader> events_;
  std::unique_ptr<db::SampleReader> samples_;
  std::unique_ptr<db::SeriesHistory> history_;
  service::Sources sources_;
};

}  // namespace perfscope::testing
