#include "server/wire/event_codec.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace perfscope::server {
namespace {

constexpr TimestampNs kNow = 1'700'000'000'000'000'000;

DecodeResult one(const std::string& event) { return decode_json_events(R"({"events":[)" + event + "]}", kNow); }

// Expects a rejection naming `field` at event index 0.
void expect_rejected(const std::string& event, const std::string& field) {
  DecodeResult r = one(event);
  ASSERT_TRUE(r.error.has_value()) << event;
  EXPECT_EQ(r.error->field, field) << event << " → " << r.error->message;
  EXPECT_EQ(r.error->index, std::optional<std::size_t>(0)) << event;
  EXPECT_TRUE(r.events.empty());
}

TEST(EventCodec, DecodesEveryKind) {
  DecodeResult r = decode_json_events(R"({"events":[
    {"type":"kernel","name":"gemm","device":"1","variant":"tiled","stream":"7","start_ns":100,"end_ns":250,
     "grid":[64,32],"block":[256],"shared_mem_bytes":4096,"registers_per_thread":40,
     "launch_start_ns":90,"launch_end_ns":95,"tags":{"run":"a"},"unknown_field":[1,2,3]},
    {"type":"memory","op":"alloc","address":"0xdead","size_bytes":1024,"kind":"shared","tag":"kv"},
    {"type":"command_buffer","id":"cb1","queue":"q0","enqueue_ns":1,"submit_ns":2,"start_ns":3,"end_ns":4},
    {"type":"inference","model":"llama","version":"2","latency_ms":120.5,"ttft_ms":20,"batch_size":4,
     "status":"error","input_tokens":100,"output_tokens":50,"ts_ns":5},
    {"type":"operator","op_type":"MatMul","name":"fc1","provider":"gpu","duration_ms":0.5,
     "input_shapes":[[1,768],[768,3072]]},
    {"type":"sample","metric":"app_queue_depth","labels":{"queue":"in"},"value":3.5}
  ]})", kNow);
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.events.size(), 6u);
  const auto& k = std::get<KernelEvent>(r.events[0]);
  EXPECT_EQ(k.name, "gemm");
  EXPECT_EQ(k.device, "1");
  EXPECT_EQ(k.end_ns - k.start_ns, 150);
  EXPECT_EQ(k.grid, (std::array<std::uint32_t, 3>{64, 32, 1}));
  EXPECT_EQ(k.block, (std::array<std::uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(k.registers_per_thread, 40u);
  EXPECT_EQ(k.tags, (Tags{{"run", "a"}}));
  const auto& m = std::get<MemoryEvent>(r.events[1]);
  EXPECT_EQ(m.kind, MemoryKind::kShared);
  EXPECT_EQ(m.ts_ns, kNow) << "no ts_ns: stamped on arrival";
  const auto& i = std::get<InferenceEvent>(r.events[3]);
  EXPECT_FALSE(i.ok);
  EXPECT_EQ(i.batch_size, 4u);
  EXPECT_EQ(i.output_tokens, 50u);
  const auto& o = std::get<OperatorEvent>(r.events[4]);
  EXPECT_EQ(format_shapes(o.input_shapes), "1x768,768x3072");
  const auto& s = std::get<SampleEvent>(r.events[5]);
  EXPECT_EQ(s.value, 3.5);
}

TEST(EventCodec, KernelDurationFillsTheMissingEnd) {
  auto r = one(R"({"type":"kernel","name":"k","start_ns":1000,"duration_ms":0.002})");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(std::get<KernelEvent>(r.events[0]).end_ns, 3000);
  r = one(R"({"type":"kernel","name":"k","duration_ms":1})");
  ASSERT_FALSE(r.error);
  EXPECT_EQ(std::get<KernelEvent>(r.events[0]).end_ns, kNow);
  EXPECT_EQ(std::get<KernelEvent>(r.events[0]).start_ns, kNow - 1'000'000);
}

TEST(EventCodec, RejectsBadInputNamingTheField) {
  expect_rejected(R"({"name":"k"})", "type");
  expect_rejected(R"({"type":"gpu_thing"})", "type");
  expect_rejected(R"({"type":"kernel","start_ns":1,"end_ns":2})", "name");
  expect_rejected(R"({"type":"kernel","name":7,"start_ns":1,"end_ns":2})", "name");
  expect_rejected(R"({"type":"kernel","name":"k","start_ns":5,"end_ns":2})", "end_ns");
  expect_rejected(R"({"type":"kernel","name":"k","duration_ms":-1})", "duration_ms");
  // Found by the fuzzer: a duration whose nanoseconds overflowed the timestamp arithmetic.
  expect_rejected(R"({"type":"kernel","name":"k","duration_ms":1e13})", "duration_ms");
  expect_rejected(R"({"type":"kernel","name":"k","start_ns":9223372036854775000,"duration_ms":1000})", "start_ns");
  expect_rejected(R"({"type":"kernel","name":"k","end_ns":-9223372036854775000,"duration_ms":1000})", "end_ns");
  expect_rejected(R"({"type":"kernel","name":"k","start_ns":1})", "end_ns");
  expect_rejected(R"({"type":"kernel","name":"k","start_ns":1.5,"end_ns":2})", "start_ns");
  expect_rejected(R"({"type":"kernel","name":"k","start_ns":"1","end_ns":2})", "start_ns");
  expect_rejected(R"({"type":"kernel","name":"k","duration_ms":1,"grid":[0,1]})", "grid");
  expect_rejected(R"({"type":"kernel","name":"k","duration_ms":1,"grid":[1,2,3,4]})", "grid");
  expect_rejected(R"({"type":"kernel","name":"k","duration_ms":1,"tags":{"a":1}})", "tags.a");
  expect_rejected(R"({"type":"kernel","name":"k","duration_ms":1,"tags":{"bad-name":"x"}})", "tags.bad-name");
  expect_rejected(R"({"type":"memory","op":"grow","address":"a"})", "op");
  expect_rejected(R"({"type":"memory","op":"alloc","address":"a"})", "size_bytes");
  expect_rejected(R"({"type":"memory","op":"alloc","address":"a","size_bytes":-5})", "size_bytes");
  expect_rejected(R"({"type":"memory","op":"alloc","address":"a","size_bytes":5,"kind":"vram"})", "kind");
  expect_rejected(R"({"type":"command_buffer","id":"c","queue":"q","enqueue_ns":5,"submit_ns":4,"start_ns":6,"end_ns":7})",
                  "submit_ns");
  expect_rejected(R"({"type":"inference","model":"m"})", "latency_ms");
  expect_rejected(R"({"type":"inference","model":"m","latency_ms":-2})", "latency_ms");
  expect_rejected(R"({"type":"inference","model":"m","latency_ms":10,"ttft_ms":20})", "ttft_ms");
  expect_rejected(R"({"type":"inference","model":"m","latency_ms":10,"status":"meh"})", "status");
  expect_rejected(R"({"type":"inference","model":"m","latency_ms":10,"batch_size":0})", "batch_size");
  expect_rejected(R"({"type":"operator","op_type":"Conv","name":"c","provider":"gpu"})", "duration_ms");
  expect_rejected(R"({"type":"operator","op_type":"Conv","name":"c","provider":"gpu","duration_ms":1,"input_shapes":[1]})",
                  "input_shapes");
  expect_rejected(R"({"type":"sample","metric":"9bad","value":1})", "metric");
  expect_rejected(R"({"type":"sample","metric":"ok_metric"})", "value");
  expect_rejected(R"({"type":"sample","metric":"ok_metric","value":1,"labels":{"a-b":"x"}})", "labels.a-b");
}

TEST(EventCodec, OneBadEventRejectsTheWholeRequestWithItsIndex) {
  DecodeResult r = decode_json_events(
      R"({"events":[{"type":"kernel","name":"a","duration_ms":1},{"type":"kernel","name":"b","duration_ms":1},
                   {"type":"kernel","name":"c","start_ns":9,"end_ns":1}]})",
      kNow);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->index, std::optional<std::size_t>(2));
  EXPECT_TRUE(r.events.empty());
}

TEST(EventCodec, RejectsMalformedBodies) {
  EXPECT_TRUE(decode_json_events("{", kNow).error);
  EXPECT_TRUE(decode_json_events(R"({"evts":[]})", kNow).error);
  EXPECT_TRUE(decode_json_events(R"({"events":{}})", kNow).error);
  EXPECT_TRUE(decode_json_events(R"({"events":[42]})", kNow).error);
  // Numbers JSON cannot hold as finite doubles fail the parse itself.
  EXPECT_TRUE(decode_json_events(R"({"events":[{"type":"inference","model":"m","latency_ms":1e999}]})", kNow).error);
  // Invalid UTF-8 inside a string value.
  std::string bad = "{\"events\":[{\"type\":\"kernel\",\"name\":\"\xff\xfe\",\"duration_ms\":1}]}";
  EXPECT_TRUE(decode_json_events(bad, kNow).error);
  EXPECT_FALSE(decode_json_events(R"({"events":[]})", kNow).error);
}

TEST(EventCodec, NdjsonSkipsBlankLinesAndNamesTheBadLine) {
  DecodeResult r = decode_ndjson_events(
      "{\"type\":\"kernel\",\"name\":\"a\",\"duration_ms\":1}\r\n\n{\"type\":\"sample\",\"metric\":\"m\",\"value\":2}\n",
      kNow);
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.events.size(), 2u);

  r = decode_ndjson_events("{\"type\":\"kernel\",\"name\":\"a\",\"duration_ms\":1}\nnot json\n", kNow);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->index, std::optional<std::size_t>(1));
  EXPECT_TRUE(r.events.empty());
}

TEST(EventCodec, RunReportsRoundTripAndAreValidated) {
  DecodeResult r = one(R"({"type":"run","name":"decode-b1","command":["python","gen.py"],"host":"h","pids":[12,13],
                           "start_ns":100,"end_ns":900,"exit_status":-1,"kinds":"kernel","records":50,"dropped":0,
                           "gpus":["0"],"trace_window_ns":200000000,"trace_every_ns":4000000000})");
  ASSERT_FALSE(r.error) << r.error->message;
  const auto& run = std::get<RunEvent>(r.events.at(0));
  EXPECT_EQ(run.trace_window_ns, 200'000'000);
  EXPECT_EQ(run.trace_every_ns, 4'000'000'000);
  EXPECT_EQ(run.command, (std::vector<std::string>{"python", "gen.py"}));
  EXPECT_EQ(run.pids, (std::vector<std::int64_t>{12, 13}));
  EXPECT_EQ(run.end_ns, 900);
  EXPECT_EQ(run.exit_status, -1);
  DecodeResult back = decode_ndjson_events(encode_ndjson(r.events), kNow);
  ASSERT_FALSE(back.error);
  EXPECT_EQ(encode_event(back.events.at(0)), encode_event(r.events[0]));
  // Only a name is needed: a run without a time starts now and goes on.
  DecodeResult bare = one(R"({"type":"run","name":"x"})");
  ASSERT_FALSE(bare.error);
  EXPECT_EQ(std::get<RunEvent>(bare.events.at(0)).start_ns, kNow);
  EXPECT_EQ(run_status(std::get<RunEvent>(bare.events[0])), "running");
  expect_rejected(R"({"type":"run"})", "name");
  expect_rejected(R"({"type":"run","name":"x","pids":[0]})", "pids");
  expect_rejected(R"({"type":"run","name":"x","pids":"12"})", "pids");
  expect_rejected(R"({"type":"run","name":"x","command":"python gen.py"})", "command");
  expect_rejected(R"({"type":"run","name":"x","start_ns":10,"end_ns":5})", "end_ns");
  expect_rejected(R"({"type":"run","name":"x","exit_status":1e3})", "exit_status");
  expect_rejected(R"({"type":"run","name":"x","records":-1})", "records");
  expect_rejected(R"({"type":"run","name":"x","trace_window_ns":100})", "trace_every_ns");
  expect_rejected(R"({"type":"run","name":"x","trace_every_ns":100})", "trace_window_ns");
  expect_rejected(R"({"type":"run","name":"x","trace_window_ns":0,"trace_every_ns":100})", "trace_window_ns");
  expect_rejected(R"({"type":"run","name":"x","trace_window_ns":200,"trace_every_ns":100})", "trace_every_ns");
}

}  // namespace
}  // namespace perfscope::server
