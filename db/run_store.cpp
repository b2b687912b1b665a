#include "db/internal/run_store.hpp"

#include <algorithm>
#include <charconv>

#include "db/run_reader.hpp"
#include "db/internal/connection_pool.hpp"

namespace perfscope::db {
namespace {

constexpr const char* kRunColumns =
    "name, command, host, pids, start_ns, end_ns, exit_status, kinds, records, dropped, gpus, tags, trace_window_ns, "
    "trace_every_ns";

std::string encode_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += std::to_string(item.size()) + ":" + item;
  return out;
}

std::vector<std::string> decode_list(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end == text.data() + text.size() || *end != ':') break;  // corrupt: keep what was read
    const std::size_t at = static_cast<std::size_t>(end - text.data()) + 1;
    if (n > text.size() - at) break;
    out.emplace_back(text.substr(at, n));
    text.remove_prefix(at + n);
  }
  return out;
}

std::vector<std::string> to_strings(const std::vector<std::int64_t>& v) {
  std::vector<std::string> out;
  for (std::int64_t x : v) out.push_back(std::to_string(x));
  return out;
}

std::vector<std::int64_t> to_integers(const std::vector<std::string>& v) {
  std::vector<std::int64_t> out;
  for (const auto& s : v) {
    std::int64_t x = 0;
    if (std::from_chars(s.data(), s.data() + s.size(), x).ec == std::errc()) out.push_back(x);
  }
  return out;
}

template <typename T>
void join_into(std::vector<T>& into, const std::vector<T>& from) {
  for (const T& x : from) {
    if (std::find(into.begin(), into.end(), x) == into.end()) into.push_back(x);
  }
}

RunEvent read_row(const Statement& r) {
  auto opt = [&](int col) { return r.column_is_null(col) ? std::nullopt : std::optional<std::int64_t>(r.column_int64(col)); };
  RunEvent e;
  e.name = r.column_text(0);
  e.command = decode_list(r.column_text(1));
  e.host = r.column_text(2);
  e.pids = to_integers(decode_list(r.column_text(3)));
  e.start_ns = r.column_int64(4);
  e.end_ns = opt(5);
  if (auto x = opt(6)) e.exit_status = static_cast<int>(*x);
  e.kinds = r.column_text(7);
  if (auto x = opt(8)) e.records = static_cast<std::uint64_t>(*x);
  if (auto x = opt(9)) e.dropped = static_cast<std::uint64_t>(*x);
  e.gpus = decode_list(r.column_text(10));
  if (auto tags = parse_labels(r.column_text(11)); tags.ok()) e.tags = std::move(*tags);
  e.trace_window_ns = opt(12);
  e.trace_every_ns = opt(13);
  return e;
}

}  // namespace

void merge_run(RunEvent& stored, const RunEvent& report) {
  stored.start_ns = std::min(stored.start_ns, report.start_ns);
  if (report.end_ns) stored.end_ns = std::max(stored.end_ns.value_or(*report.end_ns), *report.end_ns);
  if (!report.command.empty()) stored.command = report.command;
  if (!report.host.empty()) stored.host = report.host;
  join_into(stored.pids, report.pids);
  if (report.exit_status) stored.exit_status = report.exit_status;
  if (!report.kinds.empty()) stored.kinds = report.kinds;
  if (report.records) stored.records = report.records;
  if (report.dropped) stored.dropped = report.dropped;
  join_into(stored.gpus, report.gpus);
  if (report.trace_window_ns) {
    stored.trace_window_ns = report.trace_window_ns;
    stored.trace_every_ns = report.trace_every_ns;
  }
  for (const auto& tag : report.tags) {
    auto it = std::find_if(stored.tags.begin(), stored.tags.end(), [&](const auto& t) { return t.first == tag.first; });
    if (it == stored.tags.end()) {
      stored.tags.push_back(tag);
    } else {
      it->second = tag.second;
    }
  }
  sort_labels(stored.tags);
}

Result<std::optional<RunEvent>> read_run(Connection& conn, const std::string& name) {
  auto stmt = conn.prepare((std::string("SELECT ") + kRunColumns + " FROM runs WHERE name = ?1").c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, name);
  PERFSCOPE_ASSIGN_OR_RETURN(auto row, stmt->step());
  if (!row) return std::optional<RunEvent>();
  return std::optional<RunEvent>(read_row(*stmt));
}

Status write_run(Connection& conn, const RunEvent& report) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto existing, read_run(conn, report.name));
  RunEvent run = report;
  if (existing) {
    run = std::move(*existing);
    merge_run(run, report);
  }
  auto stmt = conn.prepare(
      (std::string("INSERT OR REPLACE INTO runs(") + kRunColumns + ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)")
          .c_str());
  if (!stmt.ok()) return stmt.status();
  // Bound text is not copied: keep it alive until the statement has run.
  const std::string command = encode_list(run.command), pids = encode_list(to_strings(run.pids)),
                    gpus = encode_list(run.gpus), tags = format_labels(run.tags);
  stmt->bind(1, run.name).bind(2, command).bind(3, run.host).bind(4, pids).bind(5, run.start_ns);
  stmt->bind_optional(6, run.end_ns);
  stmt->bind_optional(7, run.exit_status);
  stmt->bind(8, run.kinds);
  stmt->bind_optional(9, run.records);
  stmt->bind_optional(10, run.dropped);
  stmt->bind(11, gpus).bind(12, tags);
  stmt->bind_optional(13, run.trace_window_ns);
  stmt->bind_optional(14, run.trace_every_ns);
  return stmt->run();
}

Result<std::vector<RunEvent>> RunReader::runs(std::size_t limit) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  auto stmt = conn->prepare(
      (std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY start_ns DESC, name LIMIT ?1").c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
  std::vector<RunEvent> out;
  Status s = stmt->for_each_row([&](Statement& r) { out.push_back(read_row(r)); });
  if (!s.ok()) return s;
  return out;
}

Result<std::optional<RunEvent>> RunReader::run(const std::string& name) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  return read_run(*conn, name);
}

}  // namespace perfscope::db
