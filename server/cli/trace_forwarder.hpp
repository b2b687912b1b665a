// Where `perfscope run` and `perfscope relay` send the traced processes' events: NDJSON lines
// batched to the server while it answers, else appended to a fallback file for `perfscope
// import`, with counts of what went where and what the processes dropped. Internal to cli/
// (run_tool.cpp).
//
// Thread-safety: none; one thread (the run's poll loop) owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/base/clock.hpp"
#include "server/client/client.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

// Where the events go: the server while it answers, else the fallback file — and the server
// again once it answers again (asked every kReconnectInterval), so a server's restart costs a
// long-running relay only what arrived meanwhile, which the file keeps.
class Forwarder {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kBatchLines = 5000;
  static constexpr auto kBatchInterval = std::chrono::milliseconds(200);
  static constexpr auto kReconnectInterval = std::chrono::seconds(5);

  Forwarder(const char* what, const std::string& server, const std::string& token, std::string fallback)
      : what_(what), fallback_(std::move(fallback)), token_(token) {
    auto hp = parse_http_url(server);
    if (!hp.ok()) {
      reason_ = hp.status().message();
      return;
    }
    url_ = *hp;
    connect();
  }

  bool to_server() const { return poster_.has_value(); }

  // Asks the server's /healthz; keeps the connection when it answers 200.
  bool connect() {
    last_try_ = Clock::now();
    if (!url_) return false;
    poster_.emplace(*url_, std::chrono::seconds(30));
    poster_->set_token(token_);
    auto r = poster_->get("/healthz");
    if (!r.ok() || r->status != 200) {
      reason_ = r.ok() ? "GET /healthz answered " + std::to_string(r->status) : r.status().message();
      poster_.reset();
      return false;
    }
    return true;
  }
  const std::string& reason() const { return reason_; }

  void add_line(std::string_view line) {
    if (line.empty()) return;
    for (auto& [type, count] : counts_) {
      if (line.find(type) != line.npos) ++count;
    }
    // The trace's own counts (sample events each process's sink writes last) feed the summary
    // and the run's report: records, drops, and the processes that reported.
    if (line.find(R"("metric":"trace_records_dropped")") != line.npos) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object()) dropped_[j["labels"].value("reason", "?")] += j.value("value", 0.0);
    } else if (line.find(R"("metric":"trace_records")") != line.npos) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object()) {
        records_ += j.value("value", 0.0);
        std::int64_t pid = std::atoll(j["labels"].value("pid", "0").c_str());
        if (pid > 0 && std::find(pids_.begin(), pids_.end(), pid) == pids_.end()) pids_.push_back(pid);
      }
    }
    batch_.append(line);
    batch_ += '\n';
    if (++lines_ >= kBatchLines) flush();
  }

  void flush() {
    last_flush_ = Clock::now();
    if (lines_ == 0) return;
    if (!poster_ && url_ && Clock::now() - last_try_ >= kReconnectInterval && connect()) {
      std::cerr << what_ << ": the server answers again; events go to it again (" << written_
                << " events are in " << fallback_ << ")\n";
    }
    if (poster_) {
      // What the server did not get (it went away, perhaps halfway through a split batch): the
      // last `left` lines, kept in the file; none is sent twice.
      if (const std::size_t left = post(batch_, lines_); left > 0) {
        poster_.reset();
        std::size_t start = batch_.size();  // where the last `left` lines begin
        for (std::size_t k = 0; k < left && start > 0; ++k) {
          const std::size_t before = start >= 2 ? batch_.rfind('\n', start - 2) : std::string::npos;
          start = before == std::string::npos ? 0 : before + 1;
        }
        batch_.erase(0, start);
        lines_ = left;
      } else {
        batch_.clear();
        lines_ = 0;
      }
    }
    if (!poster_ && lines_ > 0) write_file();
    batch_.clear();
    lines_ = 0;
  }

  bool due() const { return lines_ > 0 && Clock::now() - last_flush_ >= kBatchInterval; }

  // The run's report as the traced processes' own counts give it (pids, records, drops).
  void complete(RunEvent& run) const {
    for (std::int64_t pid : pids_) {
      if (std::find(run.pids.begin(), run.pids.end(), pid) == run.pids.end()) run.pids.push_back(pid);
    }
    run.records = static_cast<std::uint64_t>(records_);
    double dropped = 0;
    for (const auto& [reason, n] : dropped_) dropped += n;
    run.dropped = static_cast<std::uint64_t>(dropped);
  }

  void print_summary(const std::string& name, const std::string& server, std::size_t processes) const {
    std::cerr << what_ << ": " << name << ": " << counts_.at(R"("type":"kernel")") << " kernels and copies, "
              << counts_.at(R"("type":"memory")") << " memory operations from " << processes << " process"
              << (processes == 1 ? "" : "es");
    if (sent_ > 0) std::cerr << "; " << sent_ << " events sent to " << server;
    if (written_ > 0) std::cerr << "; " << written_ << " events written to " << fallback_ << " (load them with `perfscope import " << fallback_ << "`)";
    if (refused_ > 0) std::cerr << "; " << refused_ << " refused by the server";
    for (const auto& [reason, n] : dropped_) {
      if (n > 0) std::cerr << "; " << static_cast<std::uint64_t>(n) << " records dropped (" << reason << ")";
    }
    std::cerr << "\n";
  }

 private:
  // Posts `n` lines. A batch the server refuses as malformed (400: events are taken all or
  // nothing) is split in halves and each sent again, so one bad line costs itself alone.
  // Returns how many of the lines were not handled because the server went away (0: all sent
  // or refused); they are the last ones, for the caller to keep in the file.
  std::size_t post(std::string_view lines, std::size_t n) {
    auto r = poster_->post("/api/v1/events", "application/x-ndjson", std::string(lines));
    if (!r.ok()) {
      std::cerr << what_ << ": lost the server (" << r.status().message() << "); events go to " << fallback_
                << " until it answers again\n";
      return n;
    }
    if (r->status == 200) {
      sent_ += n;
      return 0;
    }
    if (r->status == 400 && n > 1) {
      std::size_t half = 0, cut = 0;
      for (; half < n / 2; ++half) cut = lines.find('\n', cut) + 1;
      if (std::size_t left = post(lines.substr(0, cut), half); left > 0) return left + (n - half);
      return post(lines.substr(cut), n - half);
    }
    // Refused (a bad line, a bad token, a limit): not retried, so it cannot wedge the run.
    if (refused_ == 0) std::cerr << what_ << ": the server refused events (HTTP " << r->status << "): " << r->body << "\n";
    refused_ += n;
    return 0;
  }

  void write_file() {
    if (!file_.is_open()) file_.open(fallback_, std::ios::app | std::ios::binary);
    file_ << batch_;
    file_.flush();
    if (file_) {
      written_ += lines_;
    } else {
      std::cerr << what_ << ": cannot write " << fallback_ << "\n";
      refused_ += lines_;
    }
  }

  const char* what_;
  std::string fallback_, reason_, token_;
  std::optional<ServerUrl> url_;
  std::optional<HttpPoster> poster_;
  Clock::time_point last_try_ = Clock::now();
  std::ofstream file_;
  std::string batch_;
  std::size_t lines_ = 0;
  Clock::time_point last_flush_ = Clock::now();
  std::uint64_t sent_ = 0, written_ = 0, refused_ = 0;
  std::map<std::string, std::uint64_t> counts_{{R"("type":"kernel")", 0}, {R"("type":"memory")", 0}};
  std::map<std::string, double> dropped_;
  double records_ = 0;
  std::vector<std::int64_t> pids_;
};

}  // namespace perfscope::server
