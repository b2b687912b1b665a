// GPM's metrics of a GPU, and its NVLink traffic per link and per directly wired GPU.
#include <map>

#include "engine/collectors/gpu_device.hpp"

namespace perfscope {

using namespace gpu_detail;

// Per link, and per GPU at the far end of direct links (their sum): the traffic of each pair
// where the board wires GPUs to each other. Through NVSwitches a link carries traffic to any
// GPU, so there only the links are known.
void GpuCollector::collect_nvlinks(Gpu& g, const nvml::GpmMetricsRequest& req, unsigned first, std::vector<Reading>& out) {
  std::map<std::string, std::pair<double, double>> by_peer;  // rx, tx
  for (std::size_t k = 0; k < g.nvlinks.size(); ++k) {
    const auto& rx = req.metrics[first + 2 * k];
    const auto& tx = req.metrics[first + 2 * k + 1];
    if (rx.nvml_return != nvml::kSuccess || tx.nvml_return != nvml::kSuccess) {
      g.unsupported.insert("gpu_nvlink_link_rx_bytes_per_second");
      continue;
    }
    const auto& [link, peer] = g.nvlinks[k];
    const double rx_bps = on_grid(rx.value * 1048576.0, kTrafficResolution), tx_bps = on_grid(tx.value * 1048576.0, kTrafficResolution);
    Labels l = g.labels;
    l.emplace_back("link", std::to_string(link));
    l.emplace_back("peer", peer);
    sort_labels(l);
    out.push_back({SeriesKey("gpu_nvlink_link_rx_bytes_per_second", l), rx_bps});
    out.push_back({SeriesKey("gpu_nvlink_link_tx_bytes_per_second", std::move(l)), tx_bps});
    if (peer != "nvswitch" && peer != "other") {
      by_peer[peer].first += rx_bps;
      by_peer[peer].second += tx_bps;
    }
  }
  for (const auto& [peer, traffic] : by_peer) {
    Labels l = g.labels;
    l.emplace_back("peer", peer);
    sort_labels(l);
    out.push_back({SeriesKey("gpu_nvlink_peer_rx_bytes_per_second", l), traffic.first});
    out.push_back({SeriesKey("gpu_nvlink_peer_tx_bytes_per_second", std::move(l)), traffic.second});
  }
}

void GpuCollector::collect_gpm(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out) {
  const nvml::Api& a = lib_->api();
  if (g.gpm_prev_ns > 0 && now_ns - g.gpm_prev_ns < kGpmMinIntervalNs) return;  // too soon: keep the older sample
  if (!check(g, a.gpm_sample_get(g.handle, g.gpm_cur), "gpm")) return;
  if (g.gpm_prev_ns > 0) {
    nvml::GpmMetricsRequest& req = *g.gpm_request;
    std::memset(&req, 0, sizeof req);
    req.version = 1;
    req.num_metrics = static_cast<unsigned>(std::size(kGpmMetrics));
    req.sample1 = g.gpm_prev;
    req.sample2 = g.gpm_cur;
    for (unsigned i = 0; i < req.num_metrics; ++i) req.metrics[i].metric_id = kGpmMetrics[i].id;
    // Each active link's receive and transmit (NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC is 62, then
    // TX, then the next link's), after the table's metrics.
    const unsigned first_link_metric = req.num_metrics;
    for (const auto& [link, peer] : g.nvlinks) {
      req.metrics[req.num_metrics++].metric_id = kGpmNvLinkFirstMetric + 2 * link;
      req.metrics[req.num_metrics++].metric_id = kGpmNvLinkFirstMetric + 2 * link + 1;
    }
    if (check(g, a.gpm_metrics_get(&req), "gpm")) {
      for (unsigned i = 0; i < first_link_metric; ++i) {
        if (req.metrics[i].nvml_return != nvml::kSuccess) {
          g.unsupported.insert(kGpmMetrics[i].family);
          continue;
        }
        const double value = on_grid(req.metrics[i].value * kGpmMetrics[i].scale, kGpmMetrics[i].resolution);
        out.push_back({SeriesKey(kGpmMetrics[i].family, g.labels), value});
        if (kGpmMetrics[i].id == 10 && g.info.peak_dram_bandwidth_bytes_per_second > 0) {
          out.push_back({SeriesKey(metric_names::kGpuDramBandwidth, g.labels),
                         on_grid(value * g.info.peak_dram_bandwidth_bytes_per_second, kDramBandwidthResolution)});
        }
        // Tensor activity is busy time of any tensor pipe, whatever its data type: against the
        // BF16/FP16 peak, an estimate (FP8 work at full activity would read as half its rate).
        // The datasheet's peak is at the maximum SM clock; a GPU held at its power limit runs
        // slower (an H100 under a long bf16 GEMM: 1,355 of 1,980 MHz), so the peak is scaled by
        // this pass's SM clock: unscaled, the estimate read 37 % high there, scaled 6 % low
        // (bench/RESULTS.md).
        if (kGpmMetrics[i].id == 5 && g.info.spec && g.info.spec->bf16_tensor > 0) {
          const double clock_share = g.sm_clock_hertz > 0 && g.info.max_sm_clock_hertz > 0
                                         ? std::min(1.0, g.sm_clock_hertz / g.info.max_sm_clock_hertz)
                                         : 1.0;
          out.push_back({SeriesKey(metric_names::kGpuTensorEstimate, g.labels),
                         on_grid(value * g.info.spec->bf16_tensor * 1e12 * clock_share, kTensorFlopsResolution)});
        }
      }
      collect_nvlinks(g, req, first_link_metric, out);
    }
  }
  std::swap(g.gpm_prev, g.gpm_cur);
  g.gpm_prev_ns = now_ns;
}

}  // namespace perfscope
