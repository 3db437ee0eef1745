// The session log's writer and reader: channels by topic, the embedded schema, sim-time log times,
// and a writer whose disk fails.
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <unistd.h>

namespace {

using namespace platoon;

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A sink that accepts `budget` bytes and then fails like a full disk.
class FullDisk final : public mcap::Sink {
 public:
  explicit FullDisk(size_t budget) : budget_(budget) {}
  bool Write(const void*, size_t size) override {
    if (size > budget_) return false;
    budget_ -= size;
    return true;
  }
  bool Flush() override { return true; }
  std::string Name() const override { return "/full/disk.mcap"; }
  std::string Error() const override { return "No space left on device"; }

 private:
  size_t budget_;
};

}  // namespace

TEST_CASE("session log: world states, events and data streams read back by topic with sim-time log times") {
  const auto path = (std::filesystem::temp_directory_path() / ("session_log_" + std::to_string(getpid()) + ".mcap")).string();
  {
    std::string error;
    auto writer = session_log::Writer::Open(path, &error);
    REQUIRE_MESSAGE(writer, error);
    protocol::WorldState w;
    w.sequence = 7;
    w.sim_time_ns = 1'500'000'000;
    CHECK(writer->WriteJson(session_log::kSessionTopic, "", "", R"({"name":"t"})", -5, 100).Ok());
    for (int i = 0; i < 3; ++i) {
      w.sim_time_ns += 100'000'000;
      CHECK(writer->WriteEnvelope(session_log::kWorldTopic, Bytes(protocol::Encode(w)), w.sim_time_ns, 42).Ok());
    }
    CHECK(writer->WriteJson(session_log::kEventsTopic, "", "", R"({"event":"paused"})", w.sim_time_ns, 0).Ok());
    protocol::ImuMeasurement imu;
    imu.header.sensor_id = "imu";
    CHECK(writer->WriteEnvelope(session_log::DataTopic("imu"), Bytes(protocol::Encode(imu)), 2'000'000'000, 0).Ok());
    CHECK(writer->TopicCounts().at(std::string(session_log::kWorldTopic)) == 3);
    CHECK(writer->Close().Ok());
  }
  std::map<std::string, int> counts;
  std::vector<uint64_t> world_times;
  uint64_t session_log_time = 99;
  auto result = session_log::Read(path, [&](const session_log::Entry& e) {
    ++counts[std::string(e.topic)];
    if (e.topic == session_log::kWorldTopic) {
      CHECK(e.message_encoding == "capnp");
      auto decoded = protocol::Decode(std::string_view(reinterpret_cast<const char*>(e.data.data()), e.data.size()));
      REQUIRE(decoded.message);
      CHECK(std::get<protocol::WorldState>(*decoded.message).sim_time_ns == static_cast<int64_t>(e.log_time_ns));
      CHECK(e.publish_time_ns == 42);
      world_times.push_back(e.log_time_ns);
    }
    if (e.topic == session_log::kSessionTopic) session_log_time = e.log_time_ns;
  });
  CHECK(result.complete);
  CHECK(result.ProblemText() == "");
  CHECK(counts["/platoon/world"] == 3);
  CHECK(counts["/platoon/events"] == 1);
  CHECK(counts["/platoon/data/imu"] == 1);
  CHECK(session_log_time == 0);  // negative sim time is logged at 0
  CHECK(world_times == std::vector<uint64_t>{1'600'000'000, 1'700'000'000, 1'800'000'000});
  // The schema record carries the platoon.capnp text.
  bool schema_found = false;
  for (const auto& [id, s] : result.schemas)
    if (s.name == session_log::kEnvelopeSchemaName) {
      schema_found = true;
      CHECK(s.encoding == "capnp");
      const std::string text(s.data.begin(), s.data.end());
      CHECK(text.find("struct Envelope") != std::string::npos);
    }
  CHECK(schema_found);
  std::filesystem::remove(path);
}

TEST_CASE("session log: a full disk stops the writer with an error naming the path, and nothing throws") {
  FullDisk sink(3000);
  session_log::Writer writer(sink);
  protocol::WorldState w;
  mcap::Status last;
  int ok = 0;
  for (int i = 0; i < 200 && last.Ok(); ++i) {
    w.sim_time_ns = i * 200'000'000LL;  // every message closes a chunk: the disk fills quickly
    last = writer.WriteEnvelope(session_log::kWorldTopic, Bytes(protocol::Encode(w)), w.sim_time_ns, 0);
    if (last.Ok()) ++ok;
  }
  CHECK_FALSE(last.Ok());
  CHECK(last.error.find("/full/disk.mcap") != std::string::npos);
  CHECK(last.error.find("No space left on device") != std::string::npos);
  CHECK(writer.Error() == last.error);
  CHECK(writer.WriteJson(session_log::kEventsTopic, "", "", "{}", 0, 0).error == last.error);
  CHECK(ok < 200);
}

TEST_CASE("session log: the session info object survives quotes, newlines and non-ASCII text") {
  session_log::SessionInfo info{"drivers \"A\"", "[session]\nname = \"drivers\"\t# Größe\n", "/tmp/x.toml", "rec"};
  const std::string json = session_log::SessionInfoJson(info);
  CHECK(json.find('\n') == std::string::npos);
  auto back = session_log::ParseSessionInfo(json);
  REQUIRE(back);
  CHECK(back->name == info.name);
  CHECK(back->config == info.config);
  CHECK(back->config_path == info.config_path);
  CHECK(back->recorder == info.recorder);
  CHECK_FALSE(session_log::ParseSessionInfo("not json"));
  auto partial = session_log::ParseSessionInfo(R"({"count": 3, "name": "x\u0041"})");
  REQUIRE(partial);
  CHECK(partial->name == "xA");
}
