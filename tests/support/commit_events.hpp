// Submits events to a Writer and waits until they are committed, failing the test otherwise.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "db/writer.hpp"

namespace perfscope::testing {

inline void commit(db::Writer& w, std::vector<Event> events) {
  std::promise<Status> done;
  w.submit(std::move(events), [&](const Status& s) { done.set_value(s); });
  Status s = done.get_future().get();
  ASSERT_TRUE(s.ok()) << s.message();
}

}  // namespace perfscope::testing
