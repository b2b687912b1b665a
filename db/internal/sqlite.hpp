// A thin RAII layer over SQLite's C API: a connection that closes itself, statements that
// finalize themselves, and a transaction that rolls back unless committed.
//
// Thread-safety: a Connection and its Statements belong to one thread at a time (SQLite is
// built serialized, but perfscope never shares a connection; each thread opens its own).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "engine/base/status.hpp"

namespace perfscope::db {

class Statement;

class Connection {
 public:
  // Opens (creating if asked) a database file with perfscope's per-connection settings:
  // WAL, synchronous=NORMAL, busy_timeout, foreign_keys=ON.
  static Result<Connection> open(const std::string& path, bool read_only = false);

  Status exec(const char* sql);
  Result<Statement> prepare(const char* sql);
  sqlite3* handle() const { return db_.get(); }
  std::string last_error() const;

 private:
  struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  explicit Connection(sqlite3* db) : db_(db) {}
  std::unique_ptr<sqlite3, Closer> db_;
};

// A prepared statement; reset() makes it reusable with new bindings.
class Statement {
 public:
  Statement() = default;  // empty until assigned a prepared statement
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, double value);
  // The text is NOT copied: it must stay alive until the statement has run (bind and
  // run()/step() in one full expression, or the string in an enclosing scope).
  Statement& bind(int index, std::string_view value);
  // Binary data; the same lifetime rule as text.
  Statement& bind_blob(int index, std::string_view bytes);
  Statement& bind_null(int index);
  // A number, or NULL when absent.
  template <typename T>
  Statement& bind_optional(int index, const std::optional<T>& value) {
    if (!value) return bind_null(index);
    if constexpr (std::is_floating_point_v<T>) {
      return bind(index, static_cast<double>(*value));
    } else {
      return bind(index, static_cast<std::int64_t>(*value));
    }
  }

  // Returns true while there is a row, false when done; errors become a non-ok Status.
  Result<bool> step();
  // Runs a statement that returns no rows, then resets it.
  Status run();
  // Calls fn(*this) for every row; stops at the first error.
  template <typename Fn>
  Status for_each_row(Fn&& fn) {
    for (;;) {
      auto row = step();
      if (!row.ok()) return row.status();
      if (!*row) return Status();
      fn(*this);
    }
  }
  void reset();

  std::int64_t column_int64(int index) const;
  double column_double(int index) const;
  std::string column_text(int index) const;
  // Valid until the next step() or reset().
  std::string_view column_blob(int index) const;
  bool column_is_null(int index) const;

 private:
  friend class Connection;
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  explicit Statement(sqlite3_stmt* s) : stmt_(s) {}
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
};

// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Connection& conn);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  const Status& begin_status() const { return begin_; }
  Status commit();

 private:
  Connection& conn_;
  Status begin_;
  bool done_ = false;
};

}  // namespace perfscope::db
