#include "platoon/input/pupil_gaze.hpp"

// msgpack-cxx without its optional Boost adaptors (only maps, arrays, strings and numbers are read here).
#define MSGPACK_NO_BOOST
#include <msgpack.hpp>

#include <cmath>
#include <vector>

namespace platoon::input {

namespace pupil_gaze_detail {

const char* TypeName(msgpack::type::object_type t) {
  switch (t) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "boolean";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER: return "integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "float";
    case msgpack::type::STR: return "string";
    case msgpack::type::BIN: return "binary";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    default: return "extension";
  }
}

// A msgpack number as a double; nullopt for anything else or a value that is not finite.
std::optional<double> Number(const msgpack::object& o) {
  double v = 0;
  switch (o.type) {
    case msgpack::type::POSITIVE_INTEGER: v = static_cast<double>(o.via.u64); break;
    case msgpack::type::NEGATIVE_INTEGER: v = static_cast<double>(o.via.i64); break;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: v = o.via.f64; break;
    default: return std::nullopt;
  }
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// The member `key` of a map (string keys), or nullptr.
const msgpack::object* Member(const msgpack::object& map, std::string_view key) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const auto& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR && std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == key) return &kv.val;
  }
  return nullptr;
}

}  // namespace pupil_gaze_detail

std::string DecodePupilGaze(std::string_view topic, std::string_view payload, PupilGazeDatum& out) {
  using namespace pupil_gaze_detail;
  msgpack::object_handle handle;
  try {
    // Limits: a gaze datum is a small map; a hostile payload cannot make the unpacker allocate much.
    handle = msgpack::unpack(payload.data(), payload.size(), nullptr, nullptr, msgpack::unpack_limit(64, 64, 4096, 0, 0, 8));
  } catch (const std::exception& e) {
    return "payload: expected msgpack (" + std::to_string(payload.size()) + " bytes), got an error: " + e.what();
  }
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::MAP) return std::string("payload: expected a msgpack map, got ") + TypeName(root.type);
  const msgpack::object* pos = Member(root, "norm_pos");
  if (!pos) return "norm_pos: expected the member, got a map without it";
  if (pos->type != msgpack::type::ARRAY || pos->via.array.size != 2)
    return std::string("norm_pos: expected an array of 2 numbers, got ") +
           (pos->type == msgpack::type::ARRAY ? "an array of " + std::to_string(pos->via.array.size) : TypeName(pos->type));
  const auto x = Number(pos->via.array.ptr[0]), y = Number(pos->via.array.ptr[1]);
  if (!x || !y) return "norm_pos: expected an array of 2 finite numbers, got another element";
  const msgpack::object* conf = Member(root, "confidence");
  const auto c = conf ? Number(*conf) : std::nullopt;
  if (!c || *c < 0 || *c > 1) return "confidence: expected a number in [0, 1]";
  const msgpack::object* stamp = Member(root, "timestamp");
  const auto t = stamp ? Number(*stamp) : std::nullopt;
  if (!t) return "timestamp: expected a finite number (Pupil time, s)";
  out.topic = std::string(topic);
  out.norm_pos = GazePoint{*x, *y};
  out.confidence = *c;
  out.timestamp_s = *t;
  return "";
}

PupilGazeClient::PupilGazeClient(PupilGazeDef def) : def_(std::move(def)), sub_(context_, zmq::socket_type::sub) {
  sub_.set(zmq::sockopt::linger, 0);
  sub_.set(zmq::sockopt::maxmsgsize, int64_t{1} << 20);
}

std::string PupilGazeClient::Connect() {
  // Pupil Remote: REQ "SUB_PORT" -> the backbone's port as text.
  zmq::socket_t req(context_, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, static_cast<int>(def_.request_timeout_s * 1000));
  req.set(zmq::sockopt::sndtimeo, static_cast<int>(def_.request_timeout_s * 1000));
  try {
    req.connect(def_.remote);
  } catch (const zmq::error_t& e) {
    return "gaze: cannot connect to Pupil Remote at " + def_.remote + ": " + e.what();
  }
  zmq::message_t reply;
  if (!req.send(zmq::str_buffer("SUB_PORT"), zmq::send_flags::none) || !req.recv(reply))
    return "gaze: no reply from Pupil Remote at " + def_.remote + " within " + std::to_string(def_.request_timeout_s) +
           " s (is Pupil Capture running with Pupil Remote on?)";
  const std::string port = reply.to_string();
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) == 0 ||
      std::stoi(port) > 65535)
    return "gaze: Pupil Remote at " + def_.remote + ": expected a port number for SUB_PORT, got \"" + port.substr(0, 40) + "\"";
  // The backbone is on Pupil Remote's host.
  const auto colon = def_.remote.rfind(':');
  sub_endpoint_ = def_.remote.substr(0, colon) + ":" + port;
  sub_.set(zmq::sockopt::subscribe, def_.topic);
  sub_.connect(sub_endpoint_);
  return "";
}

std::optional<PupilGazeDatum> PupilGazeClient::Receive(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    zmq::pollitem_t item{sub_.handle(), 0, ZMQ_POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (zmq::poll(&item, 1, std::max(left, std::chrono::milliseconds(0))) == 0) return std::nullopt;
    // Every frame of the message; a sample is exactly topic + payload (later Pupil versions may add frames).
    std::vector<zmq::message_t> frames;
    do {
      frames.emplace_back();
      if (!sub_.recv(frames.back(), zmq::recv_flags::dontwait)) break;
    } while (frames.back().more());
    PupilGazeDatum datum;
    std::string error = frames.size() < 2 ? "expected two frames (topic, msgpack payload), got " + std::to_string(frames.size())
                                          : DecodePupilGaze(frames[0].to_string_view(), frames[1].to_string_view(), datum);
    if (error.empty()) {
      ++stats_.received;
      return datum;
    }
    ++stats_.malformed;
    stats_.last_error = error;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
  }
}

}  // namespace platoon::input
