#pragma once
/// The session's markers and events out to external recorders (an EEG or eye-tracking PC): every entry
/// of the server's event log (a marker from `platoon ctl mark`, a seat key, a scenario's `mark` action or
/// CAN; a parameter change; a scenario firing and its actions; a seat message) as one JSON message on a
/// ZeroMQ PUB socket, stamped with the session's synced sim time and the server's wall clock
/// (docs/PROTOCOL.md, "Marker stream"). A WorldSystem of priority kRecorder; the session key
/// `[markers] publish` turns it on.

#include "platoon/protocol/messages.hpp"
#include "platoon/server/world_core.hpp"

#include <spdlog/logger.h>
#include <zmq.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace platoon::server {

/// One message of the marker stream: a JSON object on one line, its first member the kind, so a
/// subscriber may filter by prefix ("{\"kind\":\"marker\"" for the markers only).
///   {"kind":"marker","sequence":7,"sim_time_s":12.5,"wall_time_unix_s":1795000000.123456,
///    "published_unix_s":1795000000.125,"source":"ctl","text":"lead brakes","target_node":0,"entity_id":0,
///    "detail":{...}}
/// `wall_time_unix_s`: the wall clock (Unix s) at the event's sim time; `published_unix_s`: when it was sent.
/// `detail` is present when the event has one (a JSON object).
std::string MarkerStreamJson(const protocol::LoggedEvent& event, double wall_time_unix_s, double published_unix_s);

/// The kind's name on the stream: "marker", "param", "fired", "action", "message".
const char* MarkerStreamKind(protocol::LoggedEvent::Kind kind);

/// Counters of a MarkerPublisher.
struct MarkerPublisherStats {
  uint64_t published = 0;      ///< Messages handed to ZeroMQ.
  uint64_t dropped = 0;        ///< Messages ZeroMQ refused without blocking (a subscriber's queue full).
  uint64_t subscriptions = 0;  ///< Subscriptions seen (a recorder connecting and subscribing).
};

/// The publisher. Single-threaded: runs on the server's loop (WorldSystem hooks).
class MarkerPublisher final : public WorldSystem {
 public:
  /// Binds a PUB (XPUB) socket to `endpoint` ("tcp://127.0.0.1:5560"); throws zmq::error_t when it cannot.
  /// `core` gives the sim time now (for the wall stamp) and must outlive the publisher.
  MarkerPublisher(const WorldCore& core, const std::string& endpoint, bool lockstep, std::shared_ptr<spdlog::logger> log);
  /// The endpoint actually bound ("tcp://127.0.0.1:5560"; a port 0 / "*" becomes the port chosen).
  const std::string& Endpoint() const { return endpoint_; }
  void OnLoggedEvent(const protocol::LoggedEvent& event, int64_t now_ns) override;
  void OnAdvance(int64_t sim_ns, int64_t now_ns) override;
  /// Reads subscriptions waiting on the socket (done on every hook; a test may call it).
  void Poll();
  const MarkerPublisherStats& Stats() const { return stats_; }

 private:
  const WorldCore& core_;
  bool lockstep_;
  std::shared_ptr<spdlog::logger> log_;
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::string endpoint_;
  MarkerPublisherStats stats_;
};

}  // namespace platoon::server
