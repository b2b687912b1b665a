// The database writer's page cache as its newest commit left it, for /api/v1/info: the soak
// must tell a cache filling up to its size (cache_size, db/sqlite.cpp) from a leak.
// Thread-safety: any thread; the value is written after each commit on the writer's thread.
#pragma once

#include <cstdint>

namespace perfscope::db {

std::uint64_t writer_page_cache_bytes();
// The cache's bound: what cache_size allows the writer's connection.
std::uint64_t writer_page_cache_limit_bytes();

}  // namespace perfscope::db
