// Energy per model against hand-worked figures: one model takes all, several share by compute
// time (by latency when one reports none), no basis or no counter increase gives nothing.
#include <cmath>

#include <gtest/gtest.h>

#include "engine/analysis/energy.hpp"

namespace perfscope::analysis {
namespace {

TEST(Energy, OneModelTakesTheGpusEnergy) {
  const auto r = energy_per_model({{"0", "GPU-a", 600.0, 300.0, 350.0, {}, {}}, {"1", "GPU-b", 400.0, 200.0, 220.0, {}, {}}},
                                  {{"llama", "1", 100, 200, 5000, 1500.0, 3000}});
  ASSERT_TRUE(r.total_joules);
  EXPECT_DOUBLE_EQ(*r.total_joules, 1000);
  ASSERT_EQ(r.models.size(), 1u);
  const ModelEnergy& m = r.models[0];
  EXPECT_EQ(m.attribution, "sole model");
  EXPECT_DOUBLE_EQ(*m.joules, 1000);
  EXPECT_DOUBLE_EQ(*m.joules_per_inference, 5);  // 200 batch-weighted inferences
  EXPECT_DOUBLE_EQ(*m.joules_per_output_token, 0.2);
  EXPECT_DOUBLE_EQ(*m.inferences_per_joule, 0.2);
  EXPECT_DOUBLE_EQ(*m.output_tokens_per_joule, 5);
  EXPECT_FALSE(m.host_joules);  // no RAPL
  // With the host's packages: shared the same way, reported apart.
  const auto host = energy_per_model({{"0", "GPU-a", 600.0, {}, {}, {}, {}}},
                                     {{"a", "", 10, 10, 0, 100.0, 0}, {"b", "", 10, 30, 0, 300.0, 0}}, 80.0);
  EXPECT_DOUBLE_EQ(*host.host_joules, 80);
  EXPECT_DOUBLE_EQ(*host.models[1].host_joules, 60);
  EXPECT_DOUBLE_EQ(*host.models[1].host_joules_per_inference, 2);
  EXPECT_DOUBLE_EQ(*host.models[1].joules, 450);  // the GPU figures unchanged
}

TEST(Energy, SeveralModelsShareByComputeTimeOrLatency) {
  const auto by_compute = energy_per_model({{"0", "GPU-a", 900.0, {}, {}, {}, {}}},
                                           {{"a", "", 10, 10, 0, 300.0, 1000}, {"b", "", 20, 20, 0, 600.0, 500}});
  EXPECT_EQ(by_compute.models[0].attribution, "proportional to compute time");
  EXPECT_DOUBLE_EQ(*by_compute.models[0].joules, 300);
  EXPECT_DOUBLE_EQ(*by_compute.models[1].joules, 600);
  EXPECT_DOUBLE_EQ(*by_compute.models[1].joules_per_inference, 30);
  EXPECT_FALSE(by_compute.models[1].joules_per_output_token);  // no tokens reported
  // One model without compute time: both by latency.
  const auto by_latency = energy_per_model({{"0", "GPU-a", 900.0, {}, {}, {}, {}}},
                                           {{"a", "", 10, 10, 0, 300.0, 1000}, {"b", "", 20, 20, 0, {}, 500}});
  EXPECT_EQ(by_latency.models[0].attribution, "proportional to latency");
  EXPECT_DOUBLE_EQ(*by_latency.models[0].joules, 600);
  // No time to share by: not attributable. A model without requests is left out.
  const auto none = energy_per_model({{"0", "GPU-a", 900.0, {}, {}, {}, {}}},
                                     {{"a", "", 1, 1, 0, 0.0, 0}, {"b", "", 1, 1, 0, 0.0, 0}, {"c", "", 0, 0, 0, {}, 0}});
  ASSERT_EQ(none.models.size(), 2u);
  EXPECT_EQ(none.models[0].attribution, "not attributable");
  EXPECT_FALSE(none.models[0].joules);
  // A counter that went back (driver reload): no energy, the share still said.
  const auto reset = energy_per_model({{"0", "GPU-a", std::nullopt, {}, {}, {}, {}}}, {{"a", "", 5, 5, 0, 10.0, 10}});
  EXPECT_FALSE(reset.total_joules);
  EXPECT_DOUBLE_EQ(*reset.models[0].share, 1);
  EXPECT_FALSE(reset.models[0].joules);
}

TEST(Energy, PowerWhileRequestsWereInFlight) {
  // Requests [10, 20], [15, 30] and [50, 60] (ns): busy 10–30 and 50–60.
  const auto busy = busy_spans({{50, 60}, {15, 30}, {10, 20}});
  ASSERT_EQ(busy.size(), 2u);
  EXPECT_EQ(busy[0].from_ns, 10);
  EXPECT_EQ(busy[0].to_ns, 30);
  EXPECT_EQ(busy[1].from_ns, 50);
  // Readings at 5 (idle), 10 and 30 (span ends included), 40 (idle), 55, and a NaN at 58.
  const PowerDuring p =
      power_during({{5, 100}, {10, 300}, {30, 200}, {40, 90}, {55, 400}, {58, std::nan("")}}, busy);
  EXPECT_EQ(p.readings, 3u);
  EXPECT_DOUBLE_EQ(*p.avg_watts, 300);
  EXPECT_DOUBLE_EQ(*p.peak_watts, 400);
  // No request, or none while a reading was taken: nothing.
  EXPECT_FALSE(power_during({{5, 100}}, {}).avg_watts);
  EXPECT_FALSE(power_during({{5, 100}}, busy).peak_watts);
}

}  // namespace
}  // namespace perfscope::analysis
