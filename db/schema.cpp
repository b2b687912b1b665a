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
