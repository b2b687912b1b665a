#include "db/internal/kernel_chunks.hpp"

#include <algorithm>

namespace perfscope::db {
namespace {

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}

// The bytes that tell two kernel series apart (not stored; a map key).
void identity_key(const KernelEvent& e, std::string& key) {
  key.clear();
  auto text = [&](std::string_view s) {
    key.append(s);
    key += '\x1f';
  };
  text(e.name);
  text(e.device);
  text(e.variant);
  text(e.stream);
  auto number = [&](std::int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (std::size_t i = 0; i < 3; ++i) number(e.grid ? (*e.grid)[i] : 0);
  for (std::size_t i = 0; i < 3; ++i) number(e.block ? (*e.block)[i] : 0);
  number(e.shared_mem_bytes ? static_cast<std::int64_t>(*e.shared_mem_bytes) : -1);
  number(e.registers_per_thread ? static_cast<std::int64_t>(*e.registers_per_thread) : -1);
  for (double work : {e.flops.value_or(-1.0), e.bytes.value_or(-1.0)}) key.append(reinterpret_cast<const char*>(&work), sizeof work);
  text(e.dtype);
  for (const auto& [k, v] : e.tags) {
    text(k);
    text(v);
  }
}

}  // namespace

void KernelChunk::add(const KernelTiming& t) {
  const std::int64_t duration = t.end_ns - t.start_ns;
  const unsigned char flags = (t.launch_start_ns ? 1 : 0) | (t.launch_end_ns ? 2 : 0);
  data_ += static_cast<char>(flags);
  put_varint(data_, zigzag(t.start_ns - prev_start_));
  put_varint(data_, static_cast<std::uint64_t>(duration));
  if (t.launch_start_ns) put_varint(data_, zigzag(*t.launch_start_ns - t.start_ns));
  if (t.launch_end_ns) put_varint(data_, zigzag(*t.launch_end_ns - t.start_ns));
  prev_start_ = t.start_ns;
  if (count_ == 0) {
    min_ns_ = max_ns_ = duration;
    first_end_ns_ = last_end_ns_ = t.end_ns;
  } else {
    min_ns_ = std::min(min_ns_, duration);
    max_ns_ = std::max(max_ns_, duration);
    first_end_ns_ = std::min(first_end_ns_, t.end_ns);
    last_end_ns_ = std::max(last_end_ns_, t.end_ns);
  }
  total_ns_ += duration;
  ++count_;
}

void KernelChunk::clear() {
  data_.clear();
  count_ = 0;
  prev_start_ = 0;
  total_ns_ = min_ns_ = max_ns_ = 0;
  first_end_ns_ = last_end_ns_ = 0;
}

KernelEvent read_kernel_series(const Statement& r, int c) {
  KernelEvent e;
  e.name = r.column_text(c);
  e.device = r.column_text(c + 1);
  e.variant = r.column_text(c + 2);
  e.stream = r.column_text(c + 3);
  auto u32 = [&](int col) { return static_cast<std::uint32_t>(r.column_int64(col)); };
  if (r.column_int64(c + 4) > 0) e.grid = {u32(c + 4), u32(c + 5), u32(c + 6)};
  if (r.column_int64(c + 7) > 0) e.block = {u32(c + 7), u32(c + 8), u32(c + 9)};
  if (r.column_int64(c + 10) >= 0) e.shared_mem_bytes = static_cast<std::uint64_t>(r.column_int64(c + 10));
  if (r.column_int64(c + 11) >= 0) e.registers_per_thread = u32(c + 11);
  if (r.column_double(c + 12) >= 0) e.flops = r.column_double(c + 12);
  if (r.column_double(c + 13) >= 0) e.bytes = r.column_double(c + 13);
  if (auto tags = parse_labels(r.column_text(c + 14)); tags.ok()) e.tags = std::move(*tags);
  e.dtype = r.column_text(c + 15);
  return e;
}

Result<std::unique_ptr<KernelChunkWriter>> KernelChunkWriter::prepare(Connection& conn) {
  constexpr const char* kWhere =
      "name = ?1 AND device = ?2 AND variant = ?3 AND stream = ?4 AND grid_x = ?5 AND grid_y = ?6 AND grid_z = ?7 "
      "AND block_x = ?8 AND block_y = ?9 AND block_z = ?10 AND shared_mem_bytes = ?11 AND registers_per_thread = ?12 "
      "AND tags = ?13 AND flops = ?14 AND bytes = ?15 AND dtype = ?16";
  auto insert_series = conn.prepare(
      "INSERT INTO kernel_series(name, device, variant, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
      "shared_mem_bytes, registers_per_thread, tags, flops, bytes, dtype) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16) "
      "ON CONFLICT DO NOTHING");
  if (!insert_series.ok()) return insert_series.status();
  auto select_series = conn.prepare((std::string("SELECT id FROM kernel_series WHERE ") + kWhere).c_str());
  if (!select_series.ok()) return select_series.status();
  auto insert_chunk = conn.prepare(
      "INSERT INTO kernel_chunks(series_id, count, total_ns, min_ns, max_ns, first_end_ns, last_end_ns, data) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  if (!insert_chunk.ok()) return insert_chunk.status();
  return std::unique_ptr<KernelChunkWriter>(
      new KernelChunkWriter(std::move(*insert_series), std::move(*select_series), std::move(*insert_chunk)));
}

KernelChunkWriter::KernelChunkWriter(Statement insert_series, Statement select_series, Statement insert_chunk)
    : insert_series_(std::move(insert_series)),
      select_series_(std::move(select_series)),
      insert_chunk_(std::move(insert_chunk)) {}

Status KernelChunkWriter::resolve_series(const KernelEvent& e, Open& open) {
  const std::string tags = format_labels(e.tags);
  auto bind_all = [&](Statement& s) {
    s.bind(1, e.name).bind(2, e.device).bind(3, e.variant).bind(4, e.stream);
    for (int i = 0; i < 3; ++i) {
      s.bind(5 + i, static_cast<std::int64_t>(e.grid ? (*e.grid)[static_cast<std::size_t>(i)] : 0));
      s.bind(8 + i, static_cast<std::int64_t>(e.block ? (*e.block)[static_cast<std::size_t>(i)] : 0));
    }
    s.bind(11, e.shared_mem_bytes ? static_cast<std::int64_t>(*e.shared_mem_bytes) : std::int64_t{-1});
    s.bind(12, e.registers_per_thread ? static_cast<std::int64_t>(*e.registers_per_thread) : std::int64_t{-1});
    s.bind(13, tags);
    s.bind(14, e.flops.value_or(-1.0));
    s.bind(15, e.bytes.value_or(-1.0));
    s.bind(16, e.dtype);
  };
  bind_all(insert_series_);
  if (Status s = insert_series_.run(); !s.ok()) return s;
  bind_all(select_series_);
  auto row = select_series_.step();
  if (!row.ok()) {
    select_series_.reset();
    return row.status();
  }
  open.series_id = *row ? select_series_.column_int64(0) : -1;
  select_series_.reset();
  if (open.series_id < 0) return Status::internal("kernel series row missing after insert");
  return Status();
}

Status KernelChunkWriter::write_chunk(Open& open) {
  const KernelChunk& c = open.chunk;
  Status s = insert_chunk_.bind(1, open.series_id)
                 .bind(2, static_cast<std::int64_t>(c.count()))
                 .bind(3, c.total_ns())
                 .bind(4, c.min_ns())
                 .bind(5, c.max_ns())
                 .bind(6, c.first_end_ns())
                 .bind(7, c.last_end_ns())
                 .bind_blob(8, c.data())
                 .run();
  open.chunk.clear();
  return s;
}

Status KernelChunkWriter::add(const KernelEvent& e) {
  identity_key(e, key_);
  auto it = open_.find(std::string_view(key_));
  if (it == open_.end()) {
    // Distinct series are few (kernels × launch configurations × tag sets); the bound only
    // guards against a producer that puts a unique value in a tag.
    if (open_.size() >= 100'000) {
      if (Status s = flush(); !s.ok()) return s;
      open_.clear();
    }
    it = open_.emplace(key_, Open{}).first;
  }
  Open& open = it->second;
  if (open.series_id < 0) {
    if (Status s = resolve_series(e, open); !s.ok()) return s;
  }
  if (open.chunk.count() == 0) dirty_.push_back(&open);
  open.chunk.add(KernelTiming{e.start_ns, e.end_ns, e.launch_start_ns, e.launch_end_ns});
  if (open.chunk.count() >= kMaxChunk) return write_chunk(open);
  return Status();
}

Status KernelChunkWriter::flush() {
  for (Open* open : dirty_) {
    if (open->chunk.count() == 0) continue;  // written early at kMaxChunk
    if (Status s = write_chunk(*open); !s.ok()) return s;
  }
  dirty_.clear();
  return Status();
}

void KernelChunkWriter::reset() {
  dirty_.clear();
  open_.clear();
}

}  // namespace perfscope::db
