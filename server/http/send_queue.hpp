// SendQueue: the bounded outgoing queue of one WebSocket client. At most `limit` messages
// wait; when a new one arrives at a full queue, the stalest droppable message that is not
// being written is dropped (a newer sample pass supersedes it), so a slow client costs the
// server a bounded amount of memory. Replies to the client's own requests are never dropped;
// the session bounds them instead by not reading the client's next request while `limit`
// replies wait (replies() >= limit), so a client that sends and never reads stalls itself.
//
// Not thread-safe: owned by one session and used on its strand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

namespace perfscope::server {

class SendQueue {
 public:
  explicit SendQueue(std::size_t limit) : limit_(limit) {}

  // Queues a message; returns false when it was itself dropped (full of undroppable ones).
  bool push(std::shared_ptr<const std::string> text, bool droppable);
  // The message to write next; null when empty. It stays queued until pop_front().
  const std::shared_ptr<const std::string>& front() const { return items_.front().text; }
  void pop_front() { items_.pop_front(); }
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  void clear() { items_.clear(); }

  // Set while front() is being written: it must not be dropped.
  void set_writing(bool writing) { writing_ = writing; }
  bool writing() const { return writing_; }
  std::uint64_t dropped() const { return dropped_; }
  // Queued messages that are replies (undroppable).
  std::size_t replies() const;
  bool replies_full() const { return replies() >= limit_; }

 private:
  struct Item {
    std::shared_ptr<const std::string> text;
    bool droppable;
  };
  std::size_t limit_;
  std::deque<Item> items_;
  bool writing_ = false;
  std::uint64_t dropped_ = 0;
};

}  // namespace perfscope::server
