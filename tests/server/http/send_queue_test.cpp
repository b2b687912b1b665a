#include "server/http/send_queue.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace perfscope::server {
namespace {

std::shared_ptr<const std::string> msg(const char* s) { return std::make_shared<const std::string>(s); }

TEST(SendQueue, FullQueueDropsTheStalestDroppableMessageNotTheOneInFlight) {
  SendQueue q(3);
  q.push(msg("s1"), true);
  q.set_writing(true);  // s1 is on the wire
  q.push(msg("reply"), false);
  q.push(msg("s2"), true);
  q.push(msg("s3"), true);  // full: s2 goes (s1 is being written, reply is never dropped)
  EXPECT_EQ(q.dropped(), 1u);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(*q.front(), "s1");
  q.pop_front();
  EXPECT_EQ(*q.front(), "reply");
  q.pop_front();
  EXPECT_EQ(*q.front(), "s3");
}

TEST(SendQueue, StaysBoundedUnderAFloodOfSamples) {
  SendQueue q(4);
  for (int i = 0; i < 1000; ++i) q.push(msg("s"), true);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.dropped(), 996u);
}

TEST(SendQueue, ASampleMessageIsDroppedWhenOnlyRepliesWait) {
  SendQueue q(2);
  q.push(msg("r1"), false);
  q.push(msg("r2"), false);
  EXPECT_FALSE(q.push(msg("s"), true));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_TRUE(q.push(msg("r3"), false));
  EXPECT_EQ(q.size(), 3u);
}

}  // namespace
}  // namespace perfscope::server
