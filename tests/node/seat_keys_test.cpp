// Keys on a driver seat (viewer/src/seat_keys.cpp, node/src/driver_seat.cpp, ClientModuleContext::Mark):
// a press in the seat window is one marker "key:<name>" at the node's sim time, named as a scenario `key`
// condition names it; in a lock-step session the marker reaches the server's event log from the seat and
// fires the condition.
#include "../support/in_process_session.hpp"

#include "platoon/config/scenario.hpp"
#include "platoon/config/session.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/server/scenario_system.hpp"
#include "platoon/viewer/seat_keys.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace platoon::testing {
namespace {

// SDL keycodes (SDL_keycode.h) without SDL in the test: printable keys are their character, F-keys
// SDL_SCANCODE_TO_KEYCODE of scancodes 58..69.
constexpr int32_t kSdlEscape = 27;
constexpr int32_t kSdlReturn = '\r';
constexpr int32_t kSdlSpace = ' ';
constexpr int32_t kSdlF1 = (1 << 30) | 58;
constexpr int32_t kSdlLeft = (1 << 30) | 80;
constexpr int32_t kSdlKeypad1 = (1 << 30) | 89;

std::shared_ptr<spdlog::logger> Quiet() {
  return std::make_shared<spdlog::logger>("seat-keys-test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// Records the markers a module sends; no world.
class MarkContext final : public node::ModuleContext {
 public:
  std::vector<std::string> marks;
  std::vector<node::RemoteEntity> RemoteEntities(int64_t) const override { return {}; }
  void Publish(const protocol::EntityState&) override {}
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override { received = 0, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 1; }
  void Mark(const std::string& text) override { marks.push_back(text); }
};

const char* kSeatSession = R"(
[session]
name = "keys"
mode = "lockstep"
step_hz = 100
end_s = 2

[road]
generate_length_m = 1000
seed = 1
lanes = 1

[[node]]
name = "driver"
role = "driver"
input = "model:follow"
start_s_m = 40
start_lane = -1
start_speed_mps = 10
headless = true

[[event]]
name = "space_pressed"
when = { key = "space", seat = "driver" }
do = [ { action = "mark", text = "seen" } ]
)";

}  // namespace

TEST_CASE("seat keys: SDL key-downs are named as a key condition names them, repeats and other keys are not") {
  CHECK(viewer::SeatKeyName(kSdlSpace, false) == "space");
  CHECK(viewer::SeatKeyName(kSdlReturn, false) == "return");
  CHECK(viewer::SeatKeyName('b', false) == "b");
  CHECK(viewer::SeatKeyName('7', false) == "7");
  CHECK(viewer::SeatKeyName(kSdlF1 + 4, false) == "f5");
  CHECK(viewer::SeatKeyName(kSdlF1 + 11, false) == "f12");
  // SDL's auto-repeat of a held key is no new press.
  CHECK(viewer::SeatKeyName(kSdlSpace, true).empty());
  // Esc closes the seat; arrows drive; keypad and capitals (no keycode of their own) are not seat keys.
  CHECK(viewer::SeatKeyName(kSdlEscape, false).empty());
  CHECK(viewer::SeatKeyName(kSdlLeft, false).empty());
  CHECK(viewer::SeatKeyName(kSdlKeypad1, false).empty());
  CHECK(viewer::SeatKeyName('B', false).empty());

  // Every name the window sends is one the scenario config accepts, and every accepted name is sent.
  std::set<std::string> sent;
  for (int32_t k = 0; k < 128; ++k)
    if (auto n = viewer::SeatKeyName(k, false); !n.empty()) sent.insert(n);
  for (int32_t k = kSdlF1; k < kSdlF1 + 24; ++k)
    if (auto n = viewer::SeatKeyName(k, false); !n.empty()) sent.insert(n);
  const auto& names = config::SeatKeyNames();
  CHECK(sent == std::set<std::string>(names.begin(), names.end()));
  CHECK(names.size() == 2 + 26 + 10 + 12);
  CHECK(config::SeatKeyMarker("space") == "key:space");
}

TEST_CASE("seat keys: a key condition names a key a seat sends, else the file and line say which") {
  const std::string head = "[[node]]\nname = \"driver\"\nrole = \"driver\"\ninput = \"model:follow\"\nheadless = true\n"
                           "[[event]]\nname = \"e\"\n";
  const auto events = config::LoadSessionText(head + "when = { key = \"f5\" }\ndo = [ { action = \"mark\", text = \"x\" } ]\n",
                                               "keys.toml")
                          .events;
  REQUIRE(events.size() == 1);
  CHECK(events[0].when.text == "f5");
  std::string error;
  try {
    config::LoadSessionText(head + "when = { key = \"Space\" }\ndo = [ { action = \"mark\", text = \"x\" } ]\n", "keys.toml");
  } catch (const config::ConfigError& e) {
    error = e.what();
  }
  CHECK(error.find("keys.toml:") != std::string::npos);
  CHECK(error.find("expected a key a seat sends") != std::string::npos);
  CHECK(error.find("got \"Space\"") != std::string::npos);
}

TEST_CASE("seat keys: the seat turns one key press into exactly one key marker at its next step") {
  const config::SessionDef session = config::LoadSessionText(kSeatSession, "keys.toml");
  node::DriverSeatModule seat(session, session.nodes[0], Quiet());
  MarkContext context;
  seat.Step(node::StepInfo{1'000'000'000, 0}, context);
  CHECK(context.marks.empty());

  // The window's press, then SDL's repeats while the key is held, then nothing.
  seat.OnSeatKey(viewer::SeatKeyName(kSdlSpace, false));
  seat.OnSeatKey(viewer::SeatKeyName(kSdlSpace, true));
  seat.OnSeatKey(viewer::SeatKeyName(kSdlSpace, true));
  seat.OnSeatKey(viewer::SeatKeyName(kSdlEscape, false));
  seat.Step(node::StepInfo{1'001'000'000, 1'000'000}, context);
  CHECK(context.marks == std::vector<std::string>{"key:space"});
  seat.Step(node::StepInfo{1'002'000'000, 1'000'000}, context);
  CHECK(context.marks.size() == 1);

  // Two presses are two markers, in order.
  seat.OnSeatKey(viewer::SeatKeyName('b', false));
  seat.OnSeatKey(viewer::SeatKeyName(kSdlF1, false));
  seat.Step(node::StepInfo{1'003'000'000, 1'000'000}, context);
  CHECK(context.marks == std::vector<std::string>{"key:space", "key:b", "key:f1"});
  CHECK(seat.KeyMarkers() == 3);
}

TEST_CASE("seat keys: ModuleContext::Mark queues a marker at the node's sim time on the control socket") {
  clock::ManualOscillator local(1'000'000'000);
  session::ClientDef def;
  def.name = "driver";
  def.role = protocol::Role::kDriver;
  session::SessionClient client(def, local, nullptr);
  client.TakeOutgoing();
  std::mutex mutex;
  node::ClientModuleContext context(client, mutex, [](std::string) {}, dr::DefaultSendPolicyDef(), false);
  int woken = 0;
  context.SetWake([&] { ++woken; });
  context.Mark("key:space");
  std::vector<protocol::Mark> marks;
  for (const auto& out : client.TakeOutgoing()) {
    const protocol::Decoded decoded = protocol::Decode(out.bytes);
    if (const auto* m = decoded.message ? std::get_if<protocol::Mark>(&*decoded.message) : nullptr;
        m && out.socket == session::Socket::kControl)
      marks.push_back(*m);
  }
  REQUIRE(marks.size() == 1);
  CHECK(marks[0].text == "key:space");
  // No session clock yet: 0, which the server reads as "stamp it on arrival".
  CHECK(marks[0].sim_time_ns == 0);
  CHECK(marks[0].request_id != 0);
  CHECK(woken == 1);
  CHECK(context.Markers() == 1);
}

TEST_CASE("seat keys: a press on a seat reaches the server's event log and fires a key condition") {
  const config::SessionDef session = config::LoadSessionText(kSeatSession, "keys.toml");
  config::ValidateSession(session);
  std::shared_ptr<server::ScenarioSystem> system;
  node::DriverSeatModule* seat = nullptr;
  InProcessOptions options;
  options.setup_core = [&](server::WorldCore& core) { system = server::InstallScenario(core, Quiet()); };
  options.on_modules = [&](const config::NodeDef& node, std::vector<std::unique_ptr<node::Module>>& modules) {
    for (auto& m : modules)
      if (auto* d = dynamic_cast<node::DriverSeatModule*>(m.get()); d && node.name == "driver") seat = d;
  };
  // The driver presses space once at 1 s of sim time and holds it (repeats).
  int64_t pressed_at_ns = -1;
  uint64_t key_markers = 0;  // the seat's count (the modules go with the session)
  options.on_poll = [&](server::WorldCore& core, int64_t now_ns) {
    const int64_t sim_ns = core.SimTimeAt(now_ns);
    if (seat) key_markers = seat->KeyMarkers();
    if (!seat || sim_ns < 1'000'000'000) return;
    if (pressed_at_ns < 0) {
      pressed_at_ns = sim_ns;
      seat->OnSeatKey(viewer::SeatKeyName(kSdlSpace, false));
    } else {
      seat->OnSeatKey(viewer::SeatKeyName(kSdlSpace, true));
    }
  };
  std::map<uint64_t, protocol::LoggedEvent> events;
  options.on_world = [&](const protocol::WorldState& w, const std::string&) {
    for (const auto& e : w.events) events.emplace(e.sequence, e);
  };
  RunInProcess(session, 1, options);
  REQUIRE(seat);
  REQUIRE(pressed_at_ns > 0);
  CHECK(key_markers == 1);

  // One marker from the seat, at the sim time of the step after the press (10 ms steps), not later.
  std::vector<protocol::LoggedEvent> keys, fired, seen;
  for (const auto& [seq, e] : events) {
    if (e.kind == protocol::LoggedEvent::Kind::kMarker && e.text == "key:space") keys.push_back(e);
    if (e.kind == protocol::LoggedEvent::Kind::kFired) fired.push_back(e);
    if (e.kind == protocol::LoggedEvent::Kind::kMarker && e.text == "seen") seen.push_back(e);
  }
  REQUIRE(keys.size() == 1);
  CHECK(keys[0].source == "driver");
  CHECK(keys[0].sim_time_ns >= pressed_at_ns);
  CHECK(keys[0].sim_time_ns <= pressed_at_ns + 10'000'000);
  // The key condition fires once, at the evaluation after the marker (the next step), with its action.
  REQUIRE(fired.size() == 1);
  CHECK(fired[0].text == "space_pressed");
  CHECK(fired[0].detail.find("\"marker\":\"key:space\"") != std::string::npos);
  CHECK(fired[0].detail.find("\"source\":\"driver\"") != std::string::npos);
  CHECK(fired[0].sim_time_ns > keys[0].sim_time_ns);
  CHECK(fired[0].sim_time_ns <= keys[0].sim_time_ns + 20'000'000);
  CHECK(seen.size() == 1);
  REQUIRE(system);
  CHECK(system->Firings().size() == 1);
}

}  // namespace platoon::testing
