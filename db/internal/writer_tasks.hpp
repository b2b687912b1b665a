// WriterTasks: how db/'s own stores (A/B definitions, retention, GPU process records) and
// db's tests run work of their own on the Writer's thread, in a transaction of its own, on the
// writer's connection. Internal to db/: callers outside use those stores' functions.
//
// Thread-safety: run() from any thread; reopen_sample_chunks() from inside a task only.
#pragma once

#include <utility>

#include "db/internal/sqlite.hpp"
#include "db/writer.hpp"

namespace perfscope::db {

struct WriterTasks {
  using Task = Writer::Task;
  // `task` after the batch queued with it commits; `done` gets its status after the commit or
  // rollback.
  static void run(Writer& writer, Task task, Writer::Completion done) { writer.run_task(std::move(task), std::move(done)); }
  // From inside a task that changed stored sample chunks (retention): the open chunks the
  // writer holds start anew once the task is done.
  static void reopen_sample_chunks(Writer& writer) { writer.reopen_sample_chunks(); }
};

}  // namespace perfscope::db
