#include "db/wal_index.hpp"

#include <cerrno>
#include <cstring>

#include <sys/statvfs.h>
#include <unistd.h>

namespace perfscope::db {

Status check_wal_index(const std::string& database_path) {
  const std::string index = database_path + "-shm";
  if (::access(index.c_str(), R_OK | W_OK) == 0 || errno == ENOENT) return Status();
  return Status::unavailable("the database cannot be used: its index file " + index + " cannot be written (" +
                             std::strerror(errno) + ")");
}

Status check_database_files(const std::string& database_path) {
  for (const std::string& file : {database_path, database_path + "-wal", database_path + "-shm"}) {
    if (::access(file.c_str(), W_OK) != 0 && errno != ENOENT) {
      return Status::unavailable(file + " cannot be written (" + std::strerror(errno) + ")");
    }
  }
  return Status();
}

Status check_database_writable(const std::string& database_path) {
  const std::size_t slash = database_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : database_path.substr(0, slash);
  if (::access(dir.c_str(), W_OK) != 0) {
    return Status::unavailable("the data directory " + dir + " cannot be written (" + std::strerror(errno) + ")");
  }
  if (Status files = check_database_files(database_path); !files.ok()) return files;
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0 && fs.f_bavail == 0) {
    return Status::unavailable("the disk holding " + dir + " is full");
  }
  return Status();
}

}  // namespace perfscope::db
