// The eye tracker's gaze (node/input/src/gaze_target.cpp, pupil_gaze.cpp): the ray from the eye through a
// gaze point, the box or mirror it meets, Pupil's msgpack datum, and a synthetic Pupil Capture streaming
// gaze at a known vehicle through Pupil Remote and the IPC backbone.
#include "platoon/config/session.hpp"
#include "platoon/input/gaze_target.hpp"
#include "platoon/input/pupil_gaze.hpp"
#include "platoon/transport/channel.hpp"
#include "platoon/viewer/screen_frustum.hpp"

#define MSGPACK_NO_BOOST
#include <msgpack.hpp>

#include <doctest/doctest.h>
#include <zmq.hpp>

#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

using namespace platoon;
using namespace platoon::input;

namespace gaze_test_detail {

// A Pupil gaze datum as Pupil Capture packs it (a map with string keys, norm_pos an array of two floats).
std::string PackGaze(double x, double y, double confidence, double timestamp_s) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> p(buffer);
  p.pack_map(4);
  p.pack(std::string("topic"));
  p.pack(std::string("gaze.3d.01."));
  p.pack(std::string("norm_pos"));
  p.pack_array(2);
  p.pack(x);
  p.pack(y);
  p.pack(std::string("confidence"));
  p.pack(confidence);
  p.pack(std::string("timestamp"));
  p.pack(timestamp_s);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace gaze_test_detail

TEST_CASE("gaze: the ray through the image centre of a symmetric view is the camera's forward axis") {
  GazeView v;
  v.camera = Quat(Eigen::AngleAxisd(0.3, Vec3::UnitZ()));
  const Vec3 d = GazeRayDirection(v, GazePoint{0.5, 0.5});
  CHECK((d - v.camera * Vec3::UnitX()).norm() < 1e-12);
  // The right edge of the image, half way up: right_tangent to the right (-y body) of forward.
  const Vec3 r = v.camera.conjugate() * GazeRayDirection(v, GazePoint{1.0, 0.5});
  CHECK(-r.y() / r.x() == doctest::Approx(v.right).epsilon(1e-12));
  const Vec3 t = v.camera.conjugate() * GazeRayDirection(v, GazePoint{0.5, 1.0});
  CHECK(t.z() / t.x() == doctest::Approx(v.top).epsilon(1e-12));
}

TEST_CASE("gaze: the nearest box on the ray is the target and a mirror inset wins over the scene") {
  const Vec3 eye(0, 0, 1.2);
  std::vector<GazeBox> boxes(3);
  boxes[0].id = 11;  // 20 m ahead
  boxes[0].centre_m = Vec3(20, 0, 1.2);
  boxes[1].id = 22;  // 40 m ahead, behind the first
  boxes[1].centre_m = Vec3(40, 0, 1.2);
  boxes[2].id = 33;  // the own car around the eye: never a target
  boxes[2].centre_m = Vec3(0.5, 0, 1.0);
  const std::vector<GazeMirror> mirrors = {{"rear", 0.4, 0.85, 0.6, 1.0}};
  GazeHit h = GazeTarget(eye, Vec3::UnitX(), boxes, mirrors, GazePoint{0.5, 0.5});
  CHECK(h.kind == GazeHit::Kind::kEntity);
  CHECK(h.entity_id == 11);
  CHECK(h.distance_m == doctest::Approx(20 - 2.25).epsilon(1e-12));
  // 0.1 rad to the left: 1.78 m off the axis where the first box begins (half width 0.9 m), 3.8 m at the second.
  h = GazeTarget(eye, Vec3(std::cos(0.1), std::sin(0.1), 0), boxes, mirrors, GazePoint{0.5, 0.5});
  CHECK(h.kind == GazeHit::Kind::kNothing);
  // 0.04 rad: 0.71 m off where the first box begins, inside its half width: its front face is met.
  h = GazeTarget(eye, Vec3(std::cos(0.04), std::sin(0.04), 0), boxes, mirrors, GazePoint{0.5, 0.5});
  CHECK(h.entity_id == 11);
  CHECK(h.distance_m == doctest::Approx(17.75 / std::cos(0.04)).epsilon(1e-12));
  boxes[0].centre_m.y() = 5;  // moved aside: the second box is now the nearest on the axis
  h = GazeTarget(eye, Vec3::UnitX(), boxes, mirrors, GazePoint{0.5, 0.5});
  CHECK(h.entity_id == 22);
  h = GazeTarget(eye, Vec3::UnitX(), boxes, mirrors, GazePoint{0.5, 0.9});
  CHECK(h.kind == GazeHit::Kind::kMirror);
  CHECK(h.mirror == "rear");
  CHECK(GazeTarget(eye, -Vec3::UnitX(), boxes, mirrors, GazePoint{0.5, 0.5}).kind == GazeHit::Kind::kNothing);
}

TEST_CASE("gaze: a Pupil datum decodes and bad payloads are refused with the reason") {
  using namespace gaze_test_detail;
  PupilGazeDatum d;
  CHECK(DecodePupilGaze("gaze.3d.01.", PackGaze(0.25, 0.75, 0.9, 1234.5), d) == "");
  CHECK(d.norm_pos.x == 0.25);
  CHECK(d.norm_pos.y == 0.75);
  CHECK(d.confidence == 0.9);
  CHECK(d.timestamp_s == 1234.5);
  CHECK(d.topic == "gaze.3d.01.");
  CHECK(DecodePupilGaze("gaze.", "\x93\x01\x02\x03", d).find("expected a msgpack map, got array") != std::string::npos);
  CHECK(DecodePupilGaze("gaze.", "", d).find("payload: expected msgpack") == 0);
  CHECK(DecodePupilGaze("gaze.", "\xdf\xff\xff\xff\xff", d).find("payload: expected msgpack") == 0);  // a map of 4e9 pairs
  CHECK(DecodePupilGaze("gaze.", PackGaze(0.5, 0.5, 1.5, 0), d).find("confidence") == 0);
  msgpack::sbuffer b;
  msgpack::packer<msgpack::sbuffer> p(b);
  p.pack_map(1);
  p.pack(std::string("norm_pos"));
  p.pack_array(3);
  p.pack(1);
  p.pack(2);
  p.pack(3);
  CHECK(DecodePupilGaze("gaze.", std::string(b.data(), b.size()), d) == "norm_pos: expected an array of 2 numbers, got an array of 3");
}

TEST_CASE("gaze: a synthetic Pupil Capture streaming gaze at a vehicle is mapped to that vehicle's id") {
  using namespace gaze_test_detail;
  // The seat: the own car at (100, 50) heading 30 deg; the eye 1.2 m up, 0.35 m left of the centre line;
  // the main screen 1.0 m ahead of it, 1.2 x 0.675 m, its centre 0.1 m below the eye.
  const Pose car{Vec3(100, 50, 0), Quat(Eigen::AngleAxisd(M_PI / 6, Vec3::UnitZ()))};
  const Vec3 eye_vehicle(0.4, 0.35, 1.2);
  viewer::ScreenCorners screen;
  screen.lower_left_m = Vec3(1.4, 0.95, 0.7625);
  screen.lower_right_m = Vec3(1.4, -0.25, 0.7625);
  screen.upper_left_m = Vec3(1.4, 0.95, 1.4375);
  REQUIRE(viewer::ValidateScreenCorners(screen).empty());
  const viewer::ScreenFrustum f = viewer::OffAxisFrustum(screen, eye_vehicle, 0.1);
  const GazeView view =
      GazeViewOf(car.position_m + car.orientation * eye_vehicle, car.orientation * f.orientation, f.left_m, f.right_m, f.bottom_m, f.top_m, f.near_m);
  const GazeMirror rear{"rear", 0.35, 0.82, 0.65, 0.98};

  // Vehicles ahead: the target 28 m ahead, half a lane right; one in the left lane 18 m ahead; a truck
  // 55 m ahead behind the target; a car far to the right.
  auto ahead = [&](double forward_m, double left_m, uint64_t id, Vec3 half) {
    GazeBox b;
    b.id = id;
    b.centre_m = car.position_m + car.orientation * Vec3(forward_m, left_m, half.z());
    b.orientation = car.orientation;
    b.half_extents_m = half;
    return b;
  };
  const uint64_t target_id = 0xC0FFEE;
  const std::vector<GazeBox> boxes = {ahead(28, -1.2, target_id, Vec3(2.3, 0.9, 0.75)), ahead(18, 3.5, 7, Vec3(2.3, 0.9, 0.75)),
                                      ahead(55, -1.0, 8, Vec3(6, 1.25, 1.8)), ahead(30, -9, 9, Vec3(2.3, 0.9, 0.75))};
  // Where the target's centre is on the screen: the line from the eye to it through the physical screen
  // (the screen's own geometry, not the gaze code's frustum), as Pupil's norm_pos (x right, y up).
  const Vec3 centre_vehicle = car.orientation.conjugate() * (boxes[0].centre_m - car.position_m);
  const auto px = viewer::ScreenPixel(screen, 1920, 1080, eye_vehicle, centre_vehicle);
  REQUIRE(px.has_value());
  const double gx = (*px)[0] / 1920.0, gy = 1.0 - (*px)[1] / 1080.0;
  INFO("target at norm_pos (" << gx << ", " << gy << ")");
  REQUIRE(gx > 0.05);
  REQUIRE(gx < 0.95);

  // The synthetic Pupil Capture: Pupil Remote (REP) answers SUB_PORT with the backbone's port; the
  // backbone (XPUB, so it sees the subscription before it streams) sends 500 samples at 200 Hz of gaze
  // at the target with fixation jitter (sigma 0.008 of the image width, about 0.5 deg), each as two frames.
  zmq::context_t context;
  zmq::socket_t remote(context, zmq::socket_type::rep), backbone(context, zmq::socket_type::xpub);
  remote.set(zmq::sockopt::linger, 0);
  backbone.set(zmq::sockopt::linger, 0);
  remote.bind("tcp://127.0.0.1:*");
  backbone.bind("tcp://127.0.0.1:*");
  const std::string remote_endpoint = remote.get(zmq::sockopt::last_endpoint);
  const std::string backbone_endpoint = backbone.get(zmq::sockopt::last_endpoint);
  const std::string backbone_port = backbone_endpoint.substr(backbone_endpoint.rfind(':') + 1);
  const int kSamples = 500;
  std::atomic<bool> subscribed{false};
  std::thread pupil([&] {
    zmq::message_t request;
    if (!remote.recv(request) || request.to_string() != "SUB_PORT") return;
    remote.send(zmq::buffer(backbone_port), zmq::send_flags::none);
    // Wait for the subscription "gaze." (an XPUB hands it up as a message), then stream.
    backbone.set(zmq::sockopt::rcvtimeo, 10000);
    zmq::message_t sub;
    if (!backbone.recv(sub) || sub.to_string() != std::string("\x01gaze.", 6)) return;
    subscribed = true;
    std::mt19937_64 rng(43);
    std::normal_distribution<double> jitter(0.0, 0.008);
    for (int k = 0; k < kSamples; ++k) {
      // Pupil also publishes other topics on the backbone; the client's subscription filters them.
      backbone.send(zmq::str_buffer("pupil.0.3d"), zmq::send_flags::sndmore);
      backbone.send(zmq::str_buffer("\x80"), zmq::send_flags::none);
      backbone.send(zmq::str_buffer("gaze.3d.01."), zmq::send_flags::sndmore);
      const std::string payload = PackGaze(gx + jitter(rng), gy + jitter(rng), 0.95, 5000.0 + k * 0.005);
      backbone.send(zmq::buffer(payload), zmq::send_flags::none);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });

  // The seat's side: connect through Pupil Remote, receive, map every sample.
  PupilGazeDef def;
  def.remote = remote_endpoint;
  PupilGazeClient client(def);
  const std::string error = client.Connect();
  REQUIRE_MESSAGE(error.empty(), error);
  CHECK(client.SubEndpoint() == "tcp://127.0.0.1:" + backbone_port);
  int received = 0, on_target = 0, on_mirror = 0;
  while (received < kSamples) {
    const auto d = client.Receive(std::chrono::milliseconds(5000));
    if (!d) break;
    ++received;
    CHECK(d->topic == "gaze.3d.01.");
    const GazeHit h = GazeTarget(view.eye_m, GazeRayDirection(view, d->norm_pos), boxes, std::span(&rear, 1), d->norm_pos);
    on_target += h.kind == GazeHit::Kind::kEntity && h.entity_id == target_id;
    on_mirror += h.kind == GazeHit::Kind::kMirror;
  }
  pupil.join();
  CHECK(subscribed.load());
  CHECK(received == kSamples);
  CHECK(client.Stats().malformed == 0);
  const double share = static_cast<double>(on_target) / kSamples;
  MESSAGE("gaze samples on the target vehicle: " << on_target << " of " << kSamples << " (" << 100.0 * share
                                                  << " %), on the mirror " << on_mirror);
  CHECK(share >= 0.95);
  CHECK(on_mirror == 0);

  // A gaze at the rear mirror's inset maps to the mirror, not to what lies behind it in the scene.
  const GazePoint m{0.5, 0.9};
  CHECK(GazeTarget(view.eye_m, GazeRayDirection(view, m), boxes, std::span(&rear, 1), m).mirror == "rear");
}

TEST_CASE("gaze: Pupil Remote that does not answer is a clear error naming the endpoint") {
  PupilGazeDef def;
  def.remote = "tcp://127.0.0.1:" + std::to_string(transport::FreeLoopbackPorts(1).at(0));
  def.request_timeout_s = 0.2;
  PupilGazeClient client(def);
  const std::string error = client.Connect();
  CHECK(error.rfind("gaze: no reply from Pupil Remote at " + def.remote + " within ", 0) == 0);
}

TEST_CASE("gaze: the seat's gaze keys are checked with file line and key") {
  auto error_of = [](const std::string& node_keys) -> std::string {
    try {
      config::LoadSessionText("[[node]]\nname = \"seat\"\n" + node_keys, "lab.toml");
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of("role = \"driver\"\ngaze = \"tcp://127.0.0.1:50020\"\n").empty());
  const std::string bare = error_of("role = \"driver\"\ngaze = \"127.0.0.1:50020\"\n");
  CHECK(bare.find("lab.toml:4") == 0);
  CHECK(bare.find("expected Pupil Remote's endpoint \"tcp://HOST:PORT\"") != std::string::npos);
  CHECK(error_of("role = \"traffic\"\ngaze = \"tcp://127.0.0.1:50020\"\n").find("is a driver key") != std::string::npos);
  CHECK(error_of("role = \"driver\"\ngaze_min_confidence = 1.5\n").find("gaze_min_confidence") != std::string::npos);
  // {node} in gaze_path is the node's name.
  const config::SessionDef s = config::LoadSessionText("[[node]]\nname = \"seat\"\nrole = \"driver\"\n", "lab.toml");
  CHECK(s.nodes.at(0).gaze_path == "data/seat_gaze.csv");
}
