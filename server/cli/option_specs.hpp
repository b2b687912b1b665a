// The list options' values (`HEAD,key=value,…`): one --gpu-peak, --device-target or --scrape
// each, parsed and checked. An error's message quotes the whole value; its field names the
// option. Internal to cli/ (cli.cpp).
#pragma once

#include <string>

#include "engine/analysis/device_targets.hpp"
#include "engine/base/status.hpp"
#include "server/api/app_config.hpp"

namespace perfscope::server {

// `NAME_PART[,model=TEXT][,bf16=TFLOPS]…[,dram_gb_per_second=N]`: one --gpu-peak.
Result<GpuPeakOverride> parse_gpu_peak(const std::string& spec);
// `MATCH[,min_tflops=N][,target_tflops=N][,min_gb_per_second=N][,target_gb_per_second=N]
// [,memory_budget=SIZE][,power_budget_watts=N]`: one --device-target.
Result<analysis::DeviceTarget> parse_device_target(const std::string& spec);
// `URL[,job=NAME][,interval=15s][,timeout=10s][,label.KEY=VALUE][,sample_limit=N]
// [,series_limit=N][,body_limit=32MB][,token_file=PATH][,ca_file=PATH]`: one --scrape target.
Result<ScrapeTarget> parse_scrape_target(const std::string& spec);

}  // namespace perfscope::server
