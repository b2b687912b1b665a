// A/B tests evaluated on the data in their window now: two sides (A/B) or a control and its
// variants (A/B/n, p-values adjusted together by Benjamini–Hochberg), with each side's energy
// per inference when every side is a model, and, for model sides that exist only as a scraped
// server's histograms, what those show and why the tests could not run on them.
//
// The API parses and stores definitions (server/api/abtest_api.cpp); a duration window is
// relative to the time of evaluation ("the last 5 minutes").
//
// A function over the sources; thread-safe as the readers are. Long evaluations stop where the
// request's cancellation asks them to (engine/base/cancellation.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/analysis/ab_test.hpp"
#include "server/service/query_time.hpp"
#include "server/service/scraped_figures.hpp"
#include "server/service/selection.hpp"

namespace perfscope::service {

// A validated, normalized definition.
struct AbDefinition {
  std::string name;
  std::vector<Selector> sides;  // a, b — or the variants of A/B/n, the first being the control
  bool multi = false;
  analysis::AbOptions options;
  std::string window_text = "all";

  // Where side `i` is named in errors: "a", "b" or "variants[i]".
  std::string side_name(std::size_t i) const;
};

// A model side's share of the window's energy (energy per model, a side naming no version
// summing its model's versions).
struct SideEnergy {
  std::string model, version;
  std::set<std::string> attribution;
  std::optional<double> joules, joules_per_inference, joules_per_output_token;
};

// A model side without reported requests, as its scraped servers export it.
struct ScrapedSide {
  std::size_t side = 0;
  ScrapedSelection selection;
  std::optional<ScrapedFigures> figures;  // at kScrapedSummaryQuantiles; none without observations
};

struct AbEvaluation {
  server::TimeWindow window;
  std::optional<std::vector<SideEnergy>> energy;  // when every side is a model
  std::vector<ScrapedSide> scraped;               // empty: every side has its observations
  // A/B: one result. A/B/n: each variant against the control, with its adjusted p-value.
  std::vector<analysis::AbResult> results;
  std::vector<double> p_values_adjusted;
};

// The why of each test that cannot run on a scraped histogram.
struct TestNotRun {
  const char* test;
  const char* why;
};
extern const TestNotRun kTestsNotRunOnHistograms[4];

// cancelled when the request's cancellation asked; not_found (field "<side>.run") for a side
// naming a run perfscope does not know.
Result<AbEvaluation> evaluate_abtest(const Sources& sources, const AbDefinition& definition, TimestampNs now);

}  // namespace perfscope::service
