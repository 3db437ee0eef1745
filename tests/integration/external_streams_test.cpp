// External streams (docs/PROTOCOL.md, "External streams"): a 120 Hz head-tracking pose stream moves a
// driver seat's eye, and a controller outside the module steers a vehicle around configs/roads/ring.toml
// through the control stream (real UDP datagrams on loopback, the module stepped in this process).
#include "../support/session_fixture.hpp"
#include "platoon/config/session.hpp"
#include "platoon/input/external_stream.hpp"
#include "platoon/node/driver_seat.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/transport/channel.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

using namespace platoon;
using namespace platoon::node;
using namespace std::chrono_literals;

namespace {

class QuietContext final : public ModuleContext {
 public:
  std::vector<RemoteEntity> RemoteEntities(int64_t) const override { return {}; }
  void Publish(const protocol::EntityState&) override {}
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override { received = 0, max_gap_ns = 0; }
  uint32_t NodeId() const override { return 1; }
};

std::shared_ptr<spdlog::logger> QuietLog() {
  return std::make_shared<spdlog::logger>("streams-test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// The head pose the sender sends with sequence number k (120 Hz): a slow lean and look around.
input::PoseDatagram HeadPose(uint32_t k) {
  const double t = k / 120.0;
  input::PoseDatagram p;
  p.seq = k;
  p.x_m = 0.10 * std::sin(2 * M_PI * 0.5 * t);
  p.y_m = 0.05 * std::cos(2 * M_PI * 0.5 * t);
  p.z_m = 0.02 * std::sin(2 * M_PI * 1.0 * t);
  p.yaw_rad = 0.3 * std::sin(2 * M_PI * 0.25 * t);
  return p;
}

}  // namespace

TEST_CASE("external streams: datagrams decode, and sizes, magics and ranges are refused") {
  input::ControlDatagram c{7, 123456789, -0.25, 0.5, 0.0};
  std::string error;
  const auto bytes = input::EncodeControl(c);
  REQUIRE(bytes.size() == input::kControlDatagramBytes);
  const auto back = input::DecodeControl(bytes.data(), bytes.size(), error);
  REQUIRE(back);
  CHECK(back->seq == 7);
  CHECK(back->sent_ns == 123456789);
  CHECK(back->steer == -0.25);
  CHECK(back->throttle == 0.5);
  CHECK_FALSE(input::DecodeControl(bytes.data(), bytes.size() - 1, error));
  CHECK(error == "size 39, expected 40");
  auto wrong = bytes;
  wrong[3] = '2';
  CHECK_FALSE(input::DecodeControl(wrong.data(), wrong.size(), error));
  CHECK(error.find("magic") != std::string::npos);
  c.throttle = 1.5;
  const auto high = input::EncodeControl(c);
  CHECK_FALSE(input::DecodeControl(high.data(), high.size(), error));
  CHECK(error.find("throttle") != std::string::npos);
  c.throttle = NAN;
  const auto nan = input::EncodeControl(c);
  CHECK_FALSE(input::DecodeControl(nan.data(), nan.size(), error));
  CHECK(error == "throttle not finite");

  const input::PoseDatagram p = HeadPose(30);
  const auto pose_bytes = input::EncodePose(p);
  REQUIRE(pose_bytes.size() == input::kPoseDatagramBytes);
  const auto pose_back = input::DecodePose(pose_bytes.data(), pose_bytes.size(), error);
  REQUIRE(pose_back);
  CHECK(pose_back->x_m == p.x_m);
  CHECK(pose_back->yaw_rad == p.yaw_rad);
  CHECK_FALSE(input::DecodeControl(pose_bytes.data(), pose_bytes.size(), error));

  CHECK(input::SeqNewer(1, 0));
  CHECK(input::SeqNewer(0, 0xffffffffu));
  CHECK_FALSE(input::SeqNewer(5, 5));
  CHECK_FALSE(input::SeqNewer(4, 5));
}

TEST_CASE("external streams: config keys are checked") {
  const auto error_of = [](const std::string& keys) -> std::string {
    try {
      config::LoadSessionText("[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\n" + keys, "seat.toml");
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of("input = \"stream\"\n").find("needs stream_port") != std::string::npos);
  CHECK(error_of("input = \"stream\"\nstream_port = 70000\n").find("stream_port") != std::string::npos);
  CHECK(error_of("input = \"sdl\"\nstream_port = 47100\n").find("is for input = \"stream\"") != std::string::npos);
  CHECK(error_of("input = \"stream\"\nstream_port = 47100\nhead_tracking_port = 47100\n").find("must differ") != std::string::npos);
  CHECK(error_of("input = \"stream\"\nstream_port = 47100\nhead_tracking_port = 47101\nstream_timeout_s = 0.3\n") == "");
  CHECK(error_of("input = \"scripted:x.csv\"\nhead_tracking_port = 0\n").find("head_tracking_port") != std::string::npos);
}

TEST_CASE("external streams: a 120 Hz head-tracking pose stream moves the seat's eye, which returns to rest when it stops") {
  const uint16_t port = transport::FreeLoopbackPorts(1)[0];
  const testing::TempDir dir;  // removed with the test, also when it fails
  const std::string script = dir.Write("idle.csv", "0.0, 0.0, 0.0, 0.0\n1.0, 0.0, 0.0, 0.0\n");
  const config::SessionDef session = config::LoadSessionText(
      "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\ninput = \"scripted:" + script +
          "\"\nhead_tracking_port = " + std::to_string(port) + "\neye = [1.2, 0.35, 1.2]\n",
      "seat.toml");
  DriverSeatModule seat(session, session.nodes[0], QuietLog());
  QuietContext context;
  const Vec3 rest(1.2, 0.35, 1.2);
  CHECK((seat.EyeInVehicle().position_m - rest).norm() == 0.0);

  // The sender: 2.5 s at 120 Hz, each pose stamped with the sender's realtime clock.
  constexpr uint32_t kPoses = 300;
  std::atomic<int64_t> latest{-1};
  std::chrono::steady_clock::time_point last_sent;
  std::thread sender([&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (uint32_t k = 0; k < kPoses; ++k) {
      std::this_thread::sleep_until(t0 + std::chrono::nanoseconds(static_cast<int64_t>(k * 1e9 / 120)));
      input::PoseDatagram p = HeadPose(k);
      p.sent_ns = input::RealtimeNowNs();
      last_sent = std::chrono::steady_clock::now();
      input::SendDatagram("127.0.0.1", port, input::EncodePose(p));
      latest.store(k);
    }
  });
  // The module in real time at about 1 kHz; each step the eye is compared with the newest pose sent.
  const auto t0 = std::chrono::steady_clock::now();
  const auto sim_now = [&] { return 1'000'000'000 + (std::chrono::steady_clock::now() - t0).count(); };
  std::vector<double> error_m;
  while (latest.load() + 1 < kPoses) {
    const int64_t k = latest.load();
    seat.Step(StepInfo{sim_now(), kDriverStepNs}, context);
    if (k >= 12) {  // after 100 ms
      const input::PoseDatagram want = HeadPose(static_cast<uint32_t>(k));
      error_m.push_back((seat.EyeInVehicle().position_m - (rest + Vec3(want.x_m, want.y_m, want.z_m))).norm());
    }
    std::this_thread::sleep_for(1ms);
  }
  sender.join();
  // The last pose is on the socket: the next steps take it.
  for (int i = 0; i < 1000 && seat.PoseStream().last_seq != kPoses - 1; ++i) {
    seat.Step(StepInfo{sim_now(), kDriverStepNs}, context);
    std::this_thread::sleep_for(1ms);
  }
  const input::PoseDatagram last = HeadPose(kPoses - 1);
  const Pose eye = seat.EyeInVehicle();
  CHECK((eye.position_m - (rest + Vec3(last.x_m, last.y_m, last.z_m))).norm() < 1e-12);
  const Vec3 look = eye.orientation * Vec3::UnitX();
  CHECK(std::atan2(look.y(), look.x()) == doctest::Approx(last.yaw_rad).epsilon(1e-9));

  REQUIRE(error_m.size() > 100);
  std::sort(error_m.begin(), error_m.end());
  const double p50 = error_m[error_m.size() / 2], p90 = error_m[error_m.size() * 9 / 10];
  const DriverSeatModule::StreamStats s = seat.PoseStream();
  MESSAGE("pose stream: " << s.received << " of " << kPoses << " poses taken, stale " << s.stale << ", latency send -> eye p50 "
                          << s.latency_p50_ms << " ms, p99 " << s.latency_p99_ms << " ms, max " << s.latency_max_ms
                          << " ms; eye error vs newest pose sent p50 " << p50 * 1e3 << " mm, p90 " << p90 * 1e3 << " mm");
  // Loopback UDP loses nothing here; the eye is within about two frames of the head (1 frame: < 3 mm).
  CHECK(s.received >= kPoses * 9 / 10);
  CHECK(s.bad == 0);
  CHECK(p90 < 0.010);
  CHECK(s.latency_samples > 100);
  CHECK(s.latency_p50_ms < 20.0);
  CHECK(s.latency_p99_ms < 200.0);

  // A bad datagram is counted and changes nothing.
  input::SendDatagram("127.0.0.1", port, {'P', 'L', 'P', '1', 0});
  for (int i = 0; i < 1000 && seat.PoseStream().bad == 0; ++i) {
    seat.Step(StepInfo{sim_now(), kDriverStepNs}, context);
    std::this_thread::sleep_for(1ms);
  }
  CHECK(seat.PoseStream().bad == 1);
  CHECK((seat.EyeInVehicle().position_m - eye.position_m).norm() == 0.0);

  // The stream stops: after the 0.5 s timeout the eye is back at rest.
  const auto stop = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - stop < 1500ms && seat.PoseStream().timeouts == 0) {
    seat.Step(StepInfo{sim_now(), kDriverStepNs}, context);
    std::this_thread::sleep_for(2ms);
  }
  CHECK(std::chrono::steady_clock::now() - last_sent >= 500ms);
  CHECK(seat.PoseStream().timeouts == 1);
  CHECK((seat.EyeInVehicle().position_m - rest).norm() == 0.0);
  CHECK(seat.EyeInVehicle().orientation.angularDistance(Quat::Identity()) == 0.0);
}

TEST_CASE("external streams: an outside controller steers a vehicle once around configs/roads/ring.toml through the control stream within 0.3 m lateral RMS") {
  const uint16_t port = transport::FreeLoopbackPorts(1)[0];
  const config::SessionDef session = config::LoadSessionText(
      std::string("[road]\nfile = \"") + PLATOON_SOURCE_DIR + "/configs/roads/ring.toml\"\n"
      "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\ninput = \"stream\"\nstream_port = " +
          std::to_string(port) + "\nstart_s_m = 20\nstart_lane = -1\nstart_speed_mps = 5\n",
      "ring-session.toml");
  DriverSeatModule seat(session, session.nodes[0], QuietLog());
  QuietContext context;
  // The controller's own copy of the road: it reads the vehicle's state, the module does not help it.
  const road::Road road = road::SessionRoad(session.road);
  const vehicle::VehicleDef def = vehicle::DefaultVehicleDef();
  const double lane_t = road.LaneCenterOffset(-1);

  constexpr double kSpeedMps = 12.0;
  constexpr int64_t kPeriodNs = 10'000'000;  // the controller runs at 100 Hz of sim time
  int64_t sim_ns = 1'000'000'000;
  seat.Step(StepInfo{sim_ns, 0}, context);
  uint32_t seq = 0;
  double sum_sq = 0, max_abs = 0;
  uint64_t samples = 0;
  double lap_from_m = -1;
  const double warm_up_m = 60;
  std::vector<double> waits_ms;
  auto last_sent = std::chrono::steady_clock::now();
  while (true) {
    const vehicle::VehicleState x = seat.State();
    if (x.distance_m > warm_up_m && lap_from_m < 0) lap_from_m = x.distance_m;
    if (lap_from_m >= 0 && x.distance_m - lap_from_m > road.Length()) break;
    REQUIRE(sim_ns < 300'000'000'000);  // a lap at 12 m/s takes about 95 s
    // Pure pursuit of the lane centre from the rear axle, a speed-dependent look-ahead ahead (wrapping
    // round the ring), and a proportional speed control.
    const Vec3 forward(std::cos(x.yaw_rad), std::sin(x.yaw_rad), 0);
    const Vec3 rear = Vec3(x.x_m, x.y_m, 0) - def.cg_to_rear_m * forward;
    const road::RoadCoord at = road.Project(rear);
    if (lap_from_m >= 0) {
      const double lateral = at.t_m - lane_t;
      sum_sq += lateral * lateral;
      max_abs = std::max(max_abs, std::abs(lateral));
      ++samples;
    }
    const double look = 3.0 + 0.5 * std::abs(x.vx_mps);
    const Vec3 goal = road.LaneCenter(std::fmod(at.s_m + look, road.Length()), -1);
    const Vec3 d = goal - rear;
    const double gx = forward.x() * d.x() + forward.y() * d.y();
    const double gy = -forward.y() * d.x() + forward.x() * d.y();
    const double steer_rad = std::atan2(2.0 * def.WheelbaseM() * gy, gx * gx + gy * gy);
    input::ControlDatagram c;
    c.seq = ++seq;
    c.steer = std::clamp(steer_rad / def.max_steer_rad, -1.0, 1.0);
    const double speed_error = kSpeedMps - x.vx_mps;
    c.throttle = std::clamp(0.15 + 0.3 * speed_error, 0.0, 1.0);
    c.brake = std::clamp(-0.2 * speed_error - 0.1, 0.0, 1.0);
    c.sent_ns = input::RealtimeNowNs();
    REQUIRE(input::SendDatagram("127.0.0.1", port, input::EncodeControl(c)));
    // Lock-step: the module takes the command (polling at the same sim time), then runs one period.
    const auto sent = last_sent = std::chrono::steady_clock::now();
    while (seat.ControlLastSeq() != seq) {
      REQUIRE(std::chrono::steady_clock::now() - sent < 5s);
      seat.Step(StepInfo{sim_ns, 0}, context);
    }
    waits_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
    for (int64_t t = kDriverStepNs; t <= kPeriodNs; t += kDriverStepNs) seat.Step(StepInfo{sim_ns + t, kDriverStepNs}, context);
    sim_ns += kPeriodNs;
  }
  const double rms = std::sqrt(sum_sq / static_cast<double>(samples));
  const DriverSeatModule::StreamStats s = seat.ControlStream();
  std::sort(waits_ms.begin(), waits_ms.end());
  MESSAGE("closed loop on the ring: " << seq << " commands over " << (sim_ns - 1e9) / 1e9 << " s of sim time, lateral RMS "
                                      << rms << " m (max " << max_abs << " m) over one lap of " << road.Length()
                                      << " m; latency send -> applied p50 " << s.latency_p50_ms << " ms, p99 "
                                      << s.latency_p99_ms << " ms; send -> taken p50 " << waits_ms[waits_ms.size() / 2]
                                      << " ms, p99 " << waits_ms[waits_ms.size() * 99 / 100] << " ms");
  CHECK(samples > 5000);
  CHECK(rms <= 0.3);
  CHECK(max_abs < 1.0);
  CHECK(s.received == seq);
  CHECK(s.bad == 0);
  CHECK(s.latency_samples == seq);
  CHECK(std::abs(seat.State().vx_mps - kSpeedMps) < 1.0);

  // The controller stops: after 200 ms of wall time without a command the vehicle brakes to a stop.
  const auto stop = std::chrono::steady_clock::now();
  while (seat.ControlStream().timeouts == 0) {
    REQUIRE(std::chrono::steady_clock::now() - stop < 5s);
    seat.Step(StepInfo{sim_ns, 0}, context);
    std::this_thread::sleep_for(2ms);
  }
  CHECK(std::chrono::steady_clock::now() - last_sent >= 200ms);  // the last command was taken after it was sent
  for (int i = 0; i < 10'000; ++i) seat.Step(StepInfo{sim_ns += kDriverStepNs, kDriverStepNs}, context);
  CHECK(seat.LastInput().brake == 1.0);
  CHECK(seat.LastInput().throttle == 0.0);
  CHECK(std::abs(seat.State().vx_mps) < 0.1);
}

TEST_CASE("external streams: examples/external_streams.py drives a stream seat, which brakes when the script ends") {
  const uint16_t port = transport::FreeLoopbackPorts(1)[0];
  const config::SessionDef session = config::LoadSessionText(
      "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\ninput = \"stream\"\nstream_port = " +
          std::to_string(port) + "\n",
      "seat.toml");
  DriverSeatModule seat(session, session.nodes[0], QuietLog());
  QuietContext context;
  const std::string command = std::string("python3 ") + PLATOON_SOURCE_DIR + "/examples/external_streams.py control --port " +
                              std::to_string(port) + " --steer 0.25 --throttle 0.4 --seconds 1.5 > /dev/null &";
  REQUIRE(std::system(command.c_str()) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  const auto sim_now = [&] { return 1'000'000'000 + (std::chrono::steady_clock::now() - t0).count(); };
  // Before the first command the vehicle is held.
  seat.Step(StepInfo{sim_now(), 0}, context);
  bool seen = false;
  uint64_t received = 0;
  double max_speed = 0;
  auto changed = t0;
  while (std::chrono::steady_clock::now() - t0 < 20s) {
    seat.Step(StepInfo{sim_now(), kDriverStepNs}, context);
    if (seat.ControlReceived() > 0 && !seen && seat.LastInput().throttle > 0) {
      seen = true;
      CHECK(seat.LastInput().steer == doctest::Approx(0.25));
      CHECK(seat.LastInput().throttle == doctest::Approx(0.4));
      CHECK(seat.LastInput().brake == 0.0);
    }
    max_speed = std::max(max_speed, seat.State().vx_mps);
    // Done when the script has been silent for a second (a loaded machine may stall it mid-stream too).
    if (seat.ControlReceived() != received) received = seat.ControlReceived(), changed = std::chrono::steady_clock::now();
    if (received > 0 && std::chrono::steady_clock::now() - changed > 1s) break;
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(seen);
  const DriverSeatModule::StreamStats s = seat.ControlStream();
  MESSAGE("python control stream: " << s.received << " commands, latency send -> applied p50 " << s.latency_p50_ms << " ms, p99 "
                                    << s.latency_p99_ms << " ms");
  CHECK(s.received > 50);  // 100 Hz for 1.5 s, however late the interpreter started
  CHECK(s.bad == 0);
  CHECK(s.timeouts >= 1);
  CHECK_FALSE(s.active);
  CHECK(max_speed > 0.5);
  CHECK(std::abs(seat.State().vx_mps) < 0.1);  // braked to a stop in the silent second
  seat.Step(StepInfo{sim_now(), kDriverStepNs}, context);
  CHECK(seat.LastInput().brake == 1.0);
  CHECK(seat.LastInput().throttle == 0.0);
}
