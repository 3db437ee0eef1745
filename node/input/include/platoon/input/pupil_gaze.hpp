#pragma once
/// Gaze in from a Pupil Core eye tracker through its network API (docs/INPUTS.md "Eye tracker"): Pupil
/// Remote answers a REQ "SUB_PORT" with the port of Pupil's IPC backbone (a PUB socket); a SUB socket on it,
/// subscribed to "gaze.", receives two frames per sample: the topic ("gaze.3d.01.") and a msgpack map with
/// at least norm_pos ([x, y], the gaze on the world image, x right and y up, 0..1), confidence (0..1) and
/// timestamp (Pupil's clock, s). The decoder is pure; the client is the socket shell around it.

#include "platoon/input/gaze_target.hpp"

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace platoon::input {

/// One gaze sample as Pupil sends it.
struct PupilGazeDatum {
  std::string topic;         ///< "gaze.3d.01." (which eyes, which mapper).
  GazePoint norm_pos;        ///< Gaze on the image, 0..1 each, y up.
  double confidence = 0;     ///< 0..1; Pupil's guidance: below 0.6 the sample is unreliable.
  double timestamp_s = 0;    ///< Pupil's own clock, s.
};

/// Decodes one sample from its two frames. Returns "" and fills `out`, or what is wrong ("payload: expected
/// a msgpack map, got array", "norm_pos: expected an array of 2 finite numbers"); never throws.
std::string DecodePupilGaze(std::string_view topic, std::string_view payload, PupilGazeDatum& out);

/// Where and what the client subscribes to.
struct PupilGazeDef {
  std::string remote = "tcp://127.0.0.1:50020";  ///< Pupil Remote's REQ endpoint (Pupil Capture's default port 50020).
  std::string topic = "gaze.";                   ///< Topic prefix subscribed to.
  double request_timeout_s = 2.0;                ///< Wait for Pupil Remote's reply, s.
};

/// Counters of the client.
struct PupilGazeStats {
  uint64_t received = 0;   ///< Samples decoded.
  uint64_t malformed = 0;  ///< Messages refused by the decoder (or not two frames).
  std::string last_error;  ///< The decoder's last refusal ("" when none).
};

/// The socket shell. Not thread-safe: one thread connects and receives.
class PupilGazeClient {
 public:
  explicit PupilGazeClient(PupilGazeDef def);
  /// Asks Pupil Remote for the SUB port and subscribes. Returns "" or the reason ("no reply from
  /// tcp://127.0.0.1:50020 within 2 s (is Pupil Capture running, Pupil Remote on?)", a reply that is no port).
  std::string Connect();
  /// The backbone endpoint subscribed to ("" before Connect).
  const std::string& SubEndpoint() const { return sub_endpoint_; }
  /// The next sample, waiting at most `wait`; nullopt when none came. Refused messages are counted and skipped.
  std::optional<PupilGazeDatum> Receive(std::chrono::milliseconds wait);
  const PupilGazeStats& Stats() const { return stats_; }

 private:
  PupilGazeDef def_;
  zmq::context_t context_{1};
  zmq::socket_t sub_;
  std::string sub_endpoint_;
  PupilGazeStats stats_;
};

}  // namespace platoon::input
