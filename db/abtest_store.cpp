#include "db/abtest_store.hpp"

#include "db/internal/connection_pool.hpp"
#include "db/internal/writer_tasks.hpp"

#include <memory>

namespace perfscope::db {

void create_abtest(Writer& writer, std::string name, std::string definition, TimestampNs created_ns,
                   std::function<void(Result<std::int64_t>)> done) {
  auto id = std::make_shared<std::int64_t>(0);
  WriterTasks::run(writer, 
      [name = std::move(name), definition = std::move(definition), created_ns, id](Connection& conn) -> Status {
        auto stmt = conn.prepare("INSERT INTO abtests(name, definition, created_ns) VALUES(?1, ?2, ?3) RETURNING id");
        if (!stmt.ok()) return stmt.status();
        stmt->bind(1, name).bind(2, definition).bind(3, created_ns);
        PERFSCOPE_ASSIGN_OR_RETURN(auto row, stmt->step());
        if (!row) return Status::internal("no id returned for the new A/B test");
        *id = stmt->column_int64(0);
        stmt->reset();
        return Status();
      },
      [id, done = std::move(done)](const Status& s) {
        if (s.ok()) {
          done(*id);
        } else {
          done(s);
        }
      });
}

AbTestReader::AbTestReader(std::string path) : pool_(std::make_unique<ConnectionPool>(std::move(path))) {}
AbTestReader::~AbTestReader() = default;

namespace {
AbTestRecord read_record(const Statement& r) {
  return AbTestRecord{r.column_int64(0), r.column_text(1), r.column_text(2), r.column_int64(3)};
}
}  // namespace

Result<std::vector<AbTestRecord>> AbTestReader::list(std::size_t limit) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  auto stmt = conn->prepare("SELECT id, name, definition, created_ns FROM abtests ORDER BY id DESC LIMIT ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, static_cast<std::int64_t>(limit));
  std::vector<AbTestRecord> out;
  Status s = stmt->for_each_row([&](Statement& r) { out.push_back(read_record(r)); });
  if (!s.ok()) return s;
  return out;
}

Result<std::optional<AbTestRecord>> AbTestReader::get(std::int64_t id) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  PERFSCOPE_ASSIGN_OR_RETURN(auto stmt, conn->prepare("SELECT id, name, definition, created_ns FROM abtests WHERE id = ?1"));
  stmt.bind(1, id);
  PERFSCOPE_ASSIGN_OR_RETURN(auto row, stmt.step());
  if (!row) return std::optional<AbTestRecord>();
  return std::optional<AbTestRecord>(read_record(stmt));
}

}  // namespace perfscope::db
