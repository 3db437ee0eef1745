#include "platoon/server/marker_publisher.hpp"

#include "platoon/log/session_log.hpp"

#include <fmt/format.h>

#include <chrono>

namespace platoon::server {

namespace marker_publisher_detail {

// The wall clock now, in Unix seconds.
double WallNowUnixS() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace marker_publisher_detail

const char* MarkerStreamKind(protocol::LoggedEvent::Kind kind) {
  switch (kind) {
    case protocol::LoggedEvent::Kind::kMarker: return "marker";
    case protocol::LoggedEvent::Kind::kParam: return "param";
    case protocol::LoggedEvent::Kind::kFired: return "fired";
    case protocol::LoggedEvent::Kind::kAction: return "action";
    case protocol::LoggedEvent::Kind::kMessage: return "message";
  }
  return "event";
}

std::string MarkerStreamJson(const protocol::LoggedEvent& event, double wall_time_unix_s, double published_unix_s) {
  // Sim time with 9 decimals (whole ns), wall times with 6 (µs): a double holds both exactly enough.
  std::string out = fmt::format(
      "{{\"kind\":\"{}\",\"sequence\":{},\"sim_time_s\":{:.9f},\"wall_time_unix_s\":{:.6f},\"published_unix_s\":{:.6f},"
      "\"source\":{},\"text\":{},\"target_node\":{},\"entity_id\":{}",
      MarkerStreamKind(event.kind), event.sequence, static_cast<double>(event.sim_time_ns) * 1e-9, wall_time_unix_s,
      published_unix_s, session_log::JsonQuote(event.source), session_log::JsonQuote(event.text), event.target_node,
      event.entity_id);
  // The detail is the server's own JSON object; anything else is passed on as a string.
  if (!event.detail.empty()) {
    const bool object = event.detail.front() == '{' && event.detail.back() == '}';
    out += ",\"detail\":" + (object ? event.detail : session_log::JsonQuote(event.detail));
  }
  out += "}";
  return out;
}

MarkerPublisher::MarkerPublisher(const WorldCore& core, const std::string& endpoint, bool lockstep,
                                 std::shared_ptr<spdlog::logger> log)
    : core_(core), lockstep_(lockstep), log_(std::move(log)), socket_(context_, zmq::socket_type::xpub) {
  // A recorder that falls behind gets a deep queue before anything is dropped; closing never waits.
  socket_.set(zmq::sockopt::sndhwm, 100000);
  socket_.set(zmq::sockopt::linger, 500);
  socket_.set(zmq::sockopt::maxmsgsize, int64_t{512});  // subscribers send only subscriptions
  socket_.set(zmq::sockopt::xpub_verbose, 1);            // every subscription, also repeated ones
  socket_.bind(endpoint);
  endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  if (log_) log_->info("marker stream: session events as JSON on a ZeroMQ PUB socket at {}", endpoint_);
}

void MarkerPublisher::Poll() {
  // Subscriptions (and unsubscriptions) arrive as messages on an XPUB; count the subscriptions.
  for (;;) {
    zmq::message_t m;
    const auto got = socket_.recv(m, zmq::recv_flags::dontwait);
    if (!got) return;
    if (m.size() >= 1 && static_cast<const uint8_t*>(m.data())[0] == 1) {
      if (stats_.subscriptions++ == 0 && log_) log_->info("marker stream: a recorder subscribed at {}", endpoint_);
    }
  }
}

void MarkerPublisher::OnAdvance(int64_t /*sim_ns*/, int64_t /*now_ns*/) { Poll(); }

void MarkerPublisher::OnLoggedEvent(const protocol::LoggedEvent& event, int64_t now_ns) {
  Poll();
  // The wall clock at the event's sim time: in real time the sim clock runs with the wall clock, so
  // step back by how far the session is past the event; in lock-step sim time does not follow the wall.
  const double published = marker_publisher_detail::WallNowUnixS();
  double wall = published;
  if (!lockstep_ && core_.Phase() == protocol::SessionPhase::kRunning) {
    const int64_t behind_ns = core_.SimTimeAt(now_ns) - event.sim_time_ns;
    wall -= static_cast<double>(behind_ns) * 1e-9;
  }
  const std::string text = MarkerStreamJson(event, wall, published);
  const auto sent = socket_.send(zmq::buffer(text), zmq::send_flags::dontwait);
  if (sent) ++stats_.published;
  else if (stats_.dropped++ == 0 && log_)
    log_->warn("marker stream: a message was dropped at {} (a subscriber's queue is full); later drops are counted",
               endpoint_);
}

}  // namespace platoon::server
