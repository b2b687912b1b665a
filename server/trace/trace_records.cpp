#include "server/trace/trace_records.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace perfscope::trace {

using nlohmann::json;

namespace {

struct KindFlag {
  std::string_view name;
  bool TraceKinds::*flag;
};
constexpr KindFlag kKindFlags[] = {
    {"kernel", &TraceKinds::kernel}, {"memcpy", &TraceKinds::memcpy},   {"memset", &TraceKinds::memset},
    {"launch", &TraceKinds::launch}, {"runtime", &TraceKinds::runtime}, {"driver", &TraceKinds::driver},
    {"memory", &TraceKinds::memory},
};


std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Result<TraceKinds> parse_trace_kinds(std::string_view text) {
  TraceKinds kinds{false, false, false, false, false, false, false};
  if (text == "all") return TraceKinds{true, true, true, true, true, true, false};
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == text.npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    bool known = false;
    for (const auto& k : kKindFlags) {
      if (k.name == item) kinds.*k.flag = known = true;
    }
    if (!known) {
      return Status::invalid_argument("unknown activity kind \"" + std::string(item) +
                                          "\" (kinds: kernel, memcpy, memset, runtime, launch, driver, memory, or all)",
                                      "kinds");
    }
  }
  return kinds;
}

std::string format_trace_kinds(const TraceKinds& kinds) {
  std::string out;
  for (const auto& k : kKindFlags) {
    if (!(kinds.*k.flag)) continue;
    if (!out.empty()) out += ',';
    out += k.name;
  }
  return out;
}

std::string_view memcpy_kind_name(std::uint32_t kind) {
  using namespace cupti_values;
  switch (kind) {
    case kMemcpyHtoD: return "HtoD";
    case kMemcpyDtoH: return "DtoH";
    case kMemcpyHtoA: return "HtoA";
    case kMemcpyAtoH: return "AtoH";
    case kMemcpyAtoA: return "AtoA";
    case kMemcpyAtoD: return "AtoD";
    case kMemcpyDtoA: return "DtoA";
    case kMemcpyDtoD: return "DtoD";
    case kMemcpyHtoH: return "HtoH";
    case kMemcpyPtoP: return "PtoP";
    default: return "unknown";
  }
}

std::string_view memory_kind_name(std::uint32_t kind) {
  using namespace cupti_values;
  switch (kind) {
    case kMemoryPageable: return "pageable";
    case kMemoryPinned: return "pinned";
    case kMemoryDevice: return "device";
    case kMemoryArray: return "array";
    case kMemoryManaged: return "managed";
    case kMemoryDeviceStatic: return "device_static";
    case kMemoryManagedStatic: return "managed_static";
    default: return "unknown";
  }
}

std::uint64_t collective_bytes(const CollectiveRecord& c) {
  static constexpr std::pair<std::string_view, std::uint64_t> kSizes[] = {
      {"ncclInt8", 1},    {"ncclUint8", 1},   {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}, {"ncclFloat16", 2},
      {"ncclBfloat16", 2}, {"ncclInt32", 4},  {"ncclUint32", 4},     {"ncclFloat32", 4},    {"ncclInt64", 8},
      {"ncclUint64", 8},  {"ncclFloat64", 8},
  };
  std::uint64_t element = 0;
  for (const auto& [name, bytes] : kSizes) {
    if (name == c.datatype) element = bytes;
  }
  const bool per_rank = c.func == "AllGather" || c.func == "ReduceScatter";
  return c.count * element * (per_rank ? static_cast<std::uint64_t>(std::max(c.comm_ranks, 1)) : 1);
}

namespace {

// Memory kinds as the PyTorch profiler (Kineto) and Nsight Systems write them in copy names.
std::string_view copy_memory_kind_name(std::uint32_t kind) {
  using namespace cupti_values;
  switch (kind) {
    case kMemoryPageable: return "Pageable";
    case kMemoryPinned: return "Pinned";
    case kMemoryDevice: return "Device";
    case kMemoryArray: return "Array";
    case kMemoryManaged: return "Managed";
    case kMemoryDeviceStatic: return "Device Static";
    case kMemoryManagedStatic: return "Managed Static";
    default: return "Unknown";
  }
}

}  // namespace

// ---- recorded-record form ------------------------------------------------------------------

json record_to_json(const TraceRecord& record) {
  return std::visit(
      [](const auto& r) -> json {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, ApiRecord>) {
          return {{"record", "api"}, {"correlation_id", r.correlation_id}, {"cbid", r.cbid},
                  {"start_ns", r.start_ns}, {"end_ns", r.end_ns}, {"thread_id", r.thread_id}};
        } else if constexpr (std::is_same_v<T, KernelRecord>) {
          return {{"record", "kernel"}, {"name", r.name.str()}, {"correlation_id", r.correlation_id},
                  {"device", r.device}, {"stream", r.stream}, {"start_ns", r.start_ns}, {"end_ns", r.end_ns},
                  {"grid", r.grid}, {"block", r.block}, {"registers_per_thread", r.registers_per_thread},
                  {"static_shared_bytes", r.static_shared_bytes}, {"dynamic_shared_bytes", r.dynamic_shared_bytes}};
        } else if constexpr (std::is_same_v<T, CopyRecord>) {
          return {{"record", r.memset ? "memset" : "memcpy"}, {"copy_kind", r.copy_kind}, {"src_kind", r.src_kind},
                  {"dst_kind", r.dst_kind}, {"bytes", r.bytes}, {"correlation_id", r.correlation_id},
                  {"device", r.device}, {"stream", r.stream}, {"start_ns", r.start_ns}, {"end_ns", r.end_ns}};
        } else if constexpr (std::is_same_v<T, MemoryRecord>) {
          return {{"record", "memory"}, {"op", r.alloc ? "alloc" : "free"}, {"address", r.address},
                  {"bytes", r.bytes}, {"ts_ns", r.ts_ns}, {"device", r.device}, {"memory_kind", r.memory_kind}};
        } else if constexpr (std::is_same_v<T, CommunicatorRecord>) {
          return {{"record", "communicator"}, {"hash", r.hash}, {"ranks", r.ranks}, {"rank", r.rank}};
        } else {
          return {{"record", "collective"}, {"comm_hash", r.comm_hash}, {"comm_ranks", r.comm_ranks},
                  {"comm_rank", r.comm_rank}, {"seq", r.seq}, {"func", r.func}, {"datatype", r.datatype},
                  {"count", r.count}, {"algorithm", r.algorithm}, {"protocol", r.protocol},
                  {"channels", r.channels}, {"thread_id", r.thread_id}, {"ts_ns", r.ts_ns}, {"nodes", r.nodes}};
        }
      },
      record);
}

Result<TraceRecord> record_from_json(const json& j) {
  try {
    const std::string kind = j.at("record").get<std::string>();
    if (kind == "api") {
      return TraceRecord{ApiRecord{j.at("correlation_id"), j.at("cbid"), j.at("start_ns"), j.at("end_ns"),
                                   j.at("thread_id")}};
    }
    if (kind == "kernel") {
      KernelRecord r;
      r.name = j.at("name").get<std::string>();
      r.correlation_id = j.at("correlation_id");
      r.device = j.at("device");
      r.stream = j.at("stream");
      r.start_ns = j.at("start_ns");
      r.end_ns = j.at("end_ns");
      r.grid = j.at("grid");
      r.block = j.at("block");
      r.registers_per_thread = j.at("registers_per_thread");
      r.static_shared_bytes = j.at("static_shared_bytes");
      r.dynamic_shared_bytes = j.at("dynamic_shared_bytes");
      return TraceRecord{std::move(r)};
    }
    if (kind == "memcpy" || kind == "memset") {
      return TraceRecord{CopyRecord{kind == "memset", j.at("copy_kind"), j.at("src_kind"), j.at("dst_kind"),
                                    j.at("bytes"), j.at("correlation_id"), j.at("device"), j.at("stream"),
                                    j.at("start_ns"), j.at("end_ns")}};
    }
    if (kind == "memory") {
      return TraceRecord{MemoryRecord{j.at("op") == "alloc", j.at("address"), j.at("bytes"), j.at("ts_ns"),
                                      j.at("device"), j.at("memory_kind")}};
    }
    if (kind == "communicator") return TraceRecord{CommunicatorRecord{j.at("hash"), j.at("ranks"), j.at("rank")}};
    if (kind == "collective") {
      return TraceRecord{CollectiveRecord{j.at("comm_hash"), j.at("comm_ranks"), j.at("comm_rank"), j.at("seq"),
                                          j.at("func"), j.at("datatype"), j.at("count"), j.at("algorithm"),
                                          j.at("protocol"), j.at("channels"), j.at("thread_id"), j.at("ts_ns"),
                                          j.value("nodes", 1)}};
    }
    return Status::invalid_argument("unknown record \"" + kind + "\"", "record");
  } catch (const json::exception& e) {
    return Status::invalid_argument(std::string("bad record: ") + e.what());
  }
}

// ---- conversion ----------------------------------------------------------------------------

TraceConverter::TraceConverter(ConverterOptions options) : options_(std::move(options)) {}

Tags TraceConverter::base_tags() const {
  Tags tags;
  if (!options_.pid.empty()) tags.emplace_back("pid", options_.pid);
  if (!options_.run.empty()) tags.emplace_back("run", options_.run);
  if (!options_.rank.empty()) {
    tags.emplace_back("rank", options_.rank);
    if (!options_.local_rank.empty()) tags.emplace_back("local_rank", options_.local_rank);
    if (!options_.world_size.empty()) tags.emplace_back("world_size", options_.world_size);
    sort_labels(tags);
  }
  return tags;
}

const std::string& KernelName::intern(std::string_view text) {
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Never destroyed: records still in flight at exit (a forced flush in an exit handler) point
  // into it after static destructors would have run.
  static auto& mu = *new std::mutex;
  static auto& names = *new std::unordered_set<std::string, Hash, std::equal_to<>>;  // guarded by mu
  std::lock_guard lock(mu);
  auto it = names.find(text);
  if (it == names.end()) it = names.emplace(text).first;
  return *it;  // nodes never move: the reference stays valid
}

const std::string& TraceConverter::demangled(const KernelName& kernel) {
  auto it = names_.find(kernel.id());
  if (it != names_.end()) return it->second;
  const std::string& mangled = kernel.str();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                              std::free);
  // Plain C names ("vector_add") are not mangled and stay as they are.
  std::string name = clip_event_text(status == 0 && text ? std::string(text.get()) : mangled);
  if (name.empty()) name = "(unnamed kernel)";
  return names_.emplace(kernel.id(), std::move(name)).first->second;
}

KernelEvent TraceConverter::kernel_event(const KernelRecord& k) {
  KernelEvent e;
  e.name = demangled(k.name);
  e.device = std::to_string(k.device);
  e.stream = std::to_string(k.stream);
  e.start_ns = static_cast<TimestampNs>(k.start_ns);
  e.end_ns = static_cast<TimestampNs>(std::max(k.end_ns, k.start_ns));
  auto dims = [](const std::array<std::int32_t, 3>& d) {
    return std::array<std::uint32_t, 3>{static_cast<std::uint32_t>(std::max(d[0], 1)),
                                        static_cast<std::uint32_t>(std::max(d[1], 1)),
                                        static_cast<std::uint32_t>(std::max(d[2], 1))};
  };
  e.grid = dims(k.grid);
  e.block = dims(k.block);
  e.shared_mem_bytes = std::uint64_t{k.static_shared_bytes} + k.dynamic_shared_bytes;
  e.registers_per_thread = k.registers_per_thread;
  e.tags = base_tags();
  e.tags.emplace_back("dynamic_shared_bytes", std::to_string(k.dynamic_shared_bytes));
  if (e.name != k.name.str()) e.tags.emplace_back("mangled", clip_event_text(k.name.str()));
  e.tags.emplace_back("static_shared_bytes", std::to_string(k.static_shared_bytes));
  sort_labels(e.tags);
  return e;
}

KernelEvent TraceConverter::copy_event(const CopyRecord& c) const {
  KernelEvent e;
  // Named as the PyTorch profiler and Nsight name them; the timeline treats them as
  // memory operations, not compute.
  if (c.memset) {
    e.name = "Memset (" + std::string(copy_memory_kind_name(c.dst_kind)) + ")";
  } else {
    e.name = "Memcpy " + std::string(memcpy_kind_name(c.copy_kind)) + " (" +
             std::string(copy_memory_kind_name(c.src_kind)) + " -> " + std::string(copy_memory_kind_name(c.dst_kind)) + ")";
  }
  e.device = std::to_string(c.device);
  e.stream = std::to_string(c.stream);
  e.start_ns = static_cast<TimestampNs>(c.start_ns);
  e.end_ns = static_cast<TimestampNs>(std::max(c.end_ns, c.start_ns));
  e.tags = base_tags();
  e.tags.emplace_back("bytes", std::to_string(c.bytes));
  e.tags.emplace_back("op", c.memset ? "memset" : "memcpy");
  // The bandwidth is bytes / duration, derived where it is shown: as a tag, a value unique to
  // each copy would make every copy a series of its own.
  if (!c.memset) e.tags.emplace_back("copy_kind", std::string(memcpy_kind_name(c.copy_kind)));
  sort_labels(e.tags);
  return e;
}

MemoryEvent TraceConverter::memory_event(const MemoryRecord& m) const {
  using namespace cupti_values;
  MemoryEvent e;
  e.op = m.alloc ? MemoryOp::kAlloc : MemoryOp::kFree;
  e.address = hex(m.address);
  e.size_bytes = m.bytes;
  switch (m.memory_kind) {
    case kMemoryPageable:
    case kMemoryPinned: e.kind = MemoryKind::kHost; break;
    case kMemoryManaged:
    case kMemoryManagedStatic: e.kind = MemoryKind::kShared; break;
    default: e.kind = MemoryKind::kDevice;
  }
  e.tag = std::string(memory_kind_name(m.memory_kind));
  e.device = std::to_string(m.device);
  e.ts_ns = static_cast<TimestampNs>(m.ts_ns);
  e.tags = base_tags();
  return e;
}

namespace {

bool is_nccl_kernel(const KernelEvent& e) { return e.name.starts_with("ncclDevKernel") || e.name.starts_with("ncclKernel"); }

constexpr std::size_t kLaunchesPerThread = 256;

std::string comm_id(std::uint64_t hash) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

// The kernel's collectives as tags: its communicator (NCCL's hash), that communicator's size
// and this process's rank in it, the operation(s), the bytes nccl-tests would count, and how
// NCCL ran it. All of few values in a job, so kernels stay few series.
void tag_collectives(KernelEvent& e, const std::vector<CollectiveRecord>& colls) {
  const CollectiveRecord& first = colls.front();
  std::uint64_t bytes = 0;
  std::string ops;
  std::vector<std::string_view> seen;
  for (const CollectiveRecord& c : colls) {
    bytes += collective_bytes(c);
    if (std::find(seen.begin(), seen.end(), c.func) != seen.end()) continue;
    seen.push_back(c.func);
    ops += (ops.empty() ? "" : "+") + c.func;
  }
  e.tags.emplace_back("comm", comm_id(first.comm_hash));
  e.tags.emplace_back("comm_ranks", std::to_string(first.comm_ranks));
  e.tags.emplace_back("comm_rank", std::to_string(first.comm_rank));
  e.tags.emplace_back("coll_op", ops);
  if (bytes) e.tags.emplace_back("coll_bytes", std::to_string(bytes));
  if (!first.algorithm.empty()) e.tags.emplace_back("algo", first.algorithm);
  if (!first.protocol.empty()) e.tags.emplace_back("proto", first.protocol);
  e.tags.emplace_back("channels", std::to_string(first.channels));
  if (first.nodes > 1) e.tags.emplace_back("comm_nodes", std::to_string(first.nodes));
  if (colls.size() > 1) e.tags.emplace_back("colls", std::to_string(colls.size()));
  sort_labels(e.tags);
}

}  // namespace

void TraceConverter::add(const TraceRecord& record, std::vector<Event>& out) {
  if (const auto* api = std::get_if<ApiRecord>(&record)) {
    add_api(*api, out);
  } else if (const auto* k = std::get_if<KernelRecord>(&record)) {
    ++stats_.kernels;
    add_gpu_work(k->correlation_id, kernel_event(*k), out);
  } else if (const auto* c = std::get_if<CopyRecord>(&record)) {
    ++stats_.copies;
    add_gpu_work(c->correlation_id, copy_event(*c), out);
  } else if (const auto* m = std::get_if<MemoryRecord>(&record)) {
    ++stats_.memory_operations;
    out.emplace_back(memory_event(*m));
  } else if (std::holds_alternative<CommunicatorRecord>(record)) {
    nccl_plugin_ = true;
  } else if (const auto* coll = std::get_if<CollectiveRecord>(&record)) {
    ++stats_.collectives;
    nccl_plugin_ = true;
    add_collective(*coll, out);
  }
}

void TraceConverter::add_api(const ApiRecord& api, std::vector<Event>& out) {
  ++stats_.api_calls;
  if (calls_.insert_or_assign(api.correlation_id, api).second) call_order_.push_back(api.correlation_id);
  while (calls_.size() > options_.max_pending_calls || call_order_.size() > 2 * options_.max_pending_calls) {
    calls_.erase(call_order_.front());
    call_order_.pop_front();
  }
  release(api.correlation_id, out);
  if (!nccl_plugin_) return;  // nothing to tie to a launch call
  // Each thread's calls in start order (they come in order but for the two domains' nesting).
  auto& launches = launches_by_thread_[api.thread_id];
  const std::pair<std::uint64_t, std::uint32_t> launch{api.start_ns, api.correlation_id};
  launches.insert(std::upper_bound(launches.begin(), launches.end(), launch), launch);
  if (launches.size() > kLaunchesPerThread) launches.pop_front();
  // Descriptions that came before their call.
  std::erase_if(unattached_, [&](const auto& entry) {
    const auto id = attach_collective(entry.first);
    if (id) release(*id, out);
    return id.has_value();
  });
}

std::optional<std::uint32_t> TraceConverter::attach_collective(const CollectiveRecord& c) {
  auto it = launches_by_thread_.find(c.thread_id);
  if (it == launches_by_thread_.end()) return std::nullopt;
  // The newest call on its thread that began before NCCL described the collective: NCCL
  // launches a plan's kernel, then describes its collectives, then launches the next plan's.
  const auto& launches = it->second;
  auto after = std::upper_bound(launches.begin(), launches.end(), c.ts_ns,
                                [](std::uint64_t ts, const auto& l) { return ts < l.first; });
  if (after == launches.begin()) return std::nullopt;
  const std::uint32_t id = std::prev(after)->second;
  auto [entry, added] = collectives_.try_emplace(id);
  if (added) collective_order_.push_back(id);
  entry->second.push_back(c);
  while (collectives_.size() > options_.max_pending_calls || collective_order_.size() > 2 * options_.max_pending_calls) {
    collectives_.erase(collective_order_.front());
    collective_order_.pop_front();
  }
  return id;
}

void TraceConverter::add_collective(CollectiveRecord c, std::vector<Event>& out) {
  if (const auto id = attach_collective(c)) return release(*id, out);
  unattached_.emplace_back(std::move(c), 0);
}

bool TraceConverter::ready(std::uint32_t correlation_id, const KernelEvent& event) const {
  if (!calls_.contains(correlation_id)) return false;
  return !nccl_plugin_ || !is_nccl_kernel(event) || collectives_.contains(correlation_id);
}

void TraceConverter::send(std::uint32_t correlation_id, KernelEvent event, std::vector<Event>& out) {
  if (auto call = calls_.find(correlation_id); call != calls_.end()) {
    event.launch_start_ns = static_cast<TimestampNs>(call->second.start_ns);
    event.launch_end_ns = static_cast<TimestampNs>(call->second.end_ns);
  }
  if (is_nccl_kernel(event)) {
    if (auto colls = collectives_.find(correlation_id); colls != collectives_.end()) {
      tag_collectives(event, colls->second);
      collectives_.erase(colls);  // one kernel per launch call of NCCL's (graphs aside)
    } else if (nccl_plugin_) {
      ++stats_.without_collective;
    }
  }
  out.emplace_back(std::move(event));
}

void TraceConverter::release(std::uint32_t correlation_id, std::vector<Event>& out) {
  auto it = waiting_.find(correlation_id);
  if (it == waiting_.end()) return;
  auto& list = it->second;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (ready(correlation_id, list[i].event)) {
      send(correlation_id, std::move(list[i].event), out);
    } else {
      if (kept != i) list[kept] = std::move(list[i]);
      ++kept;
    }
  }
  list.resize(kept);
  if (list.empty()) waiting_.erase(it);
}

void TraceConverter::add_gpu_work(std::uint32_t correlation_id, KernelEvent event, std::vector<Event>& out) {
  if (ready(correlation_id, event)) return send(correlation_id, std::move(event), out);
  waiting_[correlation_id].push_back(Waiting{std::move(event), 0});
}

void TraceConverter::end_batch(std::vector<Event>& out) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    auto& list = it->second;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (++list[i].batches > options_.max_wait_batches) {
        if (!calls_.contains(it->first)) ++stats_.without_launch;
        send(it->first, std::move(list[i].event), out);
      } else {
        if (kept != i) list[kept] = std::move(list[i]);
        ++kept;
      }
    }
    list.resize(kept);
    it = list.empty() ? waiting_.erase(it) : std::next(it);
  }
  std::erase_if(unattached_, [&](auto& entry) {
    if (++entry.second <= options_.max_wait_batches) return false;
    ++stats_.collectives_unmatched;
    return true;
  });
}

void TraceConverter::finish(std::vector<Event>& out) {
  // In launch order (correlation ids grow with each call), whatever order the map holds them in.
  std::vector<std::pair<std::uint32_t, Waiting*>> left;
  for (auto& [id, list] : waiting_) {
    for (Waiting& w : list) left.emplace_back(id, &w);
  }
  std::stable_sort(left.begin(), left.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [id, w] : left) {
    if (!calls_.contains(id)) ++stats_.without_launch;
    send(id, std::move(w->event), out);
  }
  waiting_.clear();
  stats_.collectives_unmatched += unattached_.size();
  unattached_.clear();
}

}  // namespace perfscope::trace
