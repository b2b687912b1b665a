// perfscope's entry point: parse the command line, then run the chosen command.
#include <atomic>
#include <csignal>
#include <iostream>

#include "server/cli/cli.hpp"
#include "server/http/log.hpp"
#include "server/cli/serve.hpp"
#include "server/api/version.hpp"
#include "web/embedded_assets.hpp"

namespace {
std::atomic<bool> stop_requested{false};
extern "C" void request_stop(int) { stop_requested = true; }
}  // namespace

int main(int argc, char** argv) {
  using namespace perfscope::server;
  ParsedCommand cmd = parse_command_line(argc, argv);
  configure_logging(cmd.log);  // before any thread starts
  switch (cmd.command) {
    case Command::kExit:
      return cmd.exit_code;
    case Command::kVersion:
      std::cout << "perfscope " << version() << " (" << build_type() << ", " << compiler() << ")\n";
      return 0;
    case Command::kLicenses:
      // The notices first (what a reader looks for), then the licence's full text; both are
      // compiled in with the dashboard, so the binary carries them wherever it is copied.
      for (const char* path : {"/NOTICE.txt", "/LICENSE.txt"}) {
        for (const auto& asset : perfscope::web::embedded_assets()) {
          if (asset.url_path == path) {
            std::cout.write(reinterpret_cast<const char*>(asset.bytes.data()), static_cast<std::streamsize>(asset.bytes.size()));
            std::cout << "\n";
          }
        }
      }
      return 0;
    case Command::kPush:
      return run_push(cmd.push);
    case Command::kImport:
      return run_import(cmd.push, cmd.import);
    case Command::kRun:
      std::signal(SIGINT, request_stop);
      std::signal(SIGTERM, request_stop);
      return run_traced(cmd.run, stop_requested);
    case Command::kRelay:
      std::signal(SIGINT, request_stop);
      std::signal(SIGTERM, request_stop);
      return run_relay(cmd.relay, stop_requested);
    case Command::kDemo:
      std::signal(SIGINT, request_stop);
      std::signal(SIGTERM, request_stop);
      return run_demo(cmd.demo, stop_requested);
    case Command::kHealthcheck:
      return run_healthcheck(cmd.healthcheck_server, cmd.healthcheck_certificate);
    case Command::kReport:
      return run_report(cmd.report);
    case Command::kTop:
      std::signal(SIGINT, request_stop);
      std::signal(SIGTERM, request_stop);
      return run_top(cmd.top, stop_requested);
    case Command::kServe:
      break;
  }
  Server server(cmd.config);
  if (perfscope::Status s = server.start(); !s.ok()) {
    log_error(s.message());
    return 1;
  }
  server.run(/*handle_signals=*/true, [&] {
    // Tests and scripts read this line to find the port (and may signal the server at once).
    const bool tls = !cmd.config.server.tls_cert_file.empty();
    std::cout << "perfscope listening on " << (tls ? "https://" : "http://") << cmd.config.server.listen_host << ":" << server.port() << "/"
              << std::endl;
    log_info("database " + cmd.config.storage.database_path());
  });
  log_info("stopped");
  return 0;
}
