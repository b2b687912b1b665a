// GET /api/v1/trace: a window of kernels, launch calls, command buffers and memory operations
// as Chrome Trace Event JSON — one process per device (per rank and device for the ranks of a
// multi-GPU job), one thread per stream or queue, flow arrows from each launch call to its
// kernel and through each collective's kernels across ranks, counters for allocated memory and
// for GPU and host utilization — for Perfetto (ui.perfetto.dev) and chrome://tracing.
//
// Timestamps are microseconds from the window's first event (`metadata.origin_ns` is that
// instant in Unix nanoseconds): epoch microseconds do not fit a double at nanosecond
// resolution.
//
// Events go out in the order the database gives them (kernels by series, then time), not
// sorted: trace viewers sort on load, and a trace of a whole day must not be held in memory.
// The kernels are read twice (once for the origin, once to write them), and the document is
// written to a spooled body (server/http/spooled_body.hpp) as it grows.
#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/http/compression.hpp"
#include "server/http/spooled_body.hpp"
#include "server/service/collectives.hpp"
#include "engine/series/metric_names.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace {

constexpr std::size_t kDefaultMaxEvents = 1'000'000;

// Trace events into a spooled body, which keeps the first write error (finish() returns it).
class TraceWriter {
 public:
  TraceWriter(TimestampNs origin, SpooledBody& body) : origin_(origin), body_(body) { out_ = "{\"traceEvents\":["; }

  int pid(const std::string& process) {
    auto [it, added] = pids_.emplace(process, static_cast<int>(pids_.size()) + 1);
    if (added) meta("process_name", it->second, 0, process);
    return it->second;
  }
  int tid(int pid, const std::string& thread) {
    auto [it, added] = tids_.emplace(std::pair{pid, thread}, static_cast<int>(tids_.size()) + 1);
    if (added) meta("thread_name", pid, it->second, thread);
    return it->second;
  }
  // A complete ("X") event; `args` a JSON object or empty.
  void complete(std::string_view name, std::string_view cat, int pid, int tid, TimestampNs start, TimestampNs end,
                const json& args) {
    begin_event();
    out_ += "\"ph\":\"X\",\"name\":" + quote(name) + ",\"cat\":" + quote(cat) + ",\"pid\":" + std::to_string(pid) +
            ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + micros(start) + ",\"dur\":" + micros_span(end - start);
    if (!args.empty()) out_ += ",\"args\":" + args.dump(-1, ' ', false, json::error_handler_t::replace);
    out_ += '}';
    ++events_;
  }
  // Flow from a launch call (start) into its kernel (finish, bound to the enclosing slice).
  void flow(std::uint64_t id, int pid, int from_tid, TimestampNs from, int to_tid, TimestampNs to) {
    flow_point("s", "launch", id, pid, from_tid, from);
    flow_point("f", "launch", id, pid, to_tid, to);
  }
  // One point of a flow: "s" starts it, "t" steps through a slice, "f" ends it (bound to the
  // slice enclosing `ts`).
  void flow_point(const char* ph, std::string_view name, std::uint64_t id, int pid, int tid, TimestampNs ts) {
    begin_event();
    out_ += std::string("\"ph\":\"") + ph + "\",\"name\":" + quote(name) + ",\"cat\":" + quote(name) +
            ",\"id\":" + std::to_string(id) + ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
            ",\"ts\":" + micros(ts);
    if (*ph == 'f') out_ += ",\"bp\":\"e\"";
    out_ += '}';
  }
  void instant(std::string_view name, std::string_view cat, int pid, int tid, TimestampNs ts, const json& args) {
    begin_event();
    out_ += "\"ph\":\"i\",\"s\":\"t\",\"name\":" + quote(name) + ",\"cat\":" + quote(cat) + ",\"pid\":" +
            std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + micros(ts) +
            ",\"args\":" + args.dump(-1, ' ', false, json::error_handler_t::replace) + '}';
    ++events_;
  }
  void counter(std::string_view name, int pid, TimestampNs ts, std::string_view series, double value) {
    begin_event();
    out_ += "\"ph\":\"C\",\"name\":" + quote(name) + ",\"pid\":" + std::to_string(pid) + ",\"ts\":" + micros(ts) +
            ",\"args\":{" + quote(series) + ":" + json(value).dump() + "}}";
    ++events_;
  }
  std::size_t events() const { return events_; }
  // The document's end; the body is complete when this is ok.
  Status finish(const json& metadata) {
    out_ += "],\"displayTimeUnit\":\"ms\",\"metadata\":" + metadata.dump() + "}";
    return body_.finish(out_);
  }

 private:
  static std::string quote(std::string_view s) { return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace); }
  void begin_event() {
    body_.drain(out_);
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '{';
  }
  void meta(const char* what, int pid, int tid, const std::string& name) {
    begin_event();
    out_ += std::string("\"ph\":\"M\",\"name\":\"") + what + "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
            std::to_string(tid) + ",\"args\":{\"name\":" + quote(name) + "}}";
  }
  std::string micros(TimestampNs ts) const { return micros_span(ts - origin_); }
  static std::string micros_span(TimestampNs ns) {
    char buf[40];
    const char* sign = ns < 0 ? "-" : "";
    const std::uint64_t a = ns < 0 ? static_cast<std::uint64_t>(-ns) : static_cast<std::uint64_t>(ns);
    std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%03" PRIu64, sign, a / 1000, a % 1000);
    return buf;
  }

  const TimestampNs origin_;
  SpooledBody& body_;
  std::string out_;
  bool first_ = true;
  std::size_t events_ = 0;
  std::map<std::string, int> pids_;
  std::map<std::pair<int, std::string>, int> tids_;
};

// A kernel's process in the trace: its GPU, or for a rank of a multi-GPU job the rank on its
// GPU (as trace viewers of such jobs show ranks), so that every rank's track group sits on one
// clock with the others.
std::string process_of(const std::string& device, const Tags& tags) {
  const std::string_view rank = tag_value(tags, "rank");
  return rank.empty() ? "GPU " + device : "rank " + std::string(rank) + " (GPU " + device + ")";
}

std::string dims_text(const std::array<std::uint32_t, 3>& d) {
  return std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]);
}

// One export's writer and what its parts share: the event budget, whether it ran out, flow
// ids, and where each collective kernel went (run, rank or pid, start → process and thread)
// for the flows that link an instance's kernels across ranks.
struct TraceExport {
  TraceWriter& out;
  std::size_t max_events;
  bool truncated = false;
  std::uint64_t flow_id = 0;
  std::map<std::tuple<std::string, std::string, TimestampNs>, std::pair<int, int>> collective_slices;
};

// The first event of any kind: a first pass, which keeps nothing. (An event stored between
// this pass and the next with an earlier time is written with a negative ts, which trace
// viewers take as they take any other.)
Result<TimestampNs> first_event(const db::EventReader& events, const db::TimeRange& range, const db::EventScope& scope,
                                const std::vector<CommandBufferEvent>& buffers) {
  TimestampNs origin = INT64_MAX;
  Status s = events.for_each_kernel(range, scope, [&](const KernelEvent& k) {
    origin = std::min(origin, k.launch_start_ns.value_or(k.start_ns));
  });
  if (!s.ok()) return s;
  for (const auto& b : buffers) origin = std::min(origin, b.enqueue_ns);
  s = events.for_each_memory_event(range, [&](const MemoryEvent& m) { origin = std::min(origin, m.ts_ns); }, scope);
  if (!s.ok()) return s;
  return origin == INT64_MAX ? range.from_ns : origin;
}

// A kernel's slice, its launch call and the flow between them.
void write_kernel(TraceExport& t, const KernelEvent& k) {
  TraceWriter& out = t.out;
  const int pid = out.pid(process_of(k.device, k.tags));
  const int tid = out.tid(pid, k.stream.empty() ? "default stream" : "stream " + k.stream);
  if (k.name.starts_with("nccl")) {  // under both keys a job's ranks may go by
    const std::string run(tag_value(k.tags, "run"));
    if (!tag_value(k.tags, "rank").empty()) t.collective_slices[{run, service::rank_key(k.tags, k.device, true), k.start_ns}] = {pid, tid};
    t.collective_slices[{run, service::rank_key(k.tags, k.device, false), k.start_ns}] = {pid, tid};
  }
  json args = json::object();
  if (!k.variant.empty()) args["variant"] = k.variant;
  if (k.grid) args["grid"] = dims_text(*k.grid);
  if (k.block) args["block"] = dims_text(*k.block);
  if (k.registers_per_thread) args["registers_per_thread"] = *k.registers_per_thread;
  if (k.shared_mem_bytes) args["shared_mem_bytes"] = *k.shared_mem_bytes;
  // Traced copies and memsets (tag op) get the categories profilers give them, and a copy
  // its bandwidth from bytes / duration.
  std::string_view category = "kernel";
  for (const auto& [tk, tv] : k.tags) {
    args[tk] = tv;
    if (tk == "op" && (tv == "memcpy" || tv == "memset")) category = tv == "memcpy" ? "gpu_memcpy" : "gpu_memset";
    std::uint64_t bytes = 0;
    if (tk == "bytes" && k.end_ns > k.start_ns &&
        std::from_chars(tv.data(), tv.data() + tv.size(), bytes).ec == std::errc()) {
      args["bandwidth_GBps"] = static_cast<double>(bytes) / static_cast<double>(k.end_ns - k.start_ns);
    }
  }
  out.complete(k.name, category, pid, tid, k.start_ns, k.end_ns, args);
  if (k.launch_start_ns && k.launch_end_ns) {
    const int host = out.tid(pid, "launch calls (host)");
    out.complete("launch " + k.name, "launch", pid, host, *k.launch_start_ns, *k.launch_end_ns, json::object());
    out.flow(++t.flow_id, pid, host, *k.launch_start_ns, tid, k.start_ns);
  }
}

// Each collective instance as one flow through its ranks' kernels in the order they arrived
// (server/service/collectives.hpp matches them). Returns the flows written.
std::size_t write_collective_flows(TraceExport& t, service::CollectiveJobsBuilder&& collective_jobs) {
  std::size_t flows = 0;
  analysis::CollectiveOptions all_instances;
  all_instances.max_instances_listed = std::numeric_limits<std::size_t>::max();
  for (const service::JobCollectives& job : std::move(collective_jobs).finish(all_instances)) {
    const analysis::CollectiveAnalysis& a = job.analysis;
    for (const analysis::CollectiveInstance& inst : a.instances) {
      const std::vector<std::size_t> order = service::arrival_order(inst);
      // Every point found first: a flow is drawn whole or not at all.
      std::vector<std::pair<int, int>> at;
      for (std::size_t m : order) {
        auto slice = t.collective_slices.find({job.run, a.ranks[inst.ranks[m]].rank, inst.start_ns[m]});
        if (slice == t.collective_slices.end()) break;
        at.push_back(slice->second);
      }
      if (at.size() != order.size() || t.out.events() >= t.max_events) continue;
      const std::uint64_t id = ++t.flow_id;
      for (std::size_t j = 0; j < order.size(); ++j) {
        const char* ph = j == 0 ? "s" : j + 1 == order.size() ? "f" : "t";
        t.out.flow_point(ph, "collective", id, at[j].first, at[j].second, inst.start_ns[order[j]]);
      }
      ++flows;
    }
  }
  return flows;
}

void write_command_buffers(TraceExport& t, const std::vector<CommandBufferEvent>& buffers) {
  for (const CommandBufferEvent& b : buffers) {
    if (t.out.events() >= t.max_events) {
      t.truncated = true;
      break;
    }
    const int pid = t.out.pid("GPU " + b.device);
    const int tid = t.out.tid(pid, "queue " + b.queue);
    t.out.complete(b.id, "command_buffer", pid, tid, b.start_ns, b.end_ns,
                   {{"enqueue_to_submit_ms", static_cast<double>(b.submit_ns - b.enqueue_ns) / 1e6},
                    {"submit_to_complete_ms", static_cast<double>(b.end_ns - b.submit_ns) / 1e6}});
  }
}

// Memory: each operation as an instant, and the allocated total per device as a counter, as
// the engine's tracker keeps them (a free sized by its allocation; module statics apart).
Status write_memory(TraceExport& t, const db::EventReader& events, const db::TimeRange& range,
                    const db::EventScope& scope) {
  MemoryTracker tracker;
  return events.for_each_memory_event(range, [&](const MemoryEvent& event) {
    if (t.out.events() + 2 > t.max_events) {
      t.truncated = true;
      return;
    }
    MemoryEvent m = event;
    tracker.apply(m);
    const int pid = t.out.pid(process_of(m.device, m.tags));
    const int tid = t.out.tid(pid, "memory");
    t.out.instant(std::string(to_string(m.op)) + (m.tag.empty() ? "" : " " + m.tag), "memory", pid, tid, m.ts_ns,
                  {{"address", m.address}, {"size_bytes", m.size_bytes}, {"kind", to_string(m.kind)}});
    t.out.counter("allocated bytes", pid, m.ts_ns, "bytes",
                  static_cast<double>(tracker.statistics(m.device).all.current_bytes));
  }, scope);
}

// Duty-cycled runs: the windows their processes traced (each process marks the same
// wall-clock windows; one span per run and window), so gaps between windows read as untraced.
Result<std::size_t> write_trace_windows(TraceExport& t, const db::SeriesHistory& history, const std::string& run,
                                        const db::TimeRange& range) {
  std::size_t written = 0;
  auto marks = service::marked_windows(history, run, range.from_ns, range.to_ns);
  if (!marks.ok()) return marks.status();
  std::set<std::pair<std::string, TimestampNs>> seen;
  for (const service::MarkedWindow& m : *marks) {
    if (!seen.emplace(m.run, m.window.from_ns).second) continue;
    if (t.out.events() >= t.max_events) {
      t.truncated = true;
      break;
    }
    const int pid = t.out.pid("tracing windows");
    t.out.complete("traced window", "trace_window", pid, t.out.tid(pid, m.run.empty() ? "(no run)" : "run " + m.run),
                   m.window.from_ns, m.window.to_ns, {{"run", m.run}});
    ++written;
  }
  return written;
}

// Utilization counters from the sampled series.
Status write_utilization(TraceExport& t, const db::SeriesHistory& history, const db::TimeRange& range,
                         TimestampNs origin, const std::string& device) {
  for (const char* family : {metric_names::kGpuUtilization, metric_names::kHostCpu}) {
    db::HistoryQuery q;
    q.name = family;
    if (std::string_view(family) == metric_names::kHostCpu) q.matchers = {{"cpu", "total"}};
    q.from_ns = std::max(range.from_ns, origin);
    q.to_ns = range.to_ns;
    q.max_points = 2000;
    auto data = history.query(q);
    if (!data.ok()) return data.status();
    for (const auto& d : *data) {
      const std::string* gpu = d.info.key.label("gpu");
      if (gpu && !device.empty() && *gpu != device) continue;
      const int pid = t.out.pid(gpu ? "GPU " + *gpu : std::string("host"));
      const std::string name = gpu ? "GPU utilization" : "host CPU utilization";
      if (d.downsampled) {
        for (const Bucket& b : d.buckets) t.out.counter(name, pid, b.start_ns, "ratio", b.avg());
      } else {
        for (const Sample& p : d.samples) t.out.counter(name, pid, p.ts_ns, "ratio", p.value);
      }
    }
  }
  return Status();
}

}  // namespace

HttpResponse QueryEndpoints::trace(const HttpRequest& request) const {
  const TimestampNs now = now_ns();
  auto w = window_or(request, "5m", now);
  if (!w.ok()) return status_response(w.status());
  auto max_events = size_param(request, "max_events", kDefaultMaxEvents, 1, 50'000'000);
  if (!max_events.ok()) return status_response(max_events.status());
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  const std::string& device = scope->device;
  const db::TimeRange range{w->all ? 0 : w->from_ns, std::min(w->to_ns, now)};

  auto buffers = sources_.events->command_buffers(range, *scope);
  if (!buffers.ok()) return status_response(buffers.status());
  TimestampNs origin = range.from_ns;
  if (w->all || origin == 0) {
    auto first = first_event(*sources_.events, range, *scope, *buffers);
    if (!first.ok()) return status_response(first.status());
    origin = *first;
  }
  const bool wire_gzip = accepts_gzip(request.accept_encoding);
  auto body = spool_body(spool_dir_, wire_gzip);
  if (!body.ok()) return status_response(body.status());
  TraceWriter out(origin, **body);
  TraceExport t{out, *max_events, false, 0, {}};
  service::CollectiveJobsBuilder collective_jobs(false);  // matched from the same pass
  Status s = sources_.events->for_each_kernel(range, *scope, [&](const KernelEvent& k) {
    if (out.events() >= t.max_events) {
      t.truncated = true;
      return;  // (the reader has no early stop; the rest is read and skipped)
    }
    collective_jobs.add(k);
    write_kernel(t, k);
  });
  if (!s.ok()) return status_response(s);
  std::size_t collective_flows = 0;
  if (!t.collective_slices.empty() && !t.truncated) collective_flows = write_collective_flows(t, std::move(collective_jobs));
  write_command_buffers(t, *buffers);
  if (s = write_memory(t, *sources_.events, range, *scope); !s.ok()) return status_response(s);
  auto trace_windows = write_trace_windows(t, *sources_.history, scope->run, range);
  if (!trace_windows.ok()) return status_response(trace_windows.status());
  if (s = write_utilization(t, *sources_.history, range, origin, device); !s.ok()) return status_response(s);
  json metadata = {{"producer", "perfscope"}, {"origin_ns", origin}, {"window", window_json(*w)},
                   {"device", device.empty() ? json("all") : json(device)}, {"events", out.events()},
                   {"trace_windows", *trace_windows}, {"collective_flows", collective_flows}, {"truncated", t.truncated}};
  if (Status done = out.finish(metadata); !done.ok()) return status_response(done);
  HttpResponse r = spooled_response(std::move(*body), "application/json", wire_gzip);
  r.headers.emplace_back("Content-Disposition", "attachment; filename=\"perfscope-trace.json\"");
  return r;
}

}  // namespace perfscope::server
