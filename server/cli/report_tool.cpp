// `perfscope report` (a report from a running server or straight from a database file) and
// `perfscope top` (the terminal report, refreshed live).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "db/abtest_store.hpp"
#include "db/event_reader.hpp"
#include "db/sample_reader.hpp"
#include "db/schema.hpp"
#include "db/series_history.hpp"
#include "engine/events/memory_tracker.hpp"
#include "engine/series/series_store.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/client/client.hpp"
#include "server/api/report_format.hpp"
#include "server/cli/tools.hpp"
#include "server/http/spooled_body.hpp"

namespace perfscope::server {

using nlohmann::json;

Status write_file_atomically(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::io_error("cannot write " + tmp);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return Status::io_error("cannot write " + tmp + " (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Status::io_error("cannot replace " + path + ": " + ec.message());
  }
  return Status();
}

namespace {

std::string query_string(const std::map<std::string, std::string>& q) {
  std::string out;
  for (const auto& [k, v] : q) {
    out += out.empty() ? '?' : '&';
    out += k + "=";
    for (unsigned char c : v) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
        out += static_cast<char>(c);
      } else {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", c);
        out += buf;
      }
    }
  }
  return out;
}

// The error a server or handler answered, as one line.
std::string error_text(unsigned status, const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    return "HTTP " + std::to_string(status) + ": " + j["error"].value("message", body);
  }
  return "HTTP " + std::to_string(status) + ": " + body.substr(0, 200);
}

// Everything a report needs, opened read-only over a database file.
class DatabaseReport {
 public:
  static Result<std::unique_ptr<DatabaseReport>> open(const std::string& path) {
    if (!std::filesystem::is_regular_file(path)) return Status::not_found("no database file " + path);
    if (Status s = db::check_database_file(path); !s.ok()) return s;
    auto reader = db::SampleReader::open(path);
    if (!reader.ok()) return reader.status().with_context(path);
    auto r = std::unique_ptr<DatabaseReport>(new DatabaseReport(path, std::move(*reader)));
    // Memory statistics are kept live by the server; from a file they are replayed.
    Status s = r->events_.for_each_memory_event({}, [&](const MemoryEvent& e) {
      MemoryEvent copy = e;
      r->memory_.apply(copy);
    });
    if (!s.ok()) return s.with_context(path);
    return r;
  }
  // The report endpoints over the file's readers alone (no HTTP handler, no live engine).
  QueryEndpoints reports() const {
    return QueryEndpoints(QueryContext{service::Sources{&events_, &history_, &memory_, &abtests_, nullptr,
                                                                        &config_.engine.device_targets, nullptr},
                                       config_.storage.data_dir});
  }

 private:
  DatabaseReport(const std::string& path, std::unique_ptr<db::SampleReader> reader)
      : store_(1), reader_(std::move(reader)), history_(store_, reader_.get()), events_(path), abtests_(path) {}
  AppConfig config_;
  SeriesStore store_;
  std::unique_ptr<db::SampleReader> reader_;
  db::SeriesHistory history_;
  db::EventReader events_;
  db::AbTestReader abtests_;
  MemoryTracker memory_;
};

}  // namespace

// The report from a database file, rendered in process by the same code the endpoint uses.
Result<std::string> report_from_database(const QueryEndpoints& reports, const ReportOptions& o, bool color) {
  ReportQuery query;
  query.format = o.format;
  query.color = color;
  query.table = o.table;
  query.gzip = o.format == "csv" && o.output.size() > 7 && o.output.ends_with(".csv.gz");
  query.analysis.now = now_ns();
  query.analysis.scope = db::EventScope(o.device);
  auto w = parse_window(o.window.empty() ? kDefaultReportWindow : o.window, "", "", query.analysis.now);
  if (!w.ok()) return w.status();
  query.analysis.window = *w;
  if (o.sla_ms > 0) query.analysis.slo.latency_ms = o.sla_ms;
  return reports.report_text(query);
}

int run_report(const ReportOptions& o) {
  const bool to_terminal = o.output.empty() && ::isatty(STDOUT_FILENO);
  unsigned status = 0;
  std::string body;
  if (!o.db.empty()) {
    auto db = DatabaseReport::open(o.db);
    if (!db.ok()) {
      std::cerr << "perfscope report: " << db.status().message() << "\n";
      return 1;
    }
    auto text = report_from_database((*db)->reports(), o, to_terminal);
    if (!text.ok()) {
      std::cerr << "perfscope report: " << text.status().message() << "\n";
      const unsigned code = http_status_for(text.status());
      return code >= 400 && code < 500 ? 2 : 1;
    }
    status = 200;
    body = std::move(*text);
  } else {
    std::map<std::string, std::string> q;
    // The terminal view is rendered here (colour on a TTY); the rest by the server.
    q["format"] = o.format == "terminal" ? "json" : o.format;
    if (!o.window.empty()) q["window"] = o.window;
    if (o.format == "csv") q["table"] = o.table;
    if (o.format == "csv" && o.output.size() > 7 && o.output.ends_with(".csv.gz")) q["compress"] = "gzip";
    if (o.sla_ms > 0) q["sla_ms"] = std::to_string(o.sla_ms);
    if (!o.device.empty()) q["device"] = o.device;
    auto hp = parse_http_url(o.server.empty() ? "http://127.0.0.1:8080" : o.server);
    if (!hp.ok()) {
      std::cerr << "perfscope report: " << hp.status().message() << "\n";
      return 2;
    }
    HttpPoster http(*hp, std::chrono::seconds(120));
    http.set_token(o.token);
    auto r = http.get("/api/v1/report" + query_string(q));
    if (!r.ok()) {
      std::cerr << "perfscope report: " << r.status().message() << "\n";
      return 1;
    }
    status = r->status;
    body = std::move(r->body);
    if (status == 200 && o.format == "terminal") body = render_terminal(json::parse(body), to_terminal);
  }
  if (status != 200) {
    std::cerr << "perfscope report: " << error_text(status, body) << "\n";
    return status >= 400 && status < 500 ? 2 : 1;
  }
  if (o.output.empty()) {
    std::cout << body << std::flush;
    return 0;
  }
  if (Status s = write_file_atomically(o.output, body); !s.ok()) {
    std::cerr << "perfscope report: " << s.message() << "\n";
    return 1;
  }
  std::cerr << "perfscope report: wrote " << o.output << " (" << body.size() << " bytes)\n";
  return 0;
}

int run_healthcheck(const std::string& server, const std::string& pinned_certificate) {
  auto hp = parse_http_url(server);
  if (!hp.ok()) {
    std::cerr << "perfscope healthcheck: " << hp.status().message() << "\n";
    return 2;
  }
  hp->pinned_certificate = pinned_certificate;
  HttpPoster http(*hp, std::chrono::seconds(5));
  auto r = http.get("/healthz");
  if (!r.ok()) {
    std::cerr << "perfscope healthcheck: " << r.status().message() << "\n";
    return 1;
  }
  if (r->status != 200) {
    std::cerr << "perfscope healthcheck: HTTP " << r->status << "\n";
    return 1;
  }
  return 0;
}

int run_top(const TopOptions& o, const std::atomic<bool>& stop) {
  auto hp = parse_http_url(o.server);
  if (!hp.ok()) {
    std::cerr << "perfscope top: " << hp.status().message() << "\n";
    return 2;
  }
  const bool tty = ::isatty(STDOUT_FILENO);
  HttpPoster http(*hp, std::chrono::seconds(30));
  http.set_token(o.token);
  const std::string target = "/api/v1/report" + query_string({{"format", "json"}, {"window", o.window}});
  for (int i = 0; !stop && (o.iterations == 0 || i < o.iterations); ++i) {
    auto r = http.get(target);
    std::string screen;
    if (!r.ok()) {
      screen = "perfscope top: " + r.status().message() + " (retrying)\n";
    } else if (r->status != 200) {
      std::cerr << "perfscope top: " << error_text(r->status, r->body) << "\n";
      return r->status >= 400 && r->status < 500 ? 2 : 1;
    } else {
      screen = render_terminal(json::parse(r->body), tty);
    }
    // On a terminal: redraw in place; piped: one view after another.
    std::cout << (tty ? "\x1b[H\x1b[2J" : (i ? "\n" : "")) << screen << std::flush;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.interval_s);
    while (!stop && std::chrono::steady_clock::now() < until && (o.iterations == 0 || i + 1 < o.iterations)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return 0;
}

}  // namespace perfscope::server
