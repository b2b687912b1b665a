#include "db/wal_index.hpp"

#include <cerrno>
#include <cstring>

#include <unistd.h>

namespace perfscope::db {

Status check_wal_index(const std::string& database_path) {
  const std::string index = database_path + "-shm";
  if (::access(index.c_str(), R_OK | W_OK) == 0 || errno == ENOENT) return Status();
  return Status::unavailable("the database cannot be used: its index file " + index + " cannot be written (" +
                             std::strerror(errno) + ")");
}

}  // namespace perfscope::db
