#include "platoon/log/mcap.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace platoon::mcap;

namespace {

constexpr uint64_t kMcapMs = 1'000'000;

// A payload that differs per message, so that a mixed-up message is noticed.
std::vector<uint8_t> Payload(uint32_t i, size_t size) {
  std::vector<uint8_t> p(size);
  for (size_t k = 0; k < size; ++k) p[k] = static_cast<uint8_t>(i * 31 + k * 7);
  return p;
}

// Two schemas, three channels (one without a schema).
void AddSampleChannels(Writer& w) {
  REQUIRE(w.AddSchema({1, "platoon.EntityUpdate", "x-capnp", {1, 2, 3, 4}}).Ok());
  REQUIRE(w.AddSchema({2, "foxglove.SceneUpdate", "jsonschema", {'{', '}'}}).Ok());
  REQUIRE(w.AddChannel({1, 1, "/world/entities", "x-capnp", {{"rate_hz", "100"}}}).Ok());
  REQUIRE(w.AddChannel({2, 2, "/foxglove/scene", "json", {}}).Ok());
  REQUIRE(w.AddChannel({3, 0, "/session/events", "x-text", {{"a", "b"}, {"c", ""}}}).Ok());
}

// Message i: channel 1 + i % 3, log time i ms, payload of 10..109 bytes.
Message SampleMessage(uint32_t i) {
  Message m;
  m.channel_id = static_cast<uint16_t>(1 + i % 3);
  m.sequence = i;
  m.log_time_ns = 1000 * kMcapMs + i * kMcapMs;
  m.publish_time_ns = m.log_time_ns - 5;
  m.data = Payload(i, 10 + i % 100);
  return m;
}

Status WriteSample(Writer& w, uint32_t i) {
  const Message m = SampleMessage(i);
  return w.WriteMessage({m.channel_id, m.sequence, m.log_time_ns, m.publish_time_ns}, m.data);
}

// A closed file of `count` messages at 1 ms steps (100 ms chunks: about count / 100 chunks).
std::vector<uint8_t> ClosedSample(uint32_t count) {
  MemorySink sink;
  Writer w(sink);
  AddSampleChannels(w);
  for (uint32_t i = 0; i < count; ++i) REQUIRE(WriteSample(w, i).Ok());
  REQUIRE(w.Close().Ok());
  return sink.Bytes();
}

bool HasProblem(const ReadResult& r, const std::string& text) {
  for (const auto& p : r.problems) {
    if (p.message.find(text) != std::string::npos) return true;
  }
  return false;
}

// Accepts `limit` bytes, then fails like a full disk.
class FullDiskSink final : public Sink {
 public:
  explicit FullDiskSink(size_t limit) : limit_(limit) {}
  bool Write(const void* data, size_t size) override {
    ++write_calls_;
    if (bytes_.size() + size > limit_) return false;
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
    return true;
  }
  bool Flush() override { return true; }
  std::string Name() const override { return "/mnt/full/session.mcap"; }
  std::string Error() const override { return "No space left on device"; }
  const std::vector<uint8_t>& Bytes() const { return bytes_; }
  int write_calls_ = 0;

 private:
  size_t limit_;
  std::vector<uint8_t> bytes_;
};

}  // namespace

TEST_CASE("mcap crc32: matches the standard check value of the zlib polynomial") {
  const char* text = "123456789";
  CHECK(Crc32(text, 9) == 0xCBF43926u);
  // Continuing a CRC over two pieces gives the CRC of the whole.
  CHECK(Crc32(text + 4, 5, Crc32(text, 4)) == 0xCBF43926u);
  CHECK(Crc32(nullptr, 0) == 0u);
}

TEST_CASE("mcap: a closed file round-trips schemas, channels, messages across chunks and statistics") {
  const auto bytes = ClosedSample(1000);
  const ReadResult r = ReadBytes(bytes);
  INFO(r.ProblemText());
  CHECK(r.problems.empty());
  CHECK(r.complete);
  CHECK(r.summary_found);
  CHECK(r.profile == "x-platoon");
  CHECK(r.library == "platoon-mcap");

  REQUIRE(r.schemas.size() == 2);
  CHECK(r.schemas.at(1) == Schema{1, "platoon.EntityUpdate", "x-capnp", {1, 2, 3, 4}});
  CHECK(r.schemas.at(2).encoding == "jsonschema");
  REQUIRE(r.channels.size() == 3);
  CHECK(r.channels.at(1).metadata.at("rate_hz") == "100");
  CHECK(r.channels.at(3).schema_id == 0);
  CHECK(r.channels.at(3).metadata.size() == 2);

  REQUIRE(r.messages.size() == 1000);
  for (uint32_t i = 0; i < 1000; ++i) CHECK(r.messages[i] == SampleMessage(i));

  // 1000 ms of messages in 100 ms chunks: ten chunks, each indexed in the summary.
  CHECK(r.chunks.size() == 10);
  CHECK(r.chunk_indexes.size() == r.chunks.size());
  for (size_t k = 0; k < r.chunks.size(); ++k) {
    CHECK(r.chunk_indexes[k].offset == r.chunks[k].offset);
    CHECK(r.chunks[k].message_end_time_ns - r.chunks[k].message_start_time_ns <= 100 * kMcapMs);
  }

  REQUIRE(r.statistics.has_value());
  CHECK(r.statistics->message_count == 1000);
  CHECK(r.statistics->chunk_count == 10);
  CHECK(r.statistics->schema_count == 2);
  CHECK(r.statistics->channel_count == 3);
  CHECK(r.statistics->channel_message_counts.at(1) == 334);
  CHECK(r.statistics->channel_message_counts.at(2) == 333);
  CHECK(r.statistics->channel_message_counts.at(3) == 333);
  CHECK(r.statistics->message_start_time_ns == 1000 * kMcapMs);
  CHECK(r.statistics->message_end_time_ns == 1999 * kMcapMs);
}

TEST_CASE("mcap: the file on disk reads back through FileSink and Read, with a message callback too") {
  const auto path = (std::filesystem::temp_directory_path() / "platoon_mcap_test_roundtrip.mcap").string();
  {
    std::string error;
    auto sink = FileSink::Open(path, &error);
    REQUIRE_MESSAGE(sink, error);
    Writer w(*sink);
    AddSampleChannels(w);
    for (uint32_t i = 0; i < 250; ++i) REQUIRE(WriteSample(w, i).Ok());
    REQUIRE(w.Close().Ok());
    CHECK(w.Stats().message_count == 250);
    CHECK(w.BytesWritten() == std::filesystem::file_size(path));
  }
  const ReadResult r = Read(path);
  INFO(r.ProblemText());
  CHECK(r.complete);
  CHECK(r.messages.size() == 250);

  std::vector<uint32_t> sequences;
  const ReadResult streamed = Read(path, [&](const Message& m) { sequences.push_back(m.sequence); });
  CHECK(streamed.complete);
  CHECK(streamed.messages.empty());
  REQUIRE(sequences.size() == 250);
  for (uint32_t i = 0; i < 250; ++i) CHECK(sequences[i] == i);
  std::filesystem::remove(path);
}

TEST_CASE("mcap: a chunk closes once its records reach the size limit") {
  MemorySink sink;
  WriterDef def = DefaultWriterDef();
  def.chunk_size_bytes = 4096;
  Writer w(sink, def);
  AddSampleChannels(w);
  // 1000-byte messages all at the same log time: only the size closes chunks.
  const auto data = Payload(7, 1000);
  for (uint32_t i = 0; i < 40; ++i) REQUIRE(w.WriteMessage({1, i, 5 * kMcapMs, 5 * kMcapMs}, data).Ok());
  REQUIRE(w.Close().Ok());
  const ReadResult r = ReadBytes(sink.Bytes());
  INFO(r.ProblemText());
  CHECK(r.complete);
  CHECK(r.messages.size() == 40);
  // A message record is 9 + 22 + 1000 = 1031 bytes: the fourth brings a chunk to 4124 >= 4096 bytes.
  REQUIRE(r.chunks.size() == 10);
  for (const auto& c : r.chunks) CHECK(c.message_count == 4);
}

TEST_CASE("mcap: a file cut at 50 offsets in the last part returns every message of the complete chunks before the cut") {
  const auto bytes = ClosedSample(600);
  const ReadResult full = ReadBytes(bytes);
  REQUIRE(full.complete);
  REQUIRE(full.chunks.size() == 6);
  const uint64_t from = full.chunks[3].offset - 20;
  const uint64_t to = full.stopped_at;  // just after DataEnd

  std::vector<uint64_t> cuts;
  for (int k = 0; k < 50; ++k) cuts.push_back(from + (to - from) * k / 50);
  for (size_t c = 3; c < full.chunks.size(); ++c) {
    const uint64_t end = full.chunks[c].offset + full.chunks[c].length;
    cuts.insert(cuts.end(), {full.chunks[c].offset, full.chunks[c].offset + 5, end - 1, end, end + 1});
  }

  for (const uint64_t cut : cuts) {
    CAPTURE(cut);
    const ReadResult r = ReadBytes(std::span<const uint8_t>(bytes.data(), cut));
    size_t expected = 0;
    bool inside_chunk = false;
    uint64_t chunk_at = 0;
    for (const auto& c : full.chunks) {
      if (c.offset + c.length <= cut) expected += c.message_count;
      if (c.offset < cut && cut < c.offset + c.length) {
        inside_chunk = true;
        chunk_at = c.offset;
      }
    }
    INFO(r.ProblemText());
    CHECK_FALSE(r.complete);
    CHECK_FALSE(r.problems.empty());
    CHECK(HasProblem(r, "no footer"));
    REQUIRE(r.messages.size() == expected);
    for (size_t i = 0; i < expected; ++i) CHECK(r.messages[i] == full.messages[i]);
    if (inside_chunk && cut >= chunk_at + 9) {
      CHECK(HasProblem(r, "truncated chunk at byte " + std::to_string(chunk_at)));
      CHECK(r.stopped_at == chunk_at);
    }
  }
}

TEST_CASE("mcap: a writer that is never closed (kill -9) loses only messages of the last 100 ms") {
  MemorySink sink;
  Writer w(sink);
  AddSampleChannels(w);
  // 1234 messages at 1 ms: the process "dies" after the last write without Flush or Close.
  const uint32_t count = 1234;
  for (uint32_t i = 0; i < count; ++i) REQUIRE(WriteSample(w, i).Ok());
  const ReadResult r = ReadBytes(sink.Bytes());
  CHECK_FALSE(r.complete);
  CHECK(HasProblem(r, "no footer"));
  const uint64_t last_ns = SampleMessage(count - 1).log_time_ns;
  size_t older = 0;
  for (uint32_t i = 0; i < count; ++i) older += SampleMessage(i).log_time_ns + 100 * kMcapMs <= last_ns;
  CHECK(r.messages.size() >= older);
  CHECK(r.messages.size() < count);
  for (size_t i = 0; i < r.messages.size(); ++i) CHECK(r.messages[i] == SampleMessage(static_cast<uint32_t>(i)));

  // Flush makes everything written so far readable.
  REQUIRE(w.Flush().Ok());
  CHECK(ReadBytes(sink.Bytes()).messages.size() == count);
}

TEST_CASE("mcap: a flipped byte in a chunk is reported by its offset and the other chunks' messages are returned") {
  auto bytes = ClosedSample(500);
  const ReadResult full = ReadBytes(bytes);
  REQUIRE(full.chunks.size() == 5);
  const ChunkInfo damaged = full.chunks[2];
  bytes[damaged.offset + damaged.length - 7] ^= 0x40;

  const ReadResult r = ReadBytes(bytes);
  INFO(r.ProblemText());
  CHECK_FALSE(r.complete);
  CHECK(HasProblem(r, "damaged chunk at byte " + std::to_string(damaged.offset)));
  CHECK(r.problems.front().offset == damaged.offset);

  // Every message except the damaged chunk's, in order.
  std::vector<Message> expected;
  size_t index = 0;
  for (size_t c = 0; c < full.chunks.size(); ++c) {
    for (uint64_t k = 0; k < full.chunks[c].message_count; ++k, ++index) {
      if (c != 2) expected.push_back(full.messages[index]);
    }
  }
  CHECK(r.messages.size() == 500 - damaged.message_count);
  CHECK(r.messages == expected);
}

TEST_CASE("mcap: every single corrupted byte of a closed file is detected, never crashes") {
  const auto good = ClosedSample(30);
  REQUIRE(ReadBytes(good).complete);
  for (size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] ^= 0xFF;
    const ReadResult r = ReadBytes(bad);
    CAPTURE(i);
    CHECK_FALSE(r.complete);
    CHECK_FALSE(r.problems.empty());
  }
}

TEST_CASE("mcap: a failing sink stops the writer with an error naming the path, and the file stays readable") {
  FullDiskSink sink(50'000);
  Writer w(sink);
  AddSampleChannels(w);
  Status failed;
  uint32_t i = 0;
  for (; i < 100'000 && failed.Ok(); ++i) failed = WriteSample(w, i);
  REQUIRE_FALSE(failed.Ok());
  CHECK(failed.error.find("/mnt/full/session.mcap") != std::string::npos);
  CHECK(failed.error.find("No space left on device") != std::string::npos);
  CHECK(w.Error() == failed.error);

  // The writer refuses everything after the failure and never touches the sink again.
  const int calls = sink.write_calls_;
  CHECK(WriteSample(w, i).error == failed.error);
  CHECK(w.AddChannel({9, 0, "/late", "json", {}}).error == failed.error);
  CHECK(w.Flush().error == failed.error);
  CHECK(w.Close().error == failed.error);
  CHECK(sink.write_calls_ == calls);

  // What reached the disk reads back: the complete chunks, in order.
  const ReadResult r = ReadBytes(sink.Bytes());
  CHECK_FALSE(r.complete);
  CHECK(r.chunks.size() >= 2);
  CHECK(r.messages.size() > 0);
  for (size_t k = 0; k < r.messages.size(); ++k) CHECK(r.messages[k] == SampleMessage(static_cast<uint32_t>(k)));
}

TEST_CASE("mcap: writing to /dev/full gives a no-space error naming the path") {
  if (!std::filesystem::exists("/dev/full")) return;
  std::string error;
  auto sink = FileSink::Open("/dev/full", &error);
  REQUIRE_MESSAGE(sink, error);
  Writer w(*sink);
  const Status s = w.AddChannel({1, 0, "/x", "json", {}});
  REQUIRE_FALSE(s.Ok());
  CHECK(s.error.find("/dev/full") != std::string::npos);
  CHECK(s.error.find(std::strerror(ENOSPC)) != std::string::npos);

  std::string open_error;
  CHECK_FALSE(FileSink::Open("/nonexistent-dir/x.mcap", &open_error));
  CHECK(open_error.find("/nonexistent-dir/x.mcap") != std::string::npos);
}

TEST_CASE("mcap: the writer refuses messages on unknown channels and conflicting ids") {
  MemorySink sink;
  Writer w(sink);
  CHECK_FALSE(w.AddSchema({0, "zero", "", {}}).Ok());
  CHECK_FALSE(w.AddChannel({1, 4, "/needs-schema-4", "json", {}}).Ok());
  REQUIRE(w.AddSchema({4, "s", "jsonschema", {'{', '}'}}).Ok());
  CHECK(w.AddSchema({4, "s", "jsonschema", {'{', '}'}}).Ok());  // identical: no-op
  CHECK_FALSE(w.AddSchema({4, "other", "jsonschema", {}}).Ok());
  REQUIRE(w.AddChannel({1, 4, "/a", "json", {}}).Ok());
  CHECK_FALSE(w.AddChannel({1, 4, "/b", "json", {}}).Ok());
  const uint8_t byte = 1;
  const Status unknown = w.WriteMessage({2, 0, 0, 0}, {&byte, 1});
  CHECK(unknown.error.find("channel 2") != std::string::npos);
  // A refused call is not a write failure: the writer goes on.
  CHECK(w.Error().empty());
  REQUIRE(w.WriteMessage({1, 0, 0, 0}, {&byte, 1}).Ok());
  REQUIRE(w.Close().Ok());
  CHECK(w.WriteMessage({1, 1, 1, 1}, {&byte, 1}).error.find("closed") != std::string::npos);
  const ReadResult r = ReadBytes(sink.Bytes());
  CHECK(r.complete);
  CHECK(r.schemas.size() == 1);
  CHECK(r.messages.size() == 1);
}

TEST_CASE("mcap: garbage inputs give clear errors and never crash") {
  const std::vector<uint8_t> magic = {0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'};

  // Empty, magic only, half a magic.
  CHECK(ReadBytes({}).problems.at(0).message.find("empty file") != std::string::npos);
  const ReadResult only_magic = ReadBytes(magic);
  CHECK_FALSE(only_magic.complete);
  CHECK(HasProblem(only_magic, "file ends at byte 8"));
  CHECK(HasProblem(ReadBytes(std::span(magic.data(), 4)), "truncated magic"));

  // A missing file names its path.
  const ReadResult missing = Read("/nonexistent-dir/none.mcap");
  CHECK(HasProblem(missing, "/nonexistent-dir/none.mcap: cannot open"));

  // Random bytes, with and without a magic in front; a huge length right after the magic.
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint8_t> junk(rng() % 4000);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    const ReadResult plain = ReadBytes(junk);
    CHECK_FALSE(plain.complete);
    CHECK_FALSE(plain.problems.empty());
    auto prefixed = magic;
    prefixed.insert(prefixed.end(), junk.begin(), junk.end());
    const ReadResult after_magic = ReadBytes(prefixed);
    CHECK_FALSE(after_magic.complete);
    CHECK_FALSE(after_magic.problems.empty());
  }
  const std::string text = "this is not an MCAP file, only text";
  CHECK(HasProblem(ReadBytes(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())), "not an MCAP file"));
  auto huge = magic;
  huge.insert(huge.end(), {0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0});
  CHECK(HasProblem(ReadBytes(huge), "truncated header at byte 8"));
}
