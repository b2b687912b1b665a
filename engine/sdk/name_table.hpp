// NameTable: interns strings (kernel names, variants, tags) into small integer ids, so the
// recording hot path stores an id instead of copying a string. Lookups from a thread go
// through that thread's own cache first: after a name has been seen once on a thread,
// id_of() takes no lock and allocates nothing.
//
// Thread-safety: every method is safe from any thread. Ids are never reused; name() returns
// a reference that stays valid for the table's lifetime.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace perfscope {

class NameTable {
 public:
  using Id = std::uint32_t;

  NameTable();
  Id id_of(std::string_view name);
  const std::string& name(Id id) const;

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  Id intern_locked(std::string_view name);

  const std::uint64_t uid_;  // tells thread caches of different tables apart
  mutable std::mutex mu_;
  std::deque<std::string> names_;                                       // guarded by mu_; stable references
  std::unordered_map<std::string, Id, Hash, std::equal_to<>> ids_;      // guarded by mu_
};

}  // namespace perfscope
