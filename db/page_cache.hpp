// What SQLite holds in the heap, for /api/v1/info: the soak must tell caches filling up to
// their size (cache_size, db/sqlite.cpp) from a leak.
// Thread-safety: any thread; the writer's figure is written after each commit on the writer's
// thread, the readers' as each lease of a pooled connection ends (db/connection_pool.cpp).
#pragma once

#include <cstdint>

namespace perfscope::db {

// cache_size of the writer's connection and of each reading connection (db/sqlite.cpp).
inline constexpr std::uint64_t kWriterPageCacheKiB = 65536;
inline constexpr std::uint64_t kReaderPageCacheKiB = 16384;

std::uint64_t writer_page_cache_bytes();
// The cache's bound: what cache_size allows the writer's connection.
std::uint64_t writer_page_cache_limit_bytes();

// The reading connections open in every pool, and their page caches, schemas and statements
// as each was last returned (a connection in use counts what it held before).
std::uint64_t reader_connections();
std::uint64_t reader_memory_bytes();
// The readers' page caches' bound: cache_size times the connections open.
std::uint64_t reader_page_cache_limit_bytes();

}  // namespace perfscope::db
