#include "engine/sdk/name_table.hpp"

#include <atomic>
#include <vector>

namespace perfscope {
namespace {

std::atomic<std::uint64_t> next_uid{1};

struct Hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// One cache per thread and table: name → id, filled on a miss.
struct ThreadCache {
  std::uint64_t table_uid = 0;
  std::unordered_map<std::string, NameTable::Id, Hash, std::equal_to<>> ids;
  // The last name looked up: begin/end pairs and loops ask for one name again and again.
  const std::string* last = nullptr;
  NameTable::Id last_id = 0;
};

ThreadCache& cache_for(std::uint64_t uid) {
  thread_local std::vector<ThreadCache> caches;
  for (ThreadCache& c : caches) {
    if (c.table_uid == uid) return c;
  }
  caches.push_back(ThreadCache{uid, {}});
  return caches.back();
}

}  // namespace

NameTable::NameTable() : uid_(next_uid.fetch_add(1)) {}

NameTable::Id NameTable::id_of(std::string_view name) {
  ThreadCache& cache = cache_for(uid_);
  if (cache.last && *cache.last == name) return cache.last_id;
  if (auto it = cache.ids.find(name); it != cache.ids.end()) {
    cache.last = &it->first;
    cache.last_id = it->second;
    return it->second;
  }
  Id id;
  {
    std::lock_guard lock(mu_);
    id = intern_locked(name);
  }
  auto [it, inserted] = cache.ids.emplace(std::string(name), id);
  cache.last = &it->first;  // node-based map: the key's address is stable
  cache.last_id = id;
  return id;
}

NameTable::Id NameTable::intern_locked(std::string_view name) {
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  Id id = static_cast<Id>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

const std::string& NameTable::name(Id id) const {
  std::lock_guard lock(mu_);
  return names_.at(id);
}

}  // namespace perfscope
