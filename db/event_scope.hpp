// EventScope: which events a read covers — one device, one run, tags every event must carry —
// as every event reader takes it. A value type.
#pragma once

#include <string>

#include "engine/events/events.hpp"

namespace perfscope::db {

// One device (all when empty), one run (every run, and events of none, when empty; events carry
// their run as the tag run=NAME) and tags every event must carry (`tag.KEY=VALUE` in the API).
struct EventScope {
  EventScope() = default;
  explicit EventScope(std::string device_name) : device(std::move(device_name)) {}
  EventScope(std::string device_name, std::string run_name, Tags wanted = {})
      : device(std::move(device_name)), run(std::move(run_name)), tags(std::move(wanted)) {}
  std::string device;
  std::string run;
  Tags tags;
  bool by_tags() const { return !run.empty() || !tags.empty(); }
  // Every tag an event must carry: `tags` and, when set, run=NAME; sorted.
  Tags wanted_tags() const;
};

}  // namespace perfscope::db
