#include "engine/events/events.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace perfscope {
namespace {

TEST(Events, ValidationNamesTheField) {
  InferenceEvent i;
  i.model = "m";
  i.latency_ms = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(validate(Event(i)).field(), "latency_ms");
  i.latency_ms = 5;
  i.compute_ms = std::numeric_limits<double>::infinity();
  EXPECT_EQ(validate(i).field(), "compute_ms");
  i.compute_ms.reset();
  EXPECT_TRUE(validate(i).ok());
  i.output_tokens = std::uint64_t{1} << 32;  // a sum over many such would wrap
  EXPECT_EQ(validate(i).field(), "output_tokens");
  i.output_tokens = 0xFFFF'FFFF;
  EXPECT_TRUE(validate(i).ok());

  KernelEvent k;
  k.name = "k";
  k.start_ns = 10;
  k.end_ns = 9;
  EXPECT_EQ(validate(k).field(), "end_ns");
  k.end_ns = 10;
  EXPECT_TRUE(validate(k).ok());
  k.name = std::string(2000, 'x');
  EXPECT_EQ(validate(k).field(), "name");

  SampleEvent s;
  s.metric = "m";
  s.value = std::nan("");
  EXPECT_EQ(validate(s).field(), "value");

  MemoryEvent m;
  m.address = "a";
  EXPECT_EQ(validate(m).field(), "size_bytes");
  m.op = MemoryOp::kFree;
  EXPECT_TRUE(validate(m).ok()) << "a free needs no size";
}

TEST(Events, TypeNamesAndShapes) {
  EXPECT_EQ(event_type(Event(KernelEvent{})), "kernel");
  EXPECT_EQ(event_type(Event(SampleEvent{})), "sample");
  EXPECT_EQ(format_shapes({{1, 3, 224, 224}, {1000}}), "1x3x224x224,1000");
  EXPECT_EQ(memory_kind_from("host"), MemoryKind::kHost);
  EXPECT_FALSE(memory_kind_from("vram").has_value());
}

}  // namespace
}  // namespace perfscope
