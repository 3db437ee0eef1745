// The streaming MCAP reader (mcap::StreamReader, mcap::Read through a FileSource) and compressed chunks:
// logs with and without a summary, zstd / lz4 / none, seeking checked against a linear scan, topic
// filters that skip chunks, crash-cut and damaged compressed logs, and session_log::ReadStream.
#include "platoon/log/mcap.hpp"
#include "platoon/log/session_log.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace mcap_stream_test_detail {

using namespace platoon::mcap;

constexpr uint64_t kMs = 1'000'000;
const std::vector<std::string> kCompressions = {"", "zstd", "lz4"};

// One written message and where it was written (its rank in the file), for the expected orders.
struct Written {
  Message message;
  uint64_t rank = 0;
};

std::vector<uint8_t> Bytes(uint32_t i, size_t size) {
  std::vector<uint8_t> p(size);
  // Compressible but message-specific: runs of a per-message byte with a counter in between.
  for (size_t k = 0; k < size; ++k) p[k] = static_cast<uint8_t>(k % 16 == 0 ? i + k / 16 : i * 13);
  return p;
}

void AddChannels(Writer& w) {
  REQUIRE(w.AddSchema({1, "platoon.wire.Envelope", "capnp", {1, 2, 3}}).Ok());
  REQUIRE(w.AddChannel({1, 1, "/platoon/world", "capnp", {}}).Ok());
  REQUIRE(w.AddChannel({2, 0, "/platoon/events", "json", {}}).Ok());
  REQUIRE(w.AddChannel({3, 1, "/platoon/data/lidar", "capnp", {}}).Ok());
}

// `count` messages over three channels. Log times are not monotonic: the lidar channel lags the world
// by up to 70 ms (a sensor's sim time behind the server's), so chunks overlap in time.
std::vector<Written> WriteLog(Writer& w, uint32_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Written> out;
  for (uint32_t i = 0; i < count; ++i) {
    Message m;
    m.channel_id = static_cast<uint16_t>(1 + i % 3);
    m.sequence = i;
    const uint64_t base = 5000 * kMs + uint64_t{i} * 2 * kMs;
    m.log_time_ns = m.channel_id == 3 ? base - (rng() % 70) * kMs : base + (rng() % 3) * kMs;
    m.publish_time_ns = m.log_time_ns + 7;
    m.data = Bytes(i, m.channel_id == 3 ? 2000 : 40 + i % 50);
    REQUIRE(w.WriteMessage({m.channel_id, m.sequence, m.log_time_ns, m.publish_time_ns}, m.data).Ok());
    out.push_back({std::move(m), i});
  }
  return out;
}

// The written messages in log-time order, equal times in write order (the reader's contract).
std::vector<Message> LogTimeOrder(std::vector<Written> w) {
  std::stable_sort(w.begin(), w.end(), [](const Written& a, const Written& b) {
    return std::tie(a.message.log_time_ns, a.rank) < std::tie(b.message.log_time_ns, b.rank);
  });
  std::vector<Message> out;
  for (auto& x : w) out.push_back(std::move(x.message));
  return out;
}

std::vector<Message> ReadAll(StreamReader& r) {
  std::vector<Message> out;
  Message m;
  while (r.Next(m)) out.push_back(m);
  return out;
}

std::unique_ptr<StreamReader> OpenBytes(const std::vector<uint8_t>& bytes) {
  std::string error;
  auto r = StreamReader::Open(std::make_unique<MemorySource>(std::span<const uint8_t>(bytes)), &error);
  INFO(error);
  REQUIRE(r != nullptr);
  return r;
}

WriterDef Layout(const std::string& compression) {
  WriterDef def = DefaultWriterDef();
  def.compression = compression;
  return def;
}

// A sink that accepts `budget` bytes and then fails, like a full disk.
class FailingSink final : public Sink {
 public:
  explicit FailingSink(uint64_t budget) : budget_(budget) {}
  bool Write(const void* data, size_t size) override {
    if (size > budget_) return false;
    budget_ -= size;
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
    return true;
  }
  bool Flush() override { return true; }
  std::string Name() const override { return "full-disk"; }
  std::string Error() const override { return "No space left on device"; }
  const std::vector<uint8_t>& Bytes() const { return bytes_; }

 private:
  uint64_t budget_;
  std::vector<uint8_t> bytes_;
};

}  // namespace mcap_stream_test_detail

using namespace mcap_stream_test_detail;

TEST_CASE("mcap stream reader: a closed log reads every message in log-time order with zstd lz4 and no compression") {
  for (const auto& compression : kCompressions) {
    CAPTURE(compression);
    MemorySink sink;
    Writer w(sink, Layout(compression));
    AddChannels(w);
    const auto written = WriteLog(w, 3000, 7);
    REQUIRE(w.Close().Ok());

    // The full check agrees: complete, no problem, every message, and the chunks carry the compression.
    const ReadResult full = ReadBytes(sink.Bytes());
    INFO(full.ProblemText());
    CHECK(full.complete);
    CHECK(full.messages.size() == written.size());
    REQUIRE(!full.chunk_indexes.empty());
    for (const auto& c : full.chunk_indexes) CHECK(c.compression == compression);

    auto r = OpenBytes(sink.Bytes());
    CHECK(r->HasSummary());
    REQUIRE(r->Stats().has_value());
    CHECK(r->Stats()->message_count == written.size());
    CHECK(r->Channels().size() == 3);
    const auto got = ReadAll(*r);
    CHECK(r->Problems().empty());
    CHECK(got == LogTimeOrder(written));
  }
}

TEST_CASE("mcap stream reader: compressed chunks are smaller than plain ones for repetitive payloads") {
  std::map<std::string, size_t> size;
  for (const auto& compression : kCompressions) {
    MemorySink sink;
    Writer w(sink, Layout(compression));
    AddChannels(w);
    WriteLog(w, 1500, 3);
    REQUIRE(w.Close().Ok());
    size[compression] = sink.Bytes().size();
  }
  CHECK(size["zstd"] < size[""] / 2);
  CHECK(size["lz4"] < size[""] / 2);
}

TEST_CASE("mcap stream reader: a log without a summary is read by a forward scan up to its last complete chunk") {
  for (const auto& compression : kCompressions) {
    CAPTURE(compression);
    MemorySink sink;
    Writer w(sink, Layout(compression));
    AddChannels(w);
    const auto written = WriteLog(w, 2000, 11);
    REQUIRE(w.Flush().Ok());  // never closed, as after kill -9
    const std::vector<uint8_t> whole = sink.Bytes();

    // Where each chunk ends, and how many messages end with it, from the full check of the uncut file.
    const ReadResult scan = ReadBytes(whole);
    REQUIRE(scan.chunks.size() > 5);

    // Cut inside chunks (a crash mid-write): every chunk before the cut, nothing of the cut one.
    std::mt19937 rng(5);
    for (int trial = 0; trial < 8; ++trial) {
      const auto& cut_chunk = scan.chunks[1 + rng() % (scan.chunks.size() - 1)];
      const uint64_t cut = cut_chunk.offset + 1 + rng() % (cut_chunk.length - 1);
      std::vector<uint8_t> bytes(whole.begin(), whole.begin() + static_cast<long>(cut));
      uint64_t expected = 0;
      for (const auto& c : scan.chunks)
        if (c.offset + c.length <= cut) expected += c.message_count;

      auto r = OpenBytes(bytes);
      CHECK_FALSE(r->HasSummary());
      REQUIRE(!r->Problems().empty());
      CHECK(r->Problems().front().message.find("truncated") != std::string::npos);
      const auto got = ReadAll(*r);
      CHECK(got.size() == expected);
      // The full check recovers the same count.
      CHECK(ReadBytes(bytes).messages.size() == expected);
      // Those read are the written ones (each message found among the written with its bytes).
      for (const auto& m : got) {
        const auto& src = written[m.sequence].message;
        CHECK(m == src);
      }
    }
  }
}

TEST_CASE("mcap stream reader: seek returns the first message at or after the time as a linear scan finds it") {
  for (const auto& compression : kCompressions) {
    CAPTURE(compression);
    MemorySink sink;
    Writer w(sink, Layout(compression));
    AddChannels(w);
    const auto written = WriteLog(w, 4000, 23);
    REQUIRE(w.Close().Ok());
    const auto ordered = LogTimeOrder(written);

    // Without a summary too: the same bytes less footer (the data section and DataEnd only).
    const ReadResult full = ReadBytes(sink.Bytes());
    const std::vector<uint8_t> no_summary(sink.Bytes().begin(), sink.Bytes().begin() + static_cast<long>(full.stopped_at));
    for (const auto* bytes : {&sink.Bytes(), &no_summary}) {
      auto r = OpenBytes(*bytes);
      CHECK(r->HasSummary() == (bytes == &sink.Bytes()));
      const auto [first, last] = r->TimeRange();
      std::mt19937 rng(99);
      std::vector<uint64_t> times = {first, (first + last) / 2, last, last + 1, first - 1};
      for (int k = 0; k < 10; ++k) times.push_back(first + rng() % (last - first));
      for (const uint64_t t : times) {
        CAPTURE(t);
        // Linear scan: every message at or after t, in log-time order.
        std::vector<Message> expected;
        for (const auto& m : ordered)
          if (m.log_time_ns >= t) expected.push_back(m);
        r->Seek(t);
        const auto got = ReadAll(*r);
        REQUIRE(got.size() == expected.size());
        if (!expected.empty()) CHECK(got.front() == expected.front());
        CHECK(got == expected);
      }
    }
  }
}

TEST_CASE("mcap stream reader: a topic filter hands only its topic and never reads chunks without it") {
  MemorySink sink;
  WriterDef def = Layout("zstd");
  def.chunk_size_bytes = 256 * 1024;  // a 300 kB cloud closes its chunk
  Writer w(sink, def);
  AddChannels(w);
  // Clouds of noise (incompressible) every 10 ms for 6 s; events only in the first second, so that the
  // later chunks hold clouds alone.
  std::mt19937 rng(31);
  std::vector<Written> written;
  for (uint32_t i = 0; i < 600; ++i) {
    const uint64_t t = 1000 * kMs + uint64_t{i} * 10 * kMs;
    std::vector<std::pair<uint16_t, std::vector<uint8_t>>> out;
    if (i < 100) out.emplace_back(2, Bytes(i, 60));
    std::vector<uint8_t> cloud(300'000);
    for (auto& b : cloud) b = static_cast<uint8_t>(rng());
    out.emplace_back(3, std::move(cloud));
    for (auto& [channel, data] : out) {
      Message m{channel, static_cast<uint32_t>(written.size()), t, t, std::move(data)};
      REQUIRE(w.WriteMessage({m.channel_id, m.sequence, m.log_time_ns, m.publish_time_ns}, m.data).Ok());
      written.push_back({std::move(m), written.size()});
    }
  }
  REQUIRE(w.Close().Ok());

  auto r = OpenBytes(sink.Bytes());
  r->SetTopics({"/platoon/events"});
  const auto got = ReadAll(*r);
  std::vector<Message> expected;
  for (const auto& m : LogTimeOrder(written))
    if (m.channel_id == 2) expected.push_back(m);
  CHECK(got.size() == 100);
  CHECK(got == expected);
  // The chunks of clouds alone (five sixths of the file) stay unread.
  CHECK(r->BytesRead() < sink.Bytes().size() / 4);

  // An unknown topic gives nothing; clearing the filter gives everything again.
  r->SetTopics({"/nothing"});
  CHECK(ReadAll(*r).empty());
  r->SetTopics({});
  CHECK(ReadAll(*r).size() == written.size());
}

TEST_CASE("mcap stream reader: a damaged compressed chunk is reported by offset and skipped") {
  for (const std::string compression : {"zstd", "lz4"}) {
    CAPTURE(compression);
    MemorySink sink;
    Writer w(sink, Layout(compression));
    AddChannels(w);
    WriteLog(w, 2000, 41);
    REQUIRE(w.Close().Ok());
    const ReadResult full = ReadBytes(sink.Bytes());
    REQUIRE(full.chunks.size() > 4);
    const ChunkInfo victim = full.chunks[2];
    std::vector<uint8_t> bytes = sink.Bytes();
    // Flip bytes near the end of the chunk's compressed records.
    for (uint64_t k = 20; k < 28; ++k) bytes[victim.offset + victim.length - k] ^= 0x5A;

    auto r = OpenBytes(bytes);
    const auto got = ReadAll(*r);
    CHECK(got.size() == full.messages.size() - victim.message_count);
    REQUIRE(r->Problems().size() == 1);
    CHECK(r->Problems()[0].offset == victim.offset);
    const ReadResult checked = ReadBytes(bytes);
    CHECK(checked.messages.size() == full.messages.size() - victim.message_count);
    CHECK(!checked.complete);
  }
}

TEST_CASE("mcap stream reader: a write error with compression stops the writer and leaves every complete chunk readable") {
  for (const std::string compression : {"zstd", "lz4"}) {
    CAPTURE(compression);
    FailingSink sink(40'000);
    Writer w(sink, Layout(compression));
    AddChannels(w);
    uint32_t accepted = 0;
    Status failed;
    for (uint32_t i = 0; i < 20000 && failed.Ok(); ++i) {
      const auto data = Bytes(i, 100);
      failed = w.WriteMessage({static_cast<uint16_t>(1 + i % 2), i, 1000 * kMs + i * kMs, 0}, data);
      if (failed.Ok()) ++accepted;
    }
    REQUIRE_FALSE(failed.Ok());
    CHECK(failed.error.find("No space left on device") != std::string::npos);
    // Later calls return the first error and never throw.
    CHECK(w.Close().error == failed.error);
    const ReadResult r = ReadBytes(sink.Bytes());
    uint64_t in_chunks = 0;
    for (const auto& c : r.chunks) in_chunks += c.message_count;
    CHECK(r.messages.size() == in_chunks);
    CHECK(in_chunks > 0);
    CHECK(in_chunks <= accepted + 1);  // the failing call's chunk may be whole in the file
    auto s = OpenBytes(sink.Bytes());
    CHECK(ReadAll(*s).size() == in_chunks);
  }
}

TEST_CASE("mcap stream reader: garbage chunk sizes and unknown compressions give problems not crashes") {
  MemorySink sink;
  Writer w(sink, Layout("zstd"));
  AddChannels(w);
  WriteLog(w, 500, 2);
  REQUIRE(w.Close().Ok());
  const ReadResult full = ReadBytes(sink.Bytes());
  REQUIRE(full.chunks.size() > 1);
  const ChunkInfo& c = full.chunks[0];
  // The uncompressed size field (after opcode, length, start, end) claims 2^62 bytes.
  std::vector<uint8_t> huge = sink.Bytes();
  for (int k = 0; k < 8; ++k) huge[c.offset + 9 + 16 + k] = k == 7 ? 0x40 : 0;
  auto r = OpenBytes(huge);
  ReadAll(*r);
  REQUIRE(!r->Problems().empty());
  CHECK(r->Problems()[0].message.find("limit") != std::string::npos);
  // "zstd" renamed to "zzzz": a compression no reader knows.
  std::vector<uint8_t> unknown = sink.Bytes();
  std::memcpy(&unknown[c.offset + 9 + 28 + 4], "zzzz", 4);
  const ReadResult u = ReadBytes(unknown);
  REQUIRE(!u.problems.empty());
  CHECK(u.ProblemText().find("'zzzz'") != std::string::npos);
  CHECK(u.messages.size() == full.messages.size() - c.message_count);
}

TEST_CASE("session log: ReadStream hands the topics and times asked for as Read does on a zstd log") {
  namespace fs = std::filesystem;
  const fs::path path = fs::temp_directory_path() / ("platoon_stream_" + std::to_string(::getpid()) + ".mcap");
  WriterDef def = DefaultWriterDef();
  def.compression = "zstd";
  std::string error;
  {
    auto w = platoon::session_log::Writer::Open(path.string(), &error, def);
    REQUIRE(w);
    for (int i = 0; i < 500; ++i) {
      const std::string json = "{\"i\":" + std::to_string(i) + "}";
      REQUIRE(w->WriteJson("/platoon/events", "", "", json, i * 10 * int64_t{kMs}, 0).Ok());
      const std::vector<uint8_t> env(64, static_cast<uint8_t>(i));
      REQUIRE(w->WriteEnvelope("/platoon/data/x", env, i * 10 * int64_t{kMs}, 0).Ok());
    }
    REQUIRE(w->Close().Ok());
  }
  // Read (the full check) gives every message; ReadStream the chosen topic from 2 s to 3 s.
  std::vector<std::string> all_events;
  const auto full = platoon::session_log::Read(path.string(), [&](const platoon::session_log::Entry& e) {
    if (e.topic == "/platoon/events" && e.log_time_ns >= 2000 * kMs && e.log_time_ns <= 3000 * kMs)
      all_events.emplace_back(reinterpret_cast<const char*>(e.data.data()), e.data.size());
  });
  CHECK(full.complete);
  platoon::session_log::ReadOptions options;
  options.topics = {"/platoon/events"};
  options.from_ns = 2000 * kMs;
  options.until_ns = 3000 * kMs;
  uint64_t last_progress = 0, file_size = 0;
  options.progress = [&](uint64_t done, uint64_t total) {
    CHECK(done >= last_progress);
    last_progress = done;
    file_size = total;
  };
  std::vector<std::string> events;
  const auto streamed = platoon::session_log::ReadStream(path.string(), options, [&](const platoon::session_log::Entry& e) {
    CHECK(e.topic == "/platoon/events");
    events.emplace_back(reinterpret_cast<const char*>(e.data.data()), e.data.size());
  });
  CHECK(streamed.complete);
  CHECK(events == all_events);
  CHECK(events.size() == 101);
  CHECK(file_size == fs::file_size(path));
  CHECK(last_progress == file_size);
  fs::remove(path);

  // A missing file: one problem naming it.
  const auto missing = platoon::session_log::ReadStream(path.string(), {}, [](const platoon::session_log::Entry&) {});
  REQUIRE(missing.problems.size() == 1);
  CHECK(missing.problems[0].message.find(path.string()) != std::string::npos);
}
