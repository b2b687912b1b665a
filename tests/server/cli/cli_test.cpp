#include "server/cli/cli.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <vector>

#include "server/api/api.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::server {
namespace {

ParsedCommand parse(std::vector<const char*> args) {
  args.insert(args.begin(), "perfscope");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

// Environment variables set for one test only.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(Cli, HealthcheckFollowsTheListenAddress) {
  EXPECT_EQ(parse({"healthcheck"}).healthcheck_server, "http://127.0.0.1:8080");
  {
    ScopedEnv env("PERFSCOPE_LISTEN", "0.0.0.0:9100");
    EXPECT_EQ(parse({"healthcheck"}).healthcheck_server, "http://127.0.0.1:9100");
    EXPECT_EQ(parse({"healthcheck", "--server", "http://10.0.0.2:1"}).healthcheck_server, "http://10.0.0.2:1");
  }
  ScopedEnv env("PERFSCOPE_LISTEN", "10.1.2.3:9200");
  EXPECT_EQ(parse({"healthcheck"}).command, Command::kHealthcheck);
  EXPECT_EQ(parse({"healthcheck"}).healthcheck_server, "http://10.1.2.3:9200");
}

TEST(Cli, DefaultsMirrorTheDesignDocuments) {
  ParsedCommand c = parse({"serve"});
  ASSERT_EQ(c.command, Command::kServe);
  EXPECT_EQ(c.config.engine.sampling_interval.count(), 100);
  EXPECT_EQ(c.config.engine.history_buffer_size, 10000u);
  EXPECT_EQ(c.config.server.listen_host, "127.0.0.1");
  EXPECT_EQ(c.config.server.listen_port, 8080);
  EXPECT_EQ(c.config.storage.data_dir, "./data");
  EXPECT_TRUE(c.config.engine.enable_host_collector);
}

TEST(Cli, FlagsSetTheConfig) {
  ParsedCommand c = parse({"serve", "--listen", "[::1]:0", "--sampling-interval-ms", "250", "--history-buffer-size",
                           "500", "--enable-host-collector", "false", "--data-dir", "/tmp/x", "--ws-send-queue", "4"});
  ASSERT_EQ(c.command, Command::kServe);
  EXPECT_EQ(c.config.server.listen_host, "::1");
  EXPECT_EQ(c.config.server.listen_port, 0);
  EXPECT_EQ(c.config.engine.sampling_interval.count(), 250);
  EXPECT_EQ(c.config.engine.history_buffer_size, 500u);
  EXPECT_FALSE(c.config.engine.enable_host_collector);
  EXPECT_EQ(c.config.storage.data_dir, "/tmp/x");
  EXPECT_EQ(c.config.server.ws_send_queue_max, 4u);
}

TEST(Cli, RetentionOptionsTakeDurationsAndSizes) {
  ParsedCommand c = parse({"serve", "--retention-raw-max-age", "15d", "--retention-rollup-max-age", "400d",
                           "--retention-max-size", "20GB", "--retention-interval-ms", "5000"});
  ASSERT_EQ(c.command, Command::kServe);
  EXPECT_EQ(c.config.storage.raw_max_age_ns, 15LL * 86'400'000'000'000);
  EXPECT_EQ(c.config.storage.rollup_max_age_ns, 400LL * 86'400'000'000'000);
  EXPECT_EQ(c.config.storage.max_bytes, 20'000'000'000u);
  EXPECT_EQ(c.config.storage.retention_interval.count(), 5000);
  ParsedCommand off = parse({"serve"});
  EXPECT_EQ(off.config.storage.raw_max_age_ns, 0);
  EXPECT_EQ(off.config.storage.max_bytes, 0u);
  for (auto [args, ok] : {std::pair{std::vector<const char*>{"serve", "--retention-max-size", "1.5GiB"}, true},
                          std::pair{std::vector<const char*>{"serve", "--retention-max-size", "-1GB"}, false},
                          std::pair{std::vector<const char*>{"serve", "--retention-raw-max-age", "59s"}, false},
                          std::pair{std::vector<const char*>{"serve", "--retention-raw-max-age", "1m"}, true}}) {
    EXPECT_EQ(parse(args).command == Command::kServe, ok) << args[2];
  }
  EXPECT_EQ(*parse_byte_size("1.5GiB"), 1'610'612'736u);
  EXPECT_EQ(*parse_byte_size("400kB"), 400'000u);
  EXPECT_EQ(*parse_byte_size("0"), 0u);
  for (const char* bad : {"", "GB", "12XB", "1e30", "5 GB"}) EXPECT_FALSE(parse_byte_size(bad).ok()) << bad;
}

TEST(Cli, InvalidValuesExitWithCode2) {
  for (auto args : std::vector<std::vector<const char*>>{
           {"serve", "--sampling-interval-ms", "5"},
           {"serve", "--sampling-interval-ms", "abc"},
           {"serve", "--listen", "127.0.0.1"},
           {"serve", "--listen", "127.0.0.1:70000"},
           {"serve", "--history-buffer-size", "0"},
           {"serve", "--enable-host-collector", "maybe"},
           {"serve", "--procfs", "/nonexistent-proc"},
           {"serve", "--procfs", "/"},  // a directory, but no procfs
           {"serve", "--sysfs", "/nonexistent-sys"},
           {"serve", "--log-level", "loud"},
           {"serve", "--log-format", "xml"},
           {"serve", "--no-such-flag"},
           {"frobnicate"},
           {}}) {
    ParsedCommand c = parse(args);
    EXPECT_EQ(c.command, Command::kExit);
    EXPECT_EQ(c.exit_code, 2) << (args.empty() ? "(no args)" : args.back());
  }
}

TEST(Cli, LoggingOptions) {
  ParsedCommand c = parse({"serve", "--log-level", "warn", "--log-format", "json", "--access-log", "true"});
  ASSERT_EQ(c.command, Command::kServe);
  EXPECT_EQ(c.log.level, LogLevel::kWarn);
  EXPECT_EQ(c.log.format, LogFormat::kJson);
  EXPECT_TRUE(c.log.access);
  ParsedCommand d = parse({"serve"});
  EXPECT_EQ(d.log.level, LogLevel::kInfo);
  EXPECT_EQ(d.log.format, LogFormat::kText);
  EXPECT_FALSE(d.log.access);
  ScopedEnv env("PERFSCOPE_LOG_FORMAT", "json");
  EXPECT_EQ(parse({"serve"}).log.format, LogFormat::kJson);
}

TEST(Cli, HostRootsForANodeAgent) {
  const std::string proc = std::string(PERFSCOPE_FIXTURES) + "/vm/proc";
  const std::string sys = std::string(PERFSCOPE_FIXTURES) + "/sensors/sys";
  ParsedCommand c = parse({"serve", "--procfs", proc.c_str(), "--sysfs", sys.c_str()});
  ASSERT_EQ(c.command, Command::kServe);
  EXPECT_EQ(c.config.engine.procfs, proc);
  EXPECT_EQ(c.config.engine.sysfs, sys);
  ScopedEnv env("PERFSCOPE_PROCFS", proc.c_str());
  EXPECT_EQ(parse({"serve"}).config.engine.procfs, proc);
  EXPECT_EQ(parse({"serve"}).config.engine.sysfs, "/sys");
}

TEST(Cli, HelpExitsWithZero) {
  ParsedCommand c = parse({"serve", "--help"});
  EXPECT_EQ(c.command, Command::kExit);
  EXPECT_EQ(c.exit_code, 0);
}

TEST(Cli, EnvironmentFillsWhatFlagsLeaveOpen) {
  ScopedEnv a("PERFSCOPE_SAMPLING_INTERVAL_MS", "400");
  ScopedEnv b("PERFSCOPE_LISTEN", "127.0.0.1:9001");
  ParsedCommand c = parse({"serve", "--listen", "127.0.0.1:9002"});
  ASSERT_EQ(c.command, Command::kServe);
  EXPECT_EQ(c.config.engine.sampling_interval.count(), 400);
  EXPECT_EQ(c.config.server.listen_port, 9002);  // the flag wins over the environment
}

TEST(Cli, InvalidEnvironmentValueExitsWithCode2) {
  ScopedEnv a("PERFSCOPE_HISTORY_BUFFER_SIZE", "-3");
  EXPECT_EQ(parse({"serve"}).exit_code, 2);
}

TEST(Cli, ConfigFileSetsOptionsAndFlagsOverrideIt) {
  perfscope::testing::TempDir dir;
  const std::string path = dir.file("perfscope.toml");
  std::ofstream(path) << "# perfscope configuration\nsampling-interval-ms = 1000\nhistory-buffer-size = 3600\n"
                         "listen = \"127.0.0.1:9100\"\n";
  ParsedCommand c = parse({"serve", "--config", path.c_str(), "--history-buffer-size", "77"});
  ASSERT_EQ(c.command, Command::kServe);
  EXPECT_EQ(c.config.engine.sampling_interval.count(), 1000);
  EXPECT_EQ(c.config.engine.history_buffer_size, 77u);
  EXPECT_EQ(c.config.server.listen_port, 9100);
  EXPECT_EQ(c.config.config_file, path);

  EXPECT_EQ(parse({"serve", "--config", dir.file("missing.toml").c_str()}).exit_code, 2);

  std::ofstream(dir.file("bad.toml")) << "no-such-option = 1\n";
  EXPECT_EQ(parse({"serve", "--config", dir.file("bad.toml").c_str()}).exit_code, 2);
  std::ofstream(dir.file("range.toml")) << "sampling-interval-ms = 1\n";
  EXPECT_EQ(parse({"serve", "--config", dir.file("range.toml").c_str()}).exit_code, 2);
}

TEST(Cli, EnvironmentWinsOverTheConfigFile) {
  perfscope::testing::TempDir dir;
  std::ofstream(dir.file("c.toml")) << "sampling-interval-ms = 1000\n";
  ScopedEnv a("PERFSCOPE_SAMPLING_INTERVAL_MS", "200");
  ParsedCommand c = parse({"serve", "--config", dir.file("c.toml").c_str()});
  ASSERT_EQ(c.command, Command::kServe);
  EXPECT_EQ(c.config.engine.sampling_interval.count(), 200);
}

// What a parse leaves behind (options given, lists filled, a config file's values) must not
// reach the next parse of a reused parser: each answer equals a fresh parser's.
TEST(Cli, AReusedParserStartsEveryParseFromTheDefaults) {
  perfscope::testing::TempDir dir;
  const std::string config = dir.file("c.toml");
  std::ofstream(config) << "sampling-interval-ms = 1000\nallowed-host = \"a.example\"\nretention-max-size = \"2GB\"\n";
  const std::vector<std::vector<const char*>> lines = {
      {"serve", "--listen", "127.0.0.1:9100", "--cors-allow-origin", "http://a,http://b", "--cardinality-limit",
       "kernel_name=5"},
      {"serve"},
      {"serve", "--config", config.c_str(), "--allowed-host", "b.example"},
      {"serve", "--sampling-interval-ms", "1"},
      {"serve", "--config", config.c_str()},
      {"report", "--format", "md", "--db", "x.db", "--window", "5m"},
      {"report"},
      {"healthcheck", "--server", "http://10.0.0.2:1"},
      {"healthcheck"},
      {"run", "--kinds", "all", "--", "python3", "x.py"},
      {"run", "--", "true"},
      {"top", "-n", "3"},
      {"serve", "--retention-raw-max-age", "15d", "--insecure-no-auth", "true"},
      {"serve"},
  };
  auto fields = [](const ParsedCommand& p) {
    nlohmann::json j = config_to_json(p.config);
    j["command"] = static_cast<int>(p.command);
    j["exit_code"] = p.exit_code;
    j["report"] = {p.report.format, p.report.window, p.report.db, p.report.server};
    j["healthcheck"] = p.healthcheck_server;
    j["run"] = {p.run.kinds, p.run.command};
    j["top"] = p.top.iterations;
    j["allowed_hosts"] = p.config.server.allowed_hosts;
    j["cors"] = p.config.server.cors_origins;
    j["max_bytes"] = p.config.storage.max_bytes;
    j["kernel_name_cap"] = p.config.cardinality[Dimension::kKernelName];
    return j.dump();
  };
  CommandLineParser reused;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::vector<const char*> args : lines) {
      args.insert(args.begin(), "perfscope");
      const int argc = static_cast<int>(args.size());
      EXPECT_EQ(fields(reused.parse(argc, args.data())), fields(parse_command_line(argc, args.data())))
          << "pass " << pass << ", " << args[1] << " " << (argc > 2 ? args[2] : "");
    }
  }
}

TEST(Cli, ScrapeTargetsTakeTheirOptions) {
  ParsedCommand c = parse({"serve", "--scrape", "http://vllm:8000/metrics,job=vllm,interval=5s,label.node=a,sample_limit=9",
                           "--scrape", "https://triton:8002"});
  ASSERT_EQ(c.command, Command::kServe);
  ASSERT_EQ(c.config.engine.scrape_targets.size(), 2u);
  const ScrapeTarget& v = c.config.engine.scrape_targets[0];
  EXPECT_EQ(v.url, "http://vllm:8000/metrics");
  EXPECT_EQ(v.job, "vllm");
  EXPECT_EQ(v.interval.count(), 5000);
  EXPECT_EQ(v.timeout.count(), 5000);  // at most the interval
  EXPECT_EQ(v.labels, (std::vector<std::pair<std::string, std::string>>{{"node", "a"}}));
  EXPECT_EQ(v.sample_limit, 9u);
  EXPECT_EQ(v.series_limit, 5000u);
  EXPECT_EQ(c.config.engine.scrape_targets[1].interval.count(), 15000);
  // A CA file is read at start, and only an https:// target has a use for it.
  const std::string ca = std::string(PERFSCOPE_FIXTURES) + "/scrape/vllm.prom";
  EXPECT_EQ(parse({"serve", "--scrape", ("https://x,ca_file=" + ca).c_str()}).config.engine.scrape_targets.at(0).ca_file, ca);
  EXPECT_EQ(parse({"serve", "--scrape", ("http://x,ca_file=" + ca).c_str()}).exit_code, 2);
}

TEST(Cli, GpuPeaksAndDeviceTargetsFromTheCommandLineAndTheConfigFile) {
  ParsedCommand c = parse({"serve", "--gpu-peak", "H100 NVL,model=H100 NVL,bf16=835,fp8=1670,dram_gb_per_second=3900",
                           "--device-target", "0,min_tflops=300,target_tflops=500,memory_budget=60GiB",
                           "--device-target", "*,min_gb_per_second=1500,power_budget_watts=400"});
  ASSERT_EQ(c.command, Command::kServe);
  ASSERT_EQ(c.config.engine.gpu_peaks.size(), 1u);
  const GpuPeakOverride& p = c.config.engine.gpu_peaks[0];
  EXPECT_EQ(p.match, "H100 NVL");
  EXPECT_EQ(p.model, "H100 NVL");
  EXPECT_EQ(p.tflops, (std::vector<std::pair<std::string, double>>{{"bf16", 835}, {"fp8", 1670}}));
  EXPECT_DOUBLE_EQ(p.dram_bytes_per_second, 3.9e12);
  ASSERT_EQ(c.config.engine.device_targets.size(), 2u);
  const analysis::DeviceTarget& t = c.config.engine.device_targets[0];
  EXPECT_EQ(t.match, "0");
  EXPECT_EQ(t.min_tflops, 300);
  EXPECT_EQ(t.target_tflops, 500);
  EXPECT_EQ(t.memory_budget_bytes, 60.0 * 1024 * 1024 * 1024);
  EXPECT_FALSE(t.power_budget_watts);
  EXPECT_EQ(c.config.engine.device_targets[1].power_budget_watts, 400);

  perfscope::testing::TempDir dir;
  const std::string path = dir.file("perfscope.toml");
  std::ofstream(path) << "device-target = [\"H100,min_tflops=400\"]\ngpu-peak = [\"L40,bf16=181\"]\n";
  ParsedCommand f = parse({"serve", "--config", path.c_str()});
  ASSERT_EQ(f.command, Command::kServe);
  EXPECT_EQ(f.config.engine.device_targets.at(0).min_tflops, 400);
  EXPECT_EQ(f.config.engine.gpu_peaks.at(0).tflops.at(0).second, 181);

  for (const char* bad : {"H100", ",bf16=1", "H100,fp4=10", "H100,bf16=-1", "H100,bf16=x", "H100,bf16"}) {
    EXPECT_EQ(parse({"serve", "--gpu-peak", bad}).exit_code, 2) << bad;
  }
  for (const char* bad : {"*", ",min_tflops=1", "*,min_tflops=0", "*,colour=red", "*,memory_budget=lots",
                          "*,min_tflops=500,target_tflops=400", "*,min_gb_per_second=9,target_gb_per_second=8"}) {
    EXPECT_EQ(parse({"serve", "--device-target", bad}).exit_code, 2) << bad;
  }
}

TEST(Cli, ScrapeTargetsComeFromTheConfigFileToo) {
  perfscope::testing::TempDir dir;
  const std::string path = dir.file("perfscope.toml");
  std::ofstream(path) << "scrape = [\"http://vllm:8000/metrics,job=vllm,interval=5s,series_limit=300\", "
                         "\"https://triton:8002/metrics,label.zone=b\"]\n";
  ParsedCommand c = parse({"serve", "--config", path.c_str()});
  ASSERT_EQ(c.command, Command::kServe);
  ASSERT_EQ(c.config.engine.scrape_targets.size(), 2u);
  EXPECT_EQ(c.config.engine.scrape_targets[0].job, "vllm");
  EXPECT_EQ(c.config.engine.scrape_targets[0].series_limit, 300u);
  EXPECT_EQ(c.config.engine.scrape_targets[1].labels, (std::vector<std::pair<std::string, std::string>>{{"zone", "b"}}));
  std::ofstream(dir.file("bad.toml")) << "scrape = [\"http://x,colour=red\"]\n";
  EXPECT_EQ(parse({"serve", "--config", dir.file("bad.toml").c_str()}).exit_code, 2);
  for (const char* bad : {"ftp://x/metrics", "http://x,interval=10ms", "http://x,label.job=y", "http://x,colour=red",
                          "http://x,interval=5s,timeout=10s", "http://x,sample_limit=0", "http://x,token_file=/nonexistent",
                          "http://x,series_limit=-1", "https://x,ca_file=/nonexistent"}) {
    EXPECT_EQ(parse({"serve", "--scrape", bad}).exit_code, 2) << bad;
  }
}

}  // namespace
}  // namespace perfscope::server
