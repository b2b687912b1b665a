#include "server/http/send_queue.hpp"

#include <algorithm>

namespace perfscope::server {

bool SendQueue::push(std::shared_ptr<const std::string> text, bool droppable) {
  if (items_.size() >= limit_) {
    auto first = items_.begin() + (writing_ && !items_.empty() ? 1 : 0);
    auto victim = std::find_if(first, items_.end(), [](const Item& i) { return i.droppable; });
    if (victim != items_.end()) {
      items_.erase(victim);
      ++dropped_;
    } else if (droppable) {
      ++dropped_;
      return false;
    }
    // An undroppable reply to a queue full of undroppable replies is queued anyway: the
    // client asked for it, and replies come only as fast as the client sends requests.
  }
  items_.push_back(Item{std::move(text), droppable});
  return true;
}

std::size_t SendQueue::replies() const {
  return static_cast<std::size_t>(std::count_if(items_.begin(), items_.end(), [](const Item& i) { return !i.droppable; }));
}

}  // namespace perfscope::server
