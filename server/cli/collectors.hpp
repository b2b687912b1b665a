// The collectors `perfscope serve` can run, in one table, as node_exporter registers its
// collectors: the name /api/v1/info and /metrics give each, the option that turns it on or
// off, whether a configuration has it on, and how it is built. A new collector is a row in
// collectors.cpp; serve adds every enabled one to the sampler, which times each pass of each.
//
// Thread-safety: the table is immutable; build() runs on the thread that starts the server.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "engine/collectors/pod_directory.hpp"
#include "engine/collectors/process_tracker.hpp"
#include "engine/series/collector.hpp"
#include "engine/series/series_store.hpp"
#include "server/api/app_config.hpp"

namespace perfscope::server {

// What the collectors are built with beside the configuration: the store (a scrape collector
// declares its targets' families there) and the tracker GPU processes' lifetime records go to.
struct CollectorDeps {
  SeriesStore& store;
  ProcessTracker& processes;
  PodDirectory& pods;  // filled by the kubelet collector, read by the GPU collector
};

struct CollectorSpec {
  std::string_view name;    // as Collector::name() gives it
  std::string_view option;  // the `serve` option (and its environment variable) that switches it
  bool (*enabled)(const AppConfig&);
  std::unique_ptr<Collector> (*build)(const AppConfig&, const CollectorDeps&);
};

// Every collector, in the order the sampler runs them.
std::span<const CollectorSpec> collector_specs();

}  // namespace perfscope::server
