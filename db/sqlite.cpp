#include "db/internal/sqlite.hpp"

#include "db/page_cache.hpp"
#include "db/wal_index.hpp"
#include "engine/base/cancellation.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

namespace perfscope::db {

namespace {
std::atomic<std::uint64_t> g_writer_cache_bytes{0};
}  // namespace

Result<Connection> Connection::open(const std::string& path, bool read_only) {
  // Memory statistics take a global mutex on every SQLite allocation; perfscope never reads
  // them. Must precede SQLite's initialization, so it is done once, before the first open.
  static const bool configured = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return true;
  }();
  (void)configured;
  if (Status index = check_wal_index(path); !index.ok()) return index;  // see wal_index.hpp
  sqlite3* raw = nullptr;
  int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Connection conn(raw);
  if (rc != SQLITE_OK) {
    return Status::io_error("cannot open database " + path + ": " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 5000);
  // A 64 MiB page cache and memory-mapped reads keep index pages of a growing database
  // in memory instead of re-reading them with a syscall per page (measured in bench/db_bench).
  // A new file gets 2 KiB pages (before WAL mode, which fixes the size; an existing file keeps
  // its own): every table and index takes at least a page, 32 of them in an hour's idle store,
  // and the sampled series' chunks are 100–300 bytes, so 4 KiB pages cost half a byte a sample
  // over ten minutes of one GPU; a vacuumed copy of such a store took 0.79 bytes a sample with
  // 2 KiB pages, 1.01 with 4 KiB and 1.04 with 1 KiB, where chunks spill into overflow pages
  // (bench/RESULTS.md, issue 21).
  //
  // The WAL file keeps the largest size it ever reached (20 MB in the scrape soak, where reads
  // often hold a snapshot while a checkpoint would restart it); journal_size_limit truncates it
  // to 4 MiB whenever a checkpoint does restart it, so the files' size follows the data.
  const std::string pragmas = read_only ? "PRAGMA foreign_keys=ON; PRAGMA cache_size=-" + std::to_string(kReaderPageCacheKiB) +
                                              "; PRAGMA mmap_size=268435456;"
                                  : "PRAGMA page_size=2048; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                                    "PRAGMA foreign_keys=ON; PRAGMA cache_size=-" + std::to_string(kWriterPageCacheKiB) +
                                    "; PRAGMA mmap_size=268435456; "
                                    "PRAGMA journal_size_limit=4194304;";
  if (Status s = conn.exec(pragmas.c_str()); !s.ok()) return s;
  // A read for a request whose client has left stops at the next check (every ~1000 virtual
  // machine steps, microseconds apart) with SQLITE_INTERRUPT (engine/base/cancellation.hpp). The
  // writer's connection is never interrupted.
  if (read_only) {
    sqlite3_progress_handler(raw, 1000, [](void*) -> int { return cancellation_requested() ? 1 : 0; }, nullptr);
  }
  return conn;
}

namespace {

// Whether the database's files can no longer be written (read-only file system, permissions,
// the immutable attribute). SQLite reports such a write as a plain I/O error, and the errno
// it keeps may be a later call's.
bool database_read_only(sqlite3* db) {
  const char* file = db ? sqlite3_db_filename(db, "main") : nullptr;
  return file && *file && !check_database_files(file).ok();
}

// A failed SQLite call as a Status: conditions that pass (busy, a full disk, a read-only
// file) are kUnavailable — the caller may retry later — with a message that names the cause.
Status failure(int rc, const std::string& message, sqlite3* db) {
  if ((rc & 0xff) == SQLITE_IOERR) {
    const int system_errno = db ? sqlite3_system_errno(db) : 0;
    if (system_errno == ENOSPC) rc = SQLITE_FULL;
    else if (database_read_only(db)) rc = SQLITE_READONLY;
    else if (system_errno != 0) return Status::io_error(message + " (" + std::strerror(system_errno) + ")");
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return Status::unavailable(message);
    case SQLITE_FULL: return Status::unavailable("the disk holding the database is full (" + message + ")");
    case SQLITE_INTERRUPT: return cancelled_status();
    case SQLITE_READONLY:
      return Status::unavailable("the database cannot be written: read-only file or directory (" + message + ")");
    default: return Status::io_error(message);
  }
}

// The connection's database index can be written (wal_index.hpp); OK for in-memory databases.
Status index_writable(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  return file && *file ? check_wal_index(file) : Status();
}

}  // namespace

Status Connection::exec(const char* sql) {
  if (Status index = index_writable(db_.get()); !index.ok()) return index;
  char* err = nullptr;
  int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status();
  std::string message = err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return failure(rc, message, db_.get());
}

Result<Statement> Connection::prepare(const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return Status::internal(std::string("prepare failed: ") + sqlite3_errmsg(db_.get()));
  return Statement(stmt);
}

std::string Connection::last_error() const { return sqlite3_errmsg(db_.get()); }

Statement& Statement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_.get(), index, value);
  return *this;
}
Statement& Statement::bind(int index, double value) {
  sqlite3_bind_double(stmt_.get(), index, value);
  return *this;
}
Statement& Statement::bind(int index, std::string_view value) {
  // SQLITE_STATIC: callers keep the text alive until the statement has run (bind → run/step
  // → reset in one expression or scope), so SQLite need not copy it.
  sqlite3_bind_text(stmt_.get(), index, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
  return *this;
}
Statement& Statement::bind_blob(int index, std::string_view bytes) {
  sqlite3_bind_blob(stmt_.get(), index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
  return *this;
}
Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_.get(), index);
  return *this;
}

Result<bool> Statement::step() {
  // A statement outside a transaction begins one of its own, which stores to the index; one
  // inside a transaction was checked when the transaction began (exec("BEGIN …")).
  if (!sqlite3_stmt_busy(stmt_.get()) && sqlite3_get_autocommit(sqlite3_db_handle(stmt_.get()))) {
    if (Status index = index_writable(sqlite3_db_handle(stmt_.get())); !index.ok()) return index;
  }
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(stmt_.get());
  Status s = failure(rc, sqlite3_errmsg(db), db);
  sqlite3_reset(stmt_.get());
  return s;
}

Status Statement::run() {
  auto r = step();
  reset();
  return r.ok() ? Status() : r.status();
}

void Statement::reset() {
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
}

std::int64_t Statement::column_int64(int index) const { return sqlite3_column_int64(stmt_.get(), index); }
double Statement::column_double(int index) const { return sqlite3_column_double(stmt_.get(), index); }
std::string Statement::column_text(int index) const {
  const unsigned char* text = sqlite3_column_text(stmt_.get(), index);
  return text ? std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), index)))
              : std::string();
}
std::string_view Statement::column_blob(int index) const {
  const void* data = sqlite3_column_blob(stmt_.get(), index);
  return data ? std::string_view(static_cast<const char*>(data), static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), index)))
              : std::string_view();
}
bool Statement::column_is_null(int index) const { return sqlite3_column_type(stmt_.get(), index) == SQLITE_NULL; }

Transaction::Transaction(Connection& conn) : conn_(conn), begin_(conn.exec("BEGIN IMMEDIATE")) {}

Transaction::~Transaction() {
  if (!done_ && begin_.ok()) (void)conn_.exec("ROLLBACK");
}

Status Transaction::commit() {
  if (!begin_.ok()) return begin_;
  Status s = conn_.exec("COMMIT");
  if (s.ok()) done_ = true;
  int used = 0, highwater = 0;
  if (sqlite3_db_status(conn_.handle(), SQLITE_DBSTATUS_CACHE_USED, &used, &highwater, 0) == SQLITE_OK && used >= 0) {
    g_writer_cache_bytes.store(static_cast<std::uint64_t>(used), std::memory_order_relaxed);
  }
  return s;
}

std::uint64_t writer_page_cache_bytes() { return g_writer_cache_bytes.load(std::memory_order_relaxed); }
std::uint64_t writer_page_cache_limit_bytes() { return kWriterPageCacheKiB * 1024; }

}  // namespace perfscope::db
