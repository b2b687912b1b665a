// The service's answers for the views that used to shape their data while rendering: the GPU
// processes of a range narrowed to a GPU or a run and summed per container, pod or namespace;
// what a scraped server's histogram says (percentiles within their buckets, the share within a
// target and the violations it implies, a model's SLO compliance per field); each GPU's DRAM
// ceiling, achieved rate and target checks; energy per GPU, unknown where the counter says
// nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <future>

#include "db/gpu_process_store.hpp"
#include "engine/series/metric_names.hpp"
#include "server/service/device_efficiency.hpp"
#include "server/service/processes.hpp"
#include "server/service/scraped_figures.hpp"
#include "server/service/series_summary.hpp"
#include "support/service_fixture.hpp"

namespace perfscope::service {
namespace {

using testing::kS;

GpuProcessRecord process(const std::string& gpu, std::int64_t pid, TimestampNs first, TimestampNs last,
                         const std::string& pod, double gpu_seconds) {
  GpuProcessRecord r;
  r.gpu = gpu;
  r.gpu_uuid = "GPU-" + gpu;
  r.identity.pid = pid;
  r.identity.start_ticks = 100 + static_cast<std::uint64_t>(pid);
  r.key = r.identity.key();
  r.identity.command = "serve";
  if (!pod.empty()) {
    ContainerIdentity& c = r.identity.container;
    c.runtime = "containerd";
    c.id = std::string(64, static_cast<char>('a' + pid % 6));
    c.pod_uid = "uid-" + pod;
    c.pod_namespace = "ml";
    c.pod_name = pod;
  }
  r.first_seen_ns = first;
  r.last_seen_ns = last;
  r.observed_seconds = static_cast<double>(last - first) / 1e9;
  r.peak_memory_bytes = 1e9;
  r.cpu_seconds = 1;
  if (gpu_seconds > 0) {  // else the driver reported no SM share: unknown, not zero
    r.sm_observed_seconds = r.observed_seconds;
    r.gpu_seconds = gpu_seconds;
    r.energy_joules = 10 * gpu_seconds;
  }
  return r;
}

class ServiceViewsTest : public testing::ServiceFixture {
 protected:
  void store(std::vector<GpuProcessRecord> records) {
    std::promise<Status> done;
    db::store_gpu_processes(*writer_, std::move(records), [&](const Status& s) { done.set_value(s); });
    ASSERT_TRUE(done.get_future().get().ok());
  }
};

TEST_F(ServiceViewsTest, ProcessesAreNarrowedToAGpuAndARunAndSummedPerPod) {
  store({process("0", 11, 1 * kS, 5 * kS, "a", 2), process("0", 12, 2 * kS, 6 * kS, "a", 0),
         process("1", 13, 3 * kS, 9 * kS, "b", 4), process("1", 14, 20 * kS, 30 * kS, "", 1)});
  RunEvent r = testing::run_event("job", 0, 10 * kS);
  r.pids = {11, 13};
  testing::commit(*writer_, {r});

  ProcessQuery all;
  all.to_ns = all.now = 40 * kS;
  all.grouping = ProcessGrouping::kPod;
  auto listed = list_gpu_processes(sources(), all);
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  EXPECT_EQ(listed->processes.size(), 4u);
  ASSERT_EQ(listed->groups.size(), 3u) << "pods a and b, and the processes of no pod";
  EXPECT_EQ(listed->groups[0].key, "") << "sorted by key: no pod first";
  const ProcessGroup& a = listed->groups[1];
  EXPECT_EQ(a.key, "ml/a");
  EXPECT_EQ(a.who.pod_name, "a");
  EXPECT_EQ(a.processes, 2u);
  EXPECT_DOUBLE_EQ(a.peak_memory_bytes_sum, 2e9);
  ASSERT_TRUE(a.gpu_seconds);
  EXPECT_DOUBLE_EQ(*a.gpu_seconds, 2) << "over the process whose share is known only";
  EXPECT_DOUBLE_EQ(*a.energy_joules, 20);

  ProcessQuery one_gpu = all;
  one_gpu.gpu = "GPU-1";  // by UUID
  one_gpu.grouping = ProcessGrouping::kNone;
  auto on_gpu = list_gpu_processes(sources(), one_gpu);
  ASSERT_TRUE(on_gpu.ok());
  EXPECT_EQ(on_gpu->processes.size(), 2u);
  EXPECT_TRUE(on_gpu->groups.empty());

  ProcessQuery of_run = all;
  of_run.run = "job";
  auto in_run = list_gpu_processes(sources(), of_run);
  ASSERT_TRUE(in_run.ok());
  ASSERT_EQ(in_run->processes.size(), 2u) << "the run's pids while it ran";
  EXPECT_EQ(in_run->to_ns, 10 * kS) << "the range narrowed to the run's";
  for (const ListedProcess& l : in_run->processes) EXPECT_TRUE(l.record.identity.pid == 11 || l.record.identity.pid == 13);

  of_run.run = "absent";
  auto unknown = list_gpu_processes(sources(), of_run);
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().field(), "run");

  auto found = gpu_process(sources(), process("1", 13, 0, 0, "", 0).key, "", 40 * kS);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->record.gpu, "1");
  EXPECT_EQ(gpu_process(sources(), "999-1", "", 40 * kS).status().field(), "key");
}

analysis::ScrapedDistribution histogram() {
  analysis::ScrapedDistribution d;
  d.metric = "vllm:e2e_request_latency_seconds";
  // 100 observations: 50 up to 100 ms, 40 more up to 200 ms, 10 more up to 400 ms.
  d.buckets = {{100, 50}, {200, 90}, {400, 100}, {INFINITY, 100}};
  d.count = 100;
  d.sum_ms = 15'000;
  return d;
}

TEST_F(ServiceViewsTest, AScrapedHistogramGivesPercentilesWithinTheirBucketsAndItsShareWithinATarget) {
  const double qs[] = {50, 95};
  ScrapedFigures f = scraped_figures(histogram(), qs, 200.0);
  EXPECT_FALSE(f.summary);
  EXPECT_EQ(f.count, 100);
  ASSERT_TRUE(f.mean_ms);
  EXPECT_DOUBLE_EQ(*f.mean_ms, 150);
  ASSERT_EQ(f.percentiles.size(), 2u);
  ASSERT_TRUE(f.percentiles[0].estimate);
  EXPECT_DOUBLE_EQ(f.percentiles[0].estimate->value, 100) << "the 50th observation closes the first bucket";
  ASSERT_TRUE(f.percentiles[1].estimate);
  EXPECT_DOUBLE_EQ(f.percentiles[1].estimate->lower, 200);
  EXPECT_DOUBLE_EQ(f.percentiles[1].estimate->upper, 400);
  EXPECT_DOUBLE_EQ(f.percentiles[1].estimate->value, 300) << "halfway through the 200-400 ms bucket";
  ASSERT_TRUE(f.sla);
  EXPECT_DOUBLE_EQ(f.sla->share.value, 0.9);
  EXPECT_EQ(f.sla->violations, 10);

  analysis::ScrapedServing m;
  m.server = "vllm";
  m.model = "llama";
  m.fields["latency_ms"] = histogram();
  m.fields["ttft_ms"] = analysis::ScrapedDistribution{};  // exported, no observations
  analysis::ServingSlo slo;
  slo.latency_ms = 100;
  slo.ttft_ms = 50;
  auto models = scraped_models({m}, slo);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].fields.count("latency_ms"), 1u);
  EXPECT_EQ(models[0].fields.count("ttft_ms"), 0u) << "a field without observations has no summary";
  ASSERT_EQ(models[0].compliance.count("latency_ms"), 1u);
  EXPECT_DOUBLE_EQ(models[0].compliance.at("latency_ms").share.value, 0.5);
  EXPECT_EQ(models[0].compliance.count("ttft_ms"), 0u) << "nothing to share out";
}

TEST_F(ServiceViewsTest, AScrapedSummaryGivesOnlyTheQuantilesItExportsAndNoShare) {
  analysis::ScrapedDistribution d;
  d.metric = "tgi_request_duration";
  d.summary = true;
  d.quantiles = {{0.5, 80}, {0.99, 250}};
  d.count = 10;
  const double qs[] = {50, 90, 99};
  ScrapedFigures f = scraped_figures(d, qs, 100.0);
  ASSERT_TRUE(f.percentiles[0].estimate);
  EXPECT_DOUBLE_EQ(f.percentiles[0].estimate->value, 80);
  EXPECT_FALSE(f.percentiles[1].estimate) << "p90 is not exported";
  ASSERT_TRUE(f.percentiles[2].estimate);
  EXPECT_DOUBLE_EQ(f.percentiles[2].estimate->value, 250);
  EXPECT_FALSE(f.sla) << "a summary cannot say a share";
}

TEST(DeviceEfficiency, TheDramCeilingIsTheConfigsThenNvmlsThenTheDatasheetsAndTargetsAreChecked) {
  GpuSpec datasheet;
  datasheet.model = "H100 SXM";
  datasheet.bf16_tensor = 989;
  datasheet.dram_bytes_per_second = 3.35e12;
  GpuDeviceInfo nvml;
  nvml.index = "0";
  nvml.uuid = "GPU-0";
  nvml.name = "NVIDIA H100 80GB HBM3";
  nvml.peak_dram_bandwidth_bytes_per_second = 3.0e12;
  nvml.spec = datasheet;
  GpuDeviceInfo config = nvml;
  config.index = "1";
  config.uuid = "GPU-1";
  config.spec->dram_from_config = true;
  config.spec->dram_bytes_per_second = 2e12;
  GpuDeviceInfo table_only = nvml;
  table_only.index = "2";
  table_only.uuid = "GPU-2";
  table_only.peak_dram_bandwidth_bytes_per_second = 0;
  GpuDeviceInfo unknown;
  unknown.index = "3";
  unknown.uuid = "GPU-3";
  unknown.name = "a GPU of no table";
  EXPECT_STREQ(dram_ceiling(nvml).source, "nvml");
  EXPECT_DOUBLE_EQ(dram_ceiling(nvml).bytes_per_second, 3.0e12);
  EXPECT_STREQ(dram_ceiling(config).source, "config");
  EXPECT_DOUBLE_EQ(dram_ceiling(config).bytes_per_second, 2e12);
  EXPECT_STREQ(dram_ceiling(table_only).source, "datasheet");
  EXPECT_DOUBLE_EQ(dram_ceiling(unknown).bytes_per_second, 0);

  db::KernelSummary gemm;
  gemm.name = "gemm";
  gemm.work_by_device["0"].flops = 2e12;  // 2 TFLOP over one second of executions on GPU 0
  gemm.work_by_device["0"].flops_ns = 1e9;
  analysis::DeviceTarget target;
  target.match = "0";
  target.min_tflops = 4;
  std::optional<double> worst;
  auto devices = device_efficiency({nvml, unknown}, {target}, {}, {gemm}, worst);
  ASSERT_EQ(devices.size(), 2u);
  ASSERT_TRUE(devices[0].achieved.tflops);
  EXPECT_DOUBLE_EQ(devices[0].achieved.tflops->value, 2);
  ASSERT_TRUE(devices[0].target);
  ASSERT_FALSE(devices[0].checks.empty());
  ASSERT_TRUE(worst);
  EXPECT_DOUBLE_EQ(*worst, 0.5) << "2 TFLOP/s against a minimum of 4";
  EXPECT_FALSE(devices[1].achieved.tflops) << "no kernel reported work on GPU 3";
  EXPECT_FALSE(devices[1].target);
}

SeriesSummary summary(const std::string& family, const std::string& uuid, double first, double last, double avg) {
  SeriesSummary s;
  s.key = SeriesKey(family, {{"gpu", uuid.substr(4)}, {"uuid", uuid}});
  s.count = 10;
  s.first = s.min = first;
  s.last = s.peak = last;
  s.avg = avg;
  return s;
}

TEST(EnergyFigures, AGpusJoulesAreItsCountersIncreaseAndUnknownWhereTheCounterStoodStillUnderLoad) {
  using namespace perfscope::metric_names;
  const std::vector<SeriesSummary> series = {
      summary(kGpuEnergy, "GPU-0", 1000, 4000, 2500), summary(kGpuPower, "GPU-0", 300, 300, 300),
      summary(kGpuEnergy, "GPU-1", 500, 500, 500), summary(kGpuPower, "GPU-1", 450, 450, 450)};
  EnergyFigures e = energy_figures(series, {});
  ASSERT_EQ(e.gpus.size(), 2u);
  ASSERT_TRUE(e.gpus[0].joules);
  EXPECT_DOUBLE_EQ(*e.gpus[0].joules, 3000);
  EXPECT_TRUE(e.unknown_joules[0].empty());
  ASSERT_TRUE(e.gpus[0].avg_watts);
  EXPECT_DOUBLE_EQ(*e.gpus[0].avg_watts, 300);
  EXPECT_FALSE(e.gpus[1].joules) << "0 J beside a 450 W average would be a wrong number";
  EXPECT_NE(e.unknown_joules[1].find("did not advance"), std::string::npos);
}

}  // namespace
}  // namespace perfscope::service
