// Every shared metric name (engine/series/metric_names.hpp) is a family a collector declares
// with its type, unit and help: a renamed family in a collector fails here, not in a report
// that quietly finds no data.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engine/collectors/gpu_collector.hpp"
#include "engine/collectors/host_collector.hpp"
#include "engine/series/metric_names.hpp"

namespace perfscope {
namespace {

TEST(MetricNames, EachIsAFamilyACollectorDeclares) {
  std::set<std::string> declared;
  for (const MetricFamily& f : HostCollector().families()) declared.insert(f.name);
  for (const MetricFamily& f : GpuCollector().families()) declared.insert(f.name);
  ASSERT_GT(declared.size(), 40u);
  for (const char* name : metric_names::kAll) EXPECT_TRUE(declared.contains(name)) << name << " is declared by no collector";
}

}  // namespace
}  // namespace perfscope
