#include "db/internal/migrations.hpp"

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "db/internal/kernel_chunks.hpp"
#include "db/internal/sample_chunks.hpp"

namespace perfscope::db {
namespace {

Status kernels_into_chunks(Connection& conn);
Status samples_into_chunks(Connection& conn);
Status enable_incremental_vacuum(Connection& conn);

// One schema step: SQL, then optionally code that moves data the SQL cannot. A step that
// rebuilds a table others reference runs with foreign keys off and checks them before it
// commits (SQLite's procedure for schema changes ALTER TABLE cannot make).
struct Migration {
  const char* sql;
  Status (*convert)(Connection&) = nullptr;
  bool rebuilds_tables = false;
  // Runs before the step's transaction, in transactions of its own: work too large for one,
  // done so that an interrupted run resumes where it stopped.
  Status (*prepare)(Connection&) = nullptr;
};

// Append-only: never edit a released step; add a new one.
const std::array kMigrations = {
    // 1: series catalogue and raw samples, clustered by series then time.
    Migration{R"sql(
      CREATE TABLE series (
        id     INTEGER PRIMARY KEY,
        name   TEXT NOT NULL,
        labels TEXT NOT NULL,
        unit   TEXT NOT NULL DEFAULT '',
        type   TEXT NOT NULL DEFAULT 'gauge',
        help   TEXT NOT NULL DEFAULT '',
        UNIQUE (name, labels)
      );
      CREATE TABLE samples (
        series_id INTEGER NOT NULL REFERENCES series(id),
        ts_ns     INTEGER NOT NULL,
        value     REAL NOT NULL,
        PRIMARY KEY (series_id, ts_ns)
      ) WITHOUT ROWID;
    )sql"},
    // 2: events reported by applications. Tags in label text form (`a="x",b="y"`).
    Migration{R"sql(
      CREATE TABLE kernels (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL, device TEXT NOT NULL, variant TEXT NOT NULL, stream TEXT NOT NULL,
        start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
        grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER,
        shared_mem_bytes INTEGER, registers_per_thread INTEGER,
        launch_start_ns INTEGER, launch_end_ns INTEGER,
        tags TEXT NOT NULL
      );
      CREATE INDEX kernels_by_end ON kernels(end_ns);
      CREATE INDEX kernels_by_name ON kernels(name, end_ns);
      CREATE TABLE memory_events (
        id INTEGER PRIMARY KEY,
        op TEXT NOT NULL CHECK (op IN ('alloc', 'free')), address TEXT NOT NULL,
        size_bytes INTEGER NOT NULL, kind TEXT NOT NULL, tag TEXT NOT NULL, device TEXT NOT NULL,
        ts_ns INTEGER NOT NULL, tags TEXT NOT NULL
      );
      CREATE INDEX memory_events_by_ts ON memory_events(ts_ns);
      CREATE TABLE command_buffers (
        id INTEGER PRIMARY KEY,
        buffer_id TEXT NOT NULL, queue TEXT NOT NULL, device TEXT NOT NULL,
        enqueue_ns INTEGER NOT NULL, submit_ns INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
        tags TEXT NOT NULL
      );
      CREATE INDEX command_buffers_by_end ON command_buffers(end_ns);
      CREATE TABLE inference (
        id INTEGER PRIMARY KEY,
        model TEXT NOT NULL, version TEXT NOT NULL, ts_ns INTEGER NOT NULL, latency_ms REAL NOT NULL,
        queue_ms REAL, compute_ms REAL, batch_size INTEGER NOT NULL, ok INTEGER NOT NULL,
        ttft_ms REAL, input_tokens INTEGER, output_tokens INTEGER, tags TEXT NOT NULL
      );
      CREATE INDEX inference_by_ts ON inference(ts_ns);
      CREATE INDEX inference_by_model ON inference(model, ts_ns);
      CREATE TABLE operators (
        id INTEGER PRIMARY KEY,
        op_type TEXT NOT NULL, name TEXT NOT NULL, provider TEXT NOT NULL, duration_ms REAL NOT NULL,
        model TEXT NOT NULL, input_shapes TEXT NOT NULL, ts_ns INTEGER NOT NULL, tags TEXT NOT NULL
      );
      CREATE INDEX operators_by_ts ON operators(ts_ns);
    )sql"},
    // 3: kernels as series plus packed chunks (kernel_chunks.hpp); rows of step 2 move over.
    Migration{R"sql(
      CREATE TABLE kernel_series (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL, device TEXT NOT NULL, variant TEXT NOT NULL, stream TEXT NOT NULL,
        grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
        block_x INTEGER NOT NULL, block_y INTEGER NOT NULL, block_z INTEGER NOT NULL,
        shared_mem_bytes INTEGER NOT NULL, registers_per_thread INTEGER NOT NULL,
        tags TEXT NOT NULL,
        UNIQUE (name, device, variant, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                shared_mem_bytes, registers_per_thread, tags)
      );
      CREATE TABLE kernel_chunks (
        id INTEGER PRIMARY KEY,
        series_id INTEGER NOT NULL REFERENCES kernel_series(id),
        count INTEGER NOT NULL, total_ns INTEGER NOT NULL, min_ns INTEGER NOT NULL, max_ns INTEGER NOT NULL,
        first_end_ns INTEGER NOT NULL, last_end_ns INTEGER NOT NULL,
        data BLOB NOT NULL
      );
      CREATE INDEX kernel_chunks_by_end ON kernel_chunks(last_end_ns);
      CREATE INDEX kernel_chunks_by_series ON kernel_chunks(series_id, last_end_ns);
    )sql", kernels_into_chunks},
    // 4: A/B test definitions (JSON text written by the server); results are computed on demand.
    Migration{R"sql(
      CREATE TABLE abtests (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        definition TEXT NOT NULL,
        created_ns INTEGER NOT NULL
      );
    )sql"},
    // 5: histogram tiers of retired raw rows (rollups.hpp) and what retention last did.
    Migration{R"sql(
      CREATE TABLE rollups (
        source   TEXT NOT NULL,
        field    TEXT NOT NULL,
        tier     INTEGER NOT NULL,
        key      TEXT NOT NULL,
        start_ns INTEGER NOT NULL,
        count    INTEGER NOT NULL,
        sum      REAL NOT NULL,
        m2       REAL NOT NULL,
        min      REAL NOT NULL,
        max      REAL NOT NULL,
        histogram BLOB NOT NULL,
        PRIMARY KEY (source, field, tier, key, start_ns)
      ) WITHOUT ROWID;
      CREATE TABLE retention (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        raw_before_ns INTEGER NOT NULL,
        rollups_before_ns INTEGER NOT NULL
      );
      INSERT INTO retention VALUES (1, 0, 0);
    )sql"},
    // 6: runs (run_store.hpp): one row per run name, merged from its reports.
    Migration{R"sql(
      CREATE TABLE runs (
        name        TEXT PRIMARY KEY,
        command     TEXT NOT NULL,
        host        TEXT NOT NULL,
        pids        TEXT NOT NULL,
        start_ns    INTEGER NOT NULL,
        end_ns      INTEGER,
        exit_status INTEGER,
        kinds       TEXT NOT NULL,
        records     INTEGER,
        dropped     INTEGER,
        gpus        TEXT NOT NULL,
        tags        TEXT NOT NULL
      );
      CREATE INDEX runs_by_start ON runs(start_ns);
    )sql"},
    // 7: GPU processes' lifetime records (the tracker's sums), kept after they exit.
    Migration{R"sql(
      CREATE TABLE gpu_processes (
        gpu_uuid            TEXT NOT NULL,
        gpu                 TEXT NOT NULL,
        process_key         TEXT NOT NULL,
        pid                 INTEGER NOT NULL,
        start_ticks         INTEGER NOT NULL,
        command             TEXT NOT NULL,
        cmdline             TEXT NOT NULL,
        uid                 INTEGER,
        container_runtime   TEXT NOT NULL,
        container_id        TEXT NOT NULL,
        pod_uid             TEXT NOT NULL,
        qos_class           TEXT NOT NULL,
        cgroup              TEXT NOT NULL,
        visible             INTEGER NOT NULL,
        running             INTEGER NOT NULL,
        first_seen_ns       INTEGER NOT NULL,
        last_seen_ns        INTEGER NOT NULL,
        observed_seconds    REAL NOT NULL,
        memory_byte_seconds REAL NOT NULL,
        peak_memory_bytes   REAL NOT NULL,
        sm_observed_seconds REAL NOT NULL,
        gpu_seconds         REAL NOT NULL,
        max_sm_ratio        REAL NOT NULL,
        energy_joules       REAL NOT NULL,
        cpu_seconds         REAL NOT NULL,
        peak_rss_bytes      REAL NOT NULL,
        PRIMARY KEY (gpu_uuid, process_key)
      ) WITHOUT ROWID;
      CREATE INDEX gpu_processes_by_last_seen ON gpu_processes(last_seen_ns);
    )sql"},
    // 8: a duty-cycled run's tracing schedule (NULL: traced throughout).
    Migration{R"sql(
      ALTER TABLE runs ADD COLUMN trace_window_ns INTEGER;
      ALTER TABLE runs ADD COLUMN trace_every_ns INTEGER;
    )sql"},
    // 9: the work of one execution (FLOPs, bytes moved; −1 when not reported) joins a kernel
    // series' identity: the table is rebuilt with them in its unique key, ids kept.
    Migration{R"sql(
      CREATE TABLE kernel_series_next (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL, device TEXT NOT NULL, variant TEXT NOT NULL, stream TEXT NOT NULL,
        grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
        block_x INTEGER NOT NULL, block_y INTEGER NOT NULL, block_z INTEGER NOT NULL,
        shared_mem_bytes INTEGER NOT NULL, registers_per_thread INTEGER NOT NULL,
        flops REAL NOT NULL DEFAULT -1, bytes REAL NOT NULL DEFAULT -1,
        tags TEXT NOT NULL,
        UNIQUE (name, device, variant, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                shared_mem_bytes, registers_per_thread, flops, bytes, tags)
      );
      INSERT INTO kernel_series_next(id, name, device, variant, stream, grid_x, grid_y, grid_z, block_x, block_y,
                                     block_z, shared_mem_bytes, registers_per_thread, tags)
        SELECT id, name, device, variant, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z,
               shared_mem_bytes, registers_per_thread, tags FROM kernel_series;
      DROP TABLE kernel_series;
      ALTER TABLE kernel_series_next RENAME TO kernel_series;
    )sql", nullptr, true},
    // 10: the data type the FLOPs are counted in (the roofline's ceiling; '' when not said)
    // joins the identity the same way.
    Migration{R"sql(
      CREATE TABLE kernel_series_next (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL, device TEXT NOT NULL, variant TEXT NOT NULL, stream TEXT NOT NULL,
        grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
        block_x INTEGER NOT NULL, block_y INTEGER NOT NULL, block_z INTEGER NOT NULL,
        shared_mem_bytes INTEGER NOT NULL, registers_per_thread INTEGER NOT NULL,
        flops REAL NOT NULL DEFAULT -1, bytes REAL NOT NULL DEFAULT -1, dtype TEXT NOT NULL DEFAULT '',
        tags TEXT NOT NULL,
        UNIQUE (name, device, variant, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                shared_mem_bytes, registers_per_thread, flops, bytes, dtype, tags)
      );
      INSERT INTO kernel_series_next(id, name, device, variant, stream, grid_x, grid_y, grid_z, block_x, block_y,
                                     block_z, shared_mem_bytes, registers_per_thread, flops, bytes, tags)
        SELECT id, name, device, variant, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z,
               shared_mem_bytes, registers_per_thread, flops, bytes, tags FROM kernel_series;
      DROP TABLE kernel_series;
      ALTER TABLE kernel_series_next RENAME TO kernel_series;
    )sql", nullptr, true},
    // 11: sampled series in encoded chunks (db/internal/sample_chunks.hpp), the sampler's pass times
    // stored once for every series sampled on them.
    Migration{R"sql(
      CREATE TABLE sample_passes (
        start_ns INTEGER PRIMARY KEY,
        end_ns   INTEGER NOT NULL,
        count    INTEGER NOT NULL,
        data     BLOB NOT NULL
      );
      CREATE TABLE sample_chunks (
        series_id INTEGER NOT NULL REFERENCES series(id),
        start_ns  INTEGER NOT NULL,
        count     INTEGER NOT NULL,
        data      BLOB NOT NULL,
        PRIMARY KEY (series_id, start_ns)
      ) WITHOUT ROWID;
    )sql"},
    // 12: the sample rows, moved into chunks before this step in bounded transactions, go.
    Migration{"DROP TABLE samples;", nullptr, false, samples_into_chunks},
    // 13: GPU processes' Kubernetes names, from the kubelet (empty where unknown).
    Migration{R"sql(
      ALTER TABLE gpu_processes ADD COLUMN pod_namespace TEXT NOT NULL DEFAULT '';
      ALTER TABLE gpu_processes ADD COLUMN pod_name TEXT NOT NULL DEFAULT '';
      ALTER TABLE gpu_processes ADD COLUMN container_name TEXT NOT NULL DEFAULT '';
    )sql"},
};

Status copy_kernel_rows(Connection& conn) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto writer, KernelChunkWriter::prepare(conn));
  auto rows = conn.prepare(
      "SELECT name, device, variant, stream, start_ns, end_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
      "shared_mem_bytes, registers_per_thread, launch_start_ns, launch_end_ns, tags FROM kernels ORDER BY id");
  if (!rows.ok()) return rows.status();
  Status added;
  Status s = rows->for_each_row([&](Statement& r) {
    if (!added.ok()) return;
    auto opt = [&](int col) {
      return r.column_is_null(col) ? std::nullopt : std::optional<std::int64_t>(r.column_int64(col));
    };
    auto u32 = [&](int col) { return static_cast<std::uint32_t>(r.column_int64(col)); };
    KernelEvent e;
    e.name = r.column_text(0);
    e.device = r.column_text(1);
    e.variant = r.column_text(2);
    e.stream = r.column_text(3);
    e.start_ns = r.column_int64(4);
    e.end_ns = r.column_int64(5);
    if (!r.column_is_null(6)) e.grid = {u32(6), u32(7), u32(8)};
    if (!r.column_is_null(9)) e.block = {u32(9), u32(10), u32(11)};
    if (auto v = opt(12)) e.shared_mem_bytes = static_cast<std::uint64_t>(*v);
    if (auto v = opt(13)) e.registers_per_thread = static_cast<std::uint32_t>(*v);
    e.launch_start_ns = opt(14);
    e.launch_end_ns = opt(15);
    if (auto tags = parse_labels(r.column_text(16)); tags.ok()) e.tags = std::move(*tags);
    added = writer->add(e);
  });
  if (!s.ok()) return s;
  if (!added.ok()) return added;
  return writer->flush();
}

// A file created before retention existed: switch it to incremental vacuum, which takes one
// VACUUM (a rewrite of the file, once).
Status enable_incremental_vacuum(Connection& conn) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto mode, conn.prepare("PRAGMA auto_vacuum"));
  PERFSCOPE_ASSIGN_OR_RETURN(auto row, mode.step());
  const bool incremental = row && mode.column_int64(0) == 2;
  mode.reset();
  if (incremental) return Status();
  if (Status s = conn.exec("PRAGMA auto_vacuum = INCREMENTAL"); !s.ok()) return s;
  return conn.exec("VACUUM");
}

Status kernels_into_chunks(Connection& conn) {
  // Today's chunk writer also writes each series' work (flops, bytes, dtype), which steps 9 and
  // 10 add: give this step's table those columns so the writer can move the rows; those steps
  // then rebuild the table with them in its unique key.
  if (Status s = conn.exec("ALTER TABLE kernel_series ADD COLUMN flops REAL NOT NULL DEFAULT -1; "
                           "ALTER TABLE kernel_series ADD COLUMN bytes REAL NOT NULL DEFAULT -1; "
                           "ALTER TABLE kernel_series ADD COLUMN dtype TEXT NOT NULL DEFAULT ''");
      !s.ok()) {
    return s;
  }
  if (Status s = copy_kernel_rows(conn); !s.ok()) return s;  // its statements are finalized here
  return conn.exec("DROP TABLE kernels");
}

// Sample rows into chunks (explicit times: which rows were one sampling pass is not known),
// 100,000 rows per transaction, each batch's rows deleted as it commits: a run cut short
// resumes with what is left, and nothing is in both places or neither.
Status samples_into_chunks(Connection& conn) {
  constexpr std::int64_t kBatchRows = 100'000;
  const SampleChunkLimits limits;
  for (;;) {
    Transaction tx(conn);
    if (!tx.begin_status().ok()) return tx.begin_status();
    std::vector<std::pair<std::int64_t, std::vector<Sample>>> batch;
    {
      auto rows = conn.prepare("SELECT series_id, ts_ns, value FROM samples ORDER BY series_id, ts_ns LIMIT ?1");
      if (!rows.ok()) return rows.status();
      rows->bind(1, kBatchRows);
      Status s = rows->for_each_row([&](Statement& r) {
        const std::int64_t id = r.column_int64(0);
        if (batch.empty() || batch.back().first != id) batch.emplace_back(id, std::vector<Sample>{});
        batch.back().second.push_back({r.column_int64(1), r.column_double(2)});
      });
      if (!s.ok()) return s;
    }
    if (batch.empty()) return Status();
    auto insert = conn.prepare("INSERT INTO sample_chunks(series_id, start_ns, count, data) VALUES(?1, ?2, ?3, ?4)");
    auto remove = conn.prepare("DELETE FROM samples WHERE series_id = ?1 AND ts_ns <= ?2");
    if (!insert.ok()) return insert.status();
    if (!remove.ok()) return remove.status();
    for (const auto& [id, samples] : batch) {
      for (std::size_t i = 0; i < samples.size(); i += limits.max_samples) {
        const auto part = std::span<const Sample>(samples).subspan(i, std::min(limits.max_samples, samples.size() - i));
        const std::string data = encode_samples(part, nullptr, {}).data;
        Status s = insert->bind(1, id).bind(2, part.front().ts_ns).bind(3, static_cast<std::int64_t>(part.size()))
                       .bind_blob(4, data).run();
        if (!s.ok()) return s;
      }
      if (Status s = remove->bind(1, id).bind(2, samples.back().ts_ns).run(); !s.ok()) return s;
    }
    if (Status s = tx.commit(); !s.ok()) return s;
  }
}

}  // namespace

int schema_version() { return static_cast<int>(kMigrations.size()); }

std::string sqlite_version() { return sqlite3_libversion(); }

MemoryEvent read_memory_event(const Statement& r) {
  MemoryEvent e;
  e.op = r.column_text(0) == "free" ? MemoryOp::kFree : MemoryOp::kAlloc;
  e.address = r.column_text(1);
  e.size_bytes = static_cast<std::uint64_t>(r.column_int64(2));
  e.kind = memory_kind_from(r.column_text(3)).value_or(MemoryKind::kDevice);
  e.tag = r.column_text(4);
  e.device = r.column_text(5);
  e.ts_ns = r.column_int64(6);
  if (auto tags = parse_labels(r.column_text(7)); tags.ok()) e.tags = std::move(*tags);
  return e;
}

Status check_database_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0) return Status();
  {
    // The SQLite header names the format in its first 16 bytes.
    std::ifstream in(path, std::ios::binary);
    char magic[16] = {};
    in.read(magic, sizeof magic);
    if (!in || std::string_view(magic, sizeof magic) != std::string_view("SQLite format 3\0", 16)) {
      return Status::invalid_argument(path + " is not a SQLite database (corrupt, or another kind of file); perfscope "
                                      "will not touch it: move it away or choose another --data-dir");
    }
  }
  auto conn = Connection::open(path, /*read_only=*/true);
  if (!conn.ok()) return Status::invalid_argument(path + ": " + conn.status().message());
  auto version = conn->prepare("PRAGMA user_version");
  if (!version.ok()) return Status::invalid_argument(path + " cannot be read as a database: " + version.status().message());
  auto row = version->step();
  if (!row.ok()) return Status::invalid_argument(path + " cannot be read as a database: " + row.status().message());
  const int user_version = static_cast<int>(version->column_int64(0));
  if (user_version > schema_version()) {
    return Status::invalid_argument(path + " has perfscope schema version " + std::to_string(user_version) +
                                    ", newer than this build understands (" + std::to_string(schema_version()) + ")");
  }
  auto tables = conn->prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
  if (!tables.ok()) return Status::invalid_argument(path + " cannot be read as a database: " + tables.status().message());
  std::string names;
  bool has_series = false;
  Status s = tables->for_each_row([&](Statement& r) {
    const std::string name = r.column_text(0);
    has_series |= name == "series";
    if (names.size() < 200) names += (names.empty() ? "" : ", ") + name;
  });
  if (!s.ok()) return Status::invalid_argument(path + " cannot be read as a database: " + s.message());
  const bool foreign = user_version == 0 ? !names.empty() : !has_series;
  if (foreign) {
    return Status::invalid_argument(path + " is another program's SQLite database (tables: " + names +
                                    "); perfscope will not change it: choose another --data-dir");
  }
  return Status();
}

Status migrate(Connection& conn, int up_to) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto stmt, conn.prepare("PRAGMA user_version"));
  PERFSCOPE_RETURN_IF_ERROR(stmt.step().status());
  int current = static_cast<int>(stmt.column_int64(0));
  stmt.reset();  // an active statement would block the DROP TABLE of a migration
  if (current > schema_version()) {
    return Status::unavailable("database schema version " + std::to_string(current) +
                               " is newer than this build understands (" + std::to_string(schema_version()) + ")");
  }
  // Retention frees pages with incremental vacuum, which needs the mode set before the first
  // table exists; an older file is converted once below.
  if (current == 0) {
    if (Status s = conn.exec("PRAGMA auto_vacuum = INCREMENTAL"); !s.ok()) return s;
  }
  const int last = up_to < 0 ? schema_version() : std::min(up_to, schema_version());
  for (int v = current; v < last; ++v) {
    const Migration& step = kMigrations[static_cast<std::size_t>(v)];
    if (step.prepare) {
      if (Status s = step.prepare(conn); !s.ok()) return s;
    }
    // Outside any transaction, where the pragma takes effect; back on whatever happens.
    if (step.rebuilds_tables) {
      if (Status s = conn.exec("PRAGMA foreign_keys = OFF"); !s.ok()) return s;
    }
    Status done = [&]() -> Status {
      Transaction tx(conn);
      if (!tx.begin_status().ok()) return tx.begin_status();
      if (Status s = conn.exec(step.sql); !s.ok()) return s;
      if (step.convert) {
        if (Status s = step.convert(conn); !s.ok()) return s;
      }
      if (step.rebuilds_tables) {
        PERFSCOPE_ASSIGN_OR_RETURN(auto check, conn.prepare("PRAGMA foreign_key_check"));
        PERFSCOPE_ASSIGN_OR_RETURN(auto dangling, check.step());
        if (dangling) return Status::internal("schema step " + std::to_string(v + 1) + " left a dangling reference");
      }
      std::string bump = "PRAGMA user_version = " + std::to_string(v + 1);
      if (Status s = conn.exec(bump.c_str()); !s.ok()) return s;
      return tx.commit();
    }();
    if (step.rebuilds_tables) {
      if (Status s = conn.exec("PRAGMA foreign_keys = ON"); !s.ok() && done.ok()) return s;
    }
    if (!done.ok()) return done;
  }
  return enable_incremental_vacuum(conn);
}

}  // namespace perfscope::db
