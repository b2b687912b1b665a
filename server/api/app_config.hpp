// AppConfig: the one validated configuration struct, built at start-up from flags,
// PERFSCOPE_* environment variables and an optional config file (server/cli/cli.hpp), then
// passed down by const reference: the engine's, the transport's and the storage's settings.
// A plain value.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/events/cardinality.hpp"
#include "engine/collectors/engine_config.hpp"
#include "server/http/config.hpp"

namespace perfscope::server {

struct StorageConfig {
  std::string data_dir = "./data";
  std::chrono::milliseconds commit_interval{1000};
  std::size_t commit_batch_rows = 1000;
  // Retention (db/retention.hpp): 0 disables each limit. Raw rows older than the raw age, or
  // the oldest while the database is over max_bytes, roll up into histogram tiers; tiers
  // older than their age are dropped.
  std::int64_t raw_max_age_ns = 0;
  std::int64_t rollup_max_age_ns = 0;
  std::uint64_t max_bytes = 0;
  std::chrono::milliseconds retention_interval{60000};
  std::string database_path() const { return data_dir + "/perfscope.db"; }
};

struct AppConfig {
  EngineConfig engine;
  ServerConfig server;
  StorageConfig storage;
  CardinalityLimits cardinality;  // distinct values per event dimension (engine/events/cardinality.hpp)
  std::string config_file;  // empty when none was given
};

}  // namespace perfscope::server
