// The statistics against values computed by scipy and numpy for recorded samples
// (tests/fixtures/stats: the generating script and its output, versions included).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/analysis/ab_test.hpp"
#include "engine/analysis/stats.hpp"

namespace perfscope::analysis {
namespace {

nlohmann::json load() {
  std::ifstream in(std::string(PERFSCOPE_FIXTURES) + "/stats/scipy_reference.json");
  return nlohmann::json::parse(in);
}

TEST(ScipyReference, MannWhitneyWelchPercentilesAndStd) {
  const nlohmann::json ref = load();
  ASSERT_GE(ref["cases"].size(), 6u);
  for (const auto& c : ref["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto a = c["a"].get<std::vector<double>>(), b = c["b"].get<std::vector<double>>();
    MannWhitney mw = mann_whitney_u(a, b);
    EXPECT_NEAR(mw.u, c["mann_whitney"]["u"].get<double>(), 1e-9);
    EXPECT_NEAR(mw.p_value, c["mann_whitney"]["p_value"].get<double>(), 1e-9) << mw.method;
    Welch w = welch_t_test(a, b);
    EXPECT_NEAR(w.t, c["welch"]["t"].get<double>(), 1e-9);
    EXPECT_NEAR(w.p_value, c["welch"]["p_value"].get<double>(), 1e-9);
    for (const auto& [q, want] : c["percentiles_linear_a"].items()) {
      std::vector<double> work = a;
      EXPECT_NEAR(percentile(work, std::stod(q), PercentileConvention::kLinear), want.get<double>(),
                  1e-9 * std::max(1.0, std::fabs(want.get<double>())))
          << "q=" << q;
    }
    EXPECT_NEAR(moments(a).std, c["std_sample_a"].get<double>(), 1e-9);
  }
}

}  // namespace
}  // namespace perfscope::analysis
