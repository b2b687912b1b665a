#include "db/schema.hpp"

#include <array>
#include <string>

namespace perfscope::db {
namespace {

// Append-only: never edit a released step; add a new one.
constexpr std::array kMigrations = {
    // 1: series catalogue and raw samples, clustered by series then time.
    R"sql(
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
    )sql",
    // 2: events reported by applications. Tags in label text form (`a="x",b="y"`).
    R"sql(
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
    )sql",
};

}  // namespace

int schema_version() { return static_cast<int>(kMigrations.size()); }

Status migrate(Connection& conn) {
  auto stmt = conn.prepare("PRAGMA user_version");
  if (!stmt.ok()) return stmt.status();
  auto row = stmt->step();
  if (!row.ok()) return row.status();
  int current = static_cast<int>(stmt->column_int64(0));
  if (current > schema_version()) {
    return Status::unavailable("database schema version " + std::to_string(current) +
                               " is newer than this build understands (" + std::to_string(schema_version()) + ")");
  }
  for (int v = current; v < schema_version(); ++v) {
    Transaction tx(conn);
    if (!tx.begin_status().ok()) return tx.begin_status();
    if (Status s = conn.exec(kMigrations[static_cast<std::size_t>(v)]); !s.ok()) return s;
    std::string bump = "PRAGMA user_version = " + std::to_string(v + 1);
    if (Status s = conn.exec(bump.c_str()); !s.ok()) return s;
    if (Status s = tx.commit(); !s.ok()) return s;
  }
  return Status();
}

}  // namespace perfscope::db
