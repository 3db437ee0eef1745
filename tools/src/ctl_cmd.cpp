// platoon ctl: steers a running session from the command line. It is a client of the session like the
// viewer (session::SessionClient in a session::ClientLink loop): it joins as an observer that no
// lock-step waits for, sends one command or request, waits for the server's answer and leaves.
#include "ctl_cmd.hpp"

#include "study_cmd.hpp"

#include "platoon/clock/oscillator.hpp"
#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/log/logging.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/session/client_link.hpp"
#include "platoon/session/discovery.hpp"
#include "platoon/session/operator_token.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>

namespace platoon::launcher {
namespace {

using protocol::SessionControl;
using protocol::SessionPhase;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_ctl_stop{false};
void OnCtlSignal(int) { g_ctl_stop.store(true); }

constexpr const char* kMe = "platoon ctl";

double NsToS(int64_t ns) { return static_cast<double>(ns) / 1e9; }
int64_t SToNs(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }
std::string Quote(std::string_view s) { return session_log::JsonQuote(s); }
std::string Phase(SessionPhase p) { return std::string(protocol::PhaseName(p)); }

const char* CommandName(CtlCommand c) {
  switch (c) {
    case CtlCommand::kNone: return "";
    case CtlCommand::kStatus: return "status";
    case CtlCommand::kStart: return "start";
    case CtlCommand::kPause: return "pause";
    case CtlCommand::kResume: return "resume";
    case CtlCommand::kStop: return "stop";
    case CtlCommand::kSeek: return "seek";
    case CtlCommand::kSpeed: return "speed";
    case CtlCommand::kParamList: return "param list";
    case CtlCommand::kParamGet: return "param get";
    case CtlCommand::kParamSet: return "param set";
    case CtlCommand::kMark: return "mark";
    case CtlCommand::kEvents: return "events";
    case CtlCommand::kRestart: return "restart";
    case CtlCommand::kStudy: return "study";
  }
  return "";
}

/// Where the server's control socket is.
using ServerAddress = session::ServerEndpoint;

// Prints the outcome of the one command: human lines on stdout, or one JSON object on stdout with
// --json; failures also on stderr. Returns the exit code.
class Report {
 public:
  Report(const CtlOptions& o, std::string server)
      : json_(o.json), command_(CommandName(o.command)), server_(std::move(server)) {}

  /// Success: `human` on stdout, or {"ok":true, ..., `json_fields`}.
  int Ok(const std::string& human, const std::string& json_fields) const {
    if (json_) std::printf("%s\n", Object(true, json_fields).c_str());
    else std::printf("%s", human.c_str());
    return 0;
  }
  /// The server refused the command (it answered, and said no).
  int Refused(const std::string& message, const std::string& json_fields = {}) const {
    return Fail("refused", message, json_fields);
  }
  /// The server did not answer in time, or a signal interrupted the wait.
  int NoAnswer(const std::string& message) const {
    if (g_ctl_stop.load()) return Fail("interrupted", "interrupted before the server answered", {});
    return Fail("timeout", message, {});
  }

 private:
  int Fail(const char* failure, const std::string& message, const std::string& json_fields) const {
    std::fprintf(stderr, "%s %s: %s\n", kMe, command_.c_str(), message.c_str());
    if (json_)
      std::printf("%s\n", Object(false, ",\"failure\":\"" + std::string(failure) + "\",\"error\":" + Quote(message) +
                                            json_fields)
                              .c_str());
    return 1;
  }
  std::string Object(bool ok, const std::string& fields) const {
    return fmt::format("{{\"ok\":{},\"command\":{},\"server\":{}{}}}", ok ? "true" : "false", Quote(command_),
                       Quote(server_), fields);
  }

  bool json_;
  std::string command_, server_;
};

// The session client, its sockets, and the wait for what the server says. Single-threaded: the mutex
// only satisfies ClientLink's interface.
class CtlSession {
 public:
  CtlSession(const ServerAddress& a, session::ClientDef def, std::shared_ptr<spdlog::logger> logger,
             const std::optional<transport::CurveDef>& curve, std::optional<session::OperatorTokenLookup> token)
      : token_(std::move(token)),
        client_(std::move(def), local_, std::move(logger)),
        link_(context_, a.host, a.port, transport::FaultDef{}, curve) {}

  /// `error` of a refusal, and when it is one for want of the operator token (CURVE off), where ctl looked
  /// for the token and what it found.
  std::string WithTokenHint(const std::string& error) const {
    if (!token_ || error.find("operator token") == std::string::npos) return error;
    if (token_->token.empty()) return error + "; ctl found no operator token: looked in " + token_->Where();
    return error + "; ctl presented the token in " + token_->Where() + " (a token of another server run?)";
  }

  /// Turns the loop until `done()` holds (true), the deadline passes or a signal arrives (false).
  bool Until(const std::function<bool()>& done, Clock::time_point deadline) {
    while (true) {
      if (done()) return true;
      if (g_ctl_stop.load() || Clock::now() >= deadline) return false;
      link_.Turn(client_, mutex_, {}, 10'000'000);
      std::lock_guard guard(mutex_);
      for (auto& r : client_.TakeReplies()) replies_.push_back(std::move(r));
    }
  }

  /// The first reply of type T since the last ClearReplies(), if any.
  template <class T>
  const T* Reply() const {
    for (const auto& r : replies_)
      if (const auto* t = std::get_if<T>(&r)) return t;
    return nullptr;
  }
  void ClearReplies() { replies_.clear(); }

  /// Leaves the session (when joined) and lets the Leave go out.
  void Leave() {
    {
      std::lock_guard guard(mutex_);
      client_.Leave("platoon ctl done");
    }
    link_.Flush(client_, mutex_);
  }

  session::SessionClient& Client() { return client_; }

 private:
  std::optional<session::OperatorTokenLookup> token_;  // CURVE off: the token found (or where it was not)
  clock::MonotonicOscillator local_;
  zmq::context_t context_{1};
  std::mutex mutex_;
  session::SessionClient client_;
  session::ClientLink link_;
  std::vector<session::ControlReply> replies_;
};

// --- status ---------------------------------------------------------------------------------------

// `where`: the server's address and, when a session file, PLATOON_SERVER or a running session gave it, which.
int Status(CtlSession& s, const Report& report, const std::string& where, Clock::time_point deadline) {
  auto& c = s.Client();
  // The client core asks for a snapshot (keyframe with the node table) as soon as it is welcomed.
  if (!s.Until([&] { return c.Stats().snapshots > 0; }, deadline))
    return report.NoAnswer("joined, but the server sent no snapshot in time");
  // Lock-step: the step granted last, which the snapshot does not carry (a paused session grants none).
  uint64_t step = 0;
  if (c.StepNs() > 0) {
    s.ClearReplies();
    c.RequestParams(protocol::ParamGet{"session.step"});
    if (!s.Until([&] { return s.Reply<protocol::ParamReply>() != nullptr; }, deadline))
      return report.NoAnswer("the server did not say its lock-step step in time");
    const auto& reply = *s.Reply<protocol::ParamReply>();
    // An older server has no session.step: the newest grant seen will do.
    step = reply.ok ? std::strtoull(reply.param.value.c_str(), nullptr, 10) : c.GrantedStep();
  }

  const auto& anchor = c.Anchor();
  std::vector<protocol::NodeInfo> nodes;
  for (const auto& n : c.Nodes())
    if (n.node_id != c.NodeId()) nodes.push_back(n);  // not this ctl itself

  // The session line.
  std::string timing = c.StepNs() > 0 ? fmt::format("lock-step step {} ({:.1f} ms steps)", step,
                                                    static_cast<double>(c.StepNs()) / 1e6)
                                      : std::string("real time");
  if (c.TimeControl()) timing += fmt::format(", replay at {:g}x", anchor.rate);
  std::string human = fmt::format("session '{}' at {}: {}, sim time {:.3f} s, {}\n", c.SessionName(), where,
                                  Phase(anchor.phase), NsToS(anchor.sim_ns), timing);
  // The node table, as the server's status table shows it.
  if (nodes.empty()) {
    human += "no nodes joined\n";
  } else {
    human += fmt::format("  {:>3} {:<16} {:<9} {:<16} {:>10} {:>8} {:>8} {:>6}  {}\n", "id", "node", "role", "host",
                         "offset us", "rtt us", "rate Hz", "loss", "state");
    for (const auto& n : nodes)
      human += fmt::format("  {:>3} {:<16} {:<9} {:<16} {:>+10.1f} {:>8.1f} {:>8.1f} {:>5.1f}%  {}\n", n.node_id,
                           n.name, protocol::RoleName(n.role), n.host, static_cast<double>(n.clock_offset_ns) / 1e3,
                           static_cast<double>(n.rtt_ns) / 1e3, n.update_rate_hz, 100.0 * n.loss_fraction,
                           n.lost ? "LOST" : "ok");
  }

  std::string json = fmt::format(
      ",\"session\":{{\"name\":{},\"phase\":{},\"sim_time_s\":{:.6f},\"lockstep\":{},\"step\":{},\"step_s\":{:.6f},"
      "\"replay\":{},\"speed\":{}}},\"nodes\":[",
      Quote(c.SessionName()), Quote(Phase(anchor.phase)), NsToS(anchor.sim_ns), c.StepNs() > 0 ? "true" : "false",
      step, NsToS(c.StepNs()), c.TimeControl() ? "true" : "false", anchor.rate);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    json += fmt::format(
        "{}{{\"id\":{},\"name\":{},\"role\":{},\"host\":{},\"pid\":{},\"offset_us\":{:.1f},\"rtt_us\":{:.1f},"
        "\"rate_hz\":{:.2f},\"loss\":{:.4f},\"lost\":{}}}",
        i ? "," : "", n.node_id, Quote(n.name), Quote(protocol::RoleName(n.role)), Quote(n.host), n.pid,
        static_cast<double>(n.clock_offset_ns) / 1e3, static_cast<double>(n.rtt_ns) / 1e3, n.update_rate_hz,
        n.loss_fraction, n.lost ? "true" : "false");
  }
  json += "]";
  return report.Ok(human, json);
}

// --- session commands -------------------------------------------------------------------------------

// The phase a command leads to; nullopt for seek and speed, which keep the phase.
std::optional<SessionPhase> TargetPhase(CtlCommand c) {
  switch (c) {
    case CtlCommand::kStart: return SessionPhase::kRunning;
    case CtlCommand::kRestart: return SessionPhase::kRunning;
    case CtlCommand::kPause: return SessionPhase::kPaused;
    case CtlCommand::kResume: return SessionPhase::kRunning;
    case CtlCommand::kStop: return SessionPhase::kStopped;
    default: return std::nullopt;
  }
}

// The server ignores a pause of a session that is not running and a resume of one that is not paused;
// its reply then shows the phase unchanged. Returns why, or "" when the command took.
std::string Refusal(CtlCommand c, SessionPhase after) {
  if (c == CtlCommand::kPause && after != SessionPhase::kPaused)
    return "the session is " + Phase(after) + ": only a running session can be paused";
  if (c == CtlCommand::kResume && after != SessionPhase::kRunning)
    return "the session is " + Phase(after) + ": only a paused session can be resumed";
  if ((c == CtlCommand::kStart || c == CtlCommand::kRestart) && after != SessionPhase::kStarting &&
      after != SessionPhase::kRunning)
    return "the session is " + Phase(after) + " after the " + CommandName(c);
  return {};
}

int Control(CtlSession& s, const CtlOptions& o, const Report& report, const std::string& where,
            Clock::time_point deadline) {
  auto& c = s.Client();
  const bool time_command = o.command == CtlCommand::kSeek || o.command == CtlCommand::kSpeed;
  // Seek and speed act on replays only; a live server would ignore them with a warning.
  if (time_command && !c.TimeControl())
    return report.Refused("session '" + c.SessionName() + "' at " + where +
                          " is live, not a replay: seek and speed act on a replay server (platoon replay LOG.mcap)");
  // The phase before the command, from the snapshot the client core asks for on joining.
  if (!s.Until([&] { return c.Stats().snapshots > 0; }, deadline))
    return report.NoAnswer("joined, but the server sent no snapshot in time");
  const SessionPhase before = c.Phase();
  const int64_t before_sim_ns = c.SimNowNs();
  SessionControl command;
  switch (o.command) {
    case CtlCommand::kStart:
    case CtlCommand::kRestart:
      command = SessionControl{o.command == CtlCommand::kStart ? SessionControl::Command::kStart
                                                               : SessionControl::Command::kRestart,
                               0, SToNs(o.at_sim_s), 1.0, o.reason};
      // "Now" is stamped on the synced clock, which is set after a few time exchanges.
      if (!s.Until([&] { return c.Clock().IsSet(); }, deadline))
        return report.NoAnswer("the clock did not synchronise with the server in time");
      break;
    case CtlCommand::kPause: command.command = SessionControl::Command::kPause; break;
    case CtlCommand::kResume: command.command = SessionControl::Command::kResume; break;
    case CtlCommand::kStop: command.command = SessionControl::Command::kStop; break;
    case CtlCommand::kSeek: command = SessionControl{SessionControl::Command::kSeek, 0, SToNs(o.seek_s)}; break;
    case CtlCommand::kSpeed: command = SessionControl{SessionControl::Command::kSpeed, 0, 0, o.speed}; break;
    default: return config::cli::kExitUsage;
  }
  s.ClearReplies();
  c.Control(command);
  const protocol::SessionStatus* status = nullptr;
  // A key that is not an operator's is answered with a refusal naming why.
  if (!s.Until([&] { return (status = s.Reply<protocol::SessionStatus>()) != nullptr || c.Refused(); }, deadline))
    return report.NoAnswer(fmt::format("no reply from the server within {:g} s", o.timeout_s));
  if (!status) return report.Refused(*c.Refused());
  // Refused (a start of a running session, not an operator): the session is as it was.
  if (!status->error.empty())
    return report.Refused(s.WithTokenHint(status->error), ",\"phase\":" + Quote(Phase(status->phase)));
  const protocol::SessionStatus st = *status;
  if (const std::string why = Refusal(o.command, st.phase); !why.empty())
    return report.Refused(why, ",\"phase\":" + Quote(Phase(st.phase)));

  // Done once a world state built after the command shows it: the new phase, or the new speed.
  const auto target = TargetPhase(o.command);
  auto shown = [&] {
    const auto& a = c.Anchor();
    if (a.ref_ns < st.server_time_ns) return false;
    if (target && a.phase != *target) return false;
    return o.command != CtlCommand::kSpeed || a.rate == o.speed;
  };
  if (!s.Until(shown, deadline)) {
    const std::string wanted = target ? "phase " + Phase(*target) : fmt::format("speed {:g}x", o.speed);
    return report.NoAnswer(fmt::format("the server accepted the command, but no world state showed {} within {:g} s "
                                       "(last seen: {}, {:g}x)",
                                       wanted, o.timeout_s, Phase(c.Anchor().phase), c.Anchor().rate));
  }
  const auto& a = c.Anchor();
  std::string human;
  switch (o.command) {
    case CtlCommand::kStart:
      human = fmt::format("session started at sim time {:.3f} s\n", NsToS(SToNs(o.at_sim_s)));
      break;
    case CtlCommand::kRestart:
      human = fmt::format("session restarted at sim time {:.3f} s (was {} at {:.3f} s): {}\n", NsToS(SToNs(o.at_sim_s)),
                          Phase(before), NsToS(before_sim_ns), o.reason);
      break;
    case CtlCommand::kSeek:
      human = fmt::format("replay at sim time {:.3f} s ({})\n", NsToS(st.sim_time_ns), Phase(a.phase));
      break;
    case CtlCommand::kSpeed: human = fmt::format("replay speed {:g}x ({})\n", a.rate, Phase(a.phase)); break;
    default:
      human = fmt::format("session {} at sim time {:.3f} s{}\n", Phase(a.phase), NsToS(a.sim_ns),
                          before == a.phase ? " (it was already " + Phase(before) + ")" : "");
      break;
  }
  return report.Ok(human, fmt::format(",\"phase\":{},\"phase_before\":{},\"sim_time_s\":{:.6f},\"speed\":{}",
                                      Quote(Phase(a.phase)), Quote(Phase(before)),
                                      NsToS(o.command == CtlCommand::kSeek ? st.sim_time_ns : a.sim_ns), a.rate));
}

// --- parameters -------------------------------------------------------------------------------------

std::string ParamJson(const protocol::Parameter& p) {
  auto bound = [](double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); };
  return fmt::format("{{\"path\":{},\"value\":{},\"writable\":{},\"type\":{},\"unit\":{},\"min\":{},\"max\":{},"
                     "\"description\":{}}}",
                     Quote(p.path), Quote(p.value), p.writable ? "true" : "false", Quote(p.type), Quote(p.unit),
                     bound(p.min), bound(p.max), Quote(p.description));
}

int Params(CtlSession& s, const CtlOptions& o, const Report& report, Clock::time_point deadline) {
  auto& c = s.Client();
  s.ClearReplies();
  if (o.command == CtlCommand::kParamList) c.RequestParams(protocol::ParamListRequest{o.prefix});
  else if (o.command == CtlCommand::kParamGet) c.RequestParams(protocol::ParamGet{o.path});
  else c.RequestParams(protocol::ParamSet{o.path, o.value});
  auto answered = [&] { return s.Reply<protocol::ParamList>() || s.Reply<protocol::ParamReply>(); };
  if (!s.Until(answered, deadline))
    return report.NoAnswer(fmt::format("no reply from the server within {:g} s", o.timeout_s));

  if (const auto* list = s.Reply<protocol::ParamList>()) {
    // A table: path, value, rw/ro, description.
    size_t width = 4, value_width = 5;
    for (const auto& p : list->params) {
      width = std::max(width, p.path.size());
      value_width = std::max(value_width, p.value.size());
    }
    std::string human, json = ",\"params\":[";
    if (list->params.empty())
      human = o.prefix.empty() ? "the server has no parameters\n" : "no parameters under '" + o.prefix + "'\n";
    for (size_t i = 0; i < list->params.size(); ++i) {
      const auto& p = list->params[i];
      std::string range;
      if (p.writable && (std::isfinite(p.min) || std::isfinite(p.max)))
        range = fmt::format(" [{}, {}]", std::isfinite(p.min) ? fmt::format("{}", p.min) : "-inf",
                            std::isfinite(p.max) ? fmt::format("{}", p.max) : "inf");
      human += fmt::format("{:<{}}  {:<{}}  {}  {}{}{}\n", p.path, width, p.value, value_width, p.writable ? "rw" : "ro",
                           p.description, p.unit.empty() ? "" : ", " + p.unit, range);
      json += (i ? "," : "") + ParamJson(p);
    }
    json += "],\"errors\":[";
    // Nodes that did not answer: the list is incomplete, and says so.
    for (size_t i = 0; i < list->errors.size(); ++i) {
      human += "incomplete: " + list->errors[i] + "\n";
      json += (i ? "," : "") + Quote(list->errors[i]);
    }
    if (!list->errors.empty()) std::fprintf(stderr, "%s param list: %zu node(s) did not answer\n", kMe, list->errors.size());
    return report.Ok(human, json + "]");
  }
  const auto& reply = *s.Reply<protocol::ParamReply>();
  if (!reply.ok) return report.Refused(s.WithTokenHint(reply.error));
  const auto& p = reply.param;
  return report.Ok(fmt::format("{} = {}\n", p.path, p.value), ",\"param\":" + ParamJson(p));
}

// --- markers and the event log -------------------------------------------------------------------------

std::string EventJson(const protocol::LoggedEvent& e) {
  return fmt::format("{{\"sequence\":{},\"sim_time_s\":{:.6f},\"kind\":{},\"source\":{},\"text\":{},\"detail\":{}}}",
                     e.sequence, NsToS(e.sim_time_ns), Quote(protocol::EventKindName(e.kind)), Quote(e.source),
                     Quote(e.text), e.detail.empty() ? "null" : e.detail);
}

std::string EventLine(const protocol::LoggedEvent& e) {
  return fmt::format("#{:<5} sim {:>10.3f} s  {:<7} {:<12} {}{}{}\n", e.sequence, NsToS(e.sim_time_ns),
                     protocol::EventKindName(e.kind), e.source, e.text, e.detail.empty() ? "" : "  ", e.detail);
}

int Mark(CtlSession& s, const CtlOptions& o, const Report& report, Clock::time_point deadline) {
  s.ClearReplies();
  s.Client().RequestParams(protocol::Mark{o.mark_text, 0, 0});
  if (!s.Until([&] { return s.Reply<protocol::EventList>() != nullptr; }, deadline))
    return report.NoAnswer(fmt::format("no reply from the server within {:g} s", o.timeout_s));
  const auto reply = *s.Reply<protocol::EventList>();
  if (!reply.error.empty() || reply.events.empty())
    return report.Refused(reply.error.empty() ? "the server logged no marker" : s.WithTokenHint(reply.error));
  const auto& e = reply.events.front();
  return report.Ok(fmt::format("marker #{} at sim time {:.3f} s: {}\n", e.sequence, NsToS(e.sim_time_ns), e.text),
                   ",\"event\":" + EventJson(e));
}

int Events(CtlSession& s, const CtlOptions& o, const Report& report, Clock::time_point deadline) {
  uint64_t after = o.after;
  auto ask = [&](Clock::time_point until) -> std::optional<protocol::EventList> {
    s.ClearReplies();
    s.Client().RequestParams(protocol::EventsRequest{after, 0});
    if (!s.Until([&] { return s.Reply<protocol::EventList>() != nullptr; }, until)) return std::nullopt;
    return *s.Reply<protocol::EventList>();
  };
  auto first = ask(deadline);
  if (!first) return report.NoAnswer(fmt::format("no reply from the server within {:g} s", o.timeout_s));
  if (!first->error.empty()) return report.Refused(first->error);
  if (!o.follow) {
    std::string human, json = ",\"events\":[";
    for (size_t i = 0; i < first->events.size(); ++i) {
      human += EventLine(first->events[i]);
      json += (i ? "," : "") + EventJson(first->events[i]);
    }
    if (first->events.empty()) human = fmt::format("no events after #{}\n", o.after);
    return report.Ok(human, json + "]");
  }
  // --follow: one line (or JSON object) per event as it is logged, until interrupted.
  auto print = [&](const std::vector<protocol::LoggedEvent>& events) {
    for (const auto& e : events) {
      if (e.sequence <= after) continue;
      std::printf("%s", o.json ? (EventJson(e) + "\n").c_str() : EventLine(e).c_str());
      after = e.sequence;
    }
    std::fflush(stdout);
  };
  print(first->events);
  while (!g_ctl_stop.load()) {
    s.Until([] { return g_ctl_stop.load(); }, Clock::now() + std::chrono::milliseconds(250));
    if (g_ctl_stop.load()) break;
    const auto more = ask(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s)));
    if (!more) return report.NoAnswer(fmt::format("the server stopped answering (no reply within {:g} s)", o.timeout_s));
    print(more->events);
  }
  return 0;
}

}  // namespace

CLI::App* AddCtlCommand(CLI::App& app, CtlOptions& o) {
  auto* ctl = app.add_subcommand("ctl", "Steer a running session: status, start/pause/resume/stop, seek/speed of a "
                                        "replay, parameters");
  ctl->footer(
      "Examples:\n"
      "  platoon ctl status                                  nodes and session of the session running here\n"
      "  platoon ctl --server lab-server:7400 status --json  the same as one JSON object, from another PC\n"
      "  platoon ctl --config configs/demo.toml pause        the server named in that session file\n"
      "  platoon ctl --session demo status                   the session 'demo' of those running here\n"
      "  PLATOON_SERVER=lab-server:7400 platoon ctl status   the server named in the environment\n"
      "  platoon ctl start --at-sim 10                       start the session at sim time 10 s\n"
      "  platoon ctl restart --reason \"scenario B\"           begin a running session again at sim time 0\n"
      "  platoon ctl pause                                   pause a running session, wait until it is paused\n"
      "  platoon ctl resume                                  resume a paused session\n"
      "  platoon ctl stop                                    stop the session\n"
      "  platoon ctl seek 42.5                               a replay: jump to sim time 42.5 s\n"
      "  platoon ctl speed 4                                 a replay: four sim seconds per real second\n"
      "  platoon ctl param list server.                      parameters under a prefix, with values\n"
      "  platoon ctl param get server.broadcast_hz\n"
      "  platoon ctl param set server.broadcast_hz 30\n"
      "  platoon ctl param list node.city.                   a node's parameters (the server asks the node)\n"
      "  platoon ctl param set node.city.desired_speed_mps 20\n"
      "  platoon ctl mark \"braking starts\"                   a marker on the synced clock, in the event log\n"
      "  platoon ctl events --after 12                       logged events (markers, parameter changes, ...)\n"
      "  platoon ctl events --follow --json                  one JSON line per event as it is logged\n"
      "  platoon ctl study studies/braking next              start the next block of a waiting study\n"
      "The server: --server, else --config's, else --session's, else $PLATOON_SERVER (HOST:PORT), else the one\n"
      "session `platoon run` started on this machine (several: choose with --session or --server), else\n"
      "127.0.0.1:7400. docs/EXPERIMENTS.md, \"Finding the server\".\n"
      "Without CURVE, start, restart, pause, resume, stop, param set and mark present the operator token that\n"
      "platoon-server wrote for its user ($XDG_RUNTIME_DIR/platoon/operator.<control port>, or the file\n"
      "$PLATOON_OPERATOR_TOKEN_FILE names); status, param get/list and events need none. docs/DEPLOYMENT.md.\n"
      "Exit codes: 0 done; 1 the server refused or did not answer within --timeout (the message says which);\n"
      "2 usage error (also several running sessions and none chosen). docs/EXPERIMENTS.md has the JSON output.");
  ctl->require_subcommand(1);
  auto* server_option = ctl->add_option("--server", o.server,
                                        "HOST:PORT of the server's control socket (default: the --config file's "
                                        "server, else $PLATOON_SERVER, else the session running here, else "
                                        "127.0.0.1:7400)");
  auto* config_option = ctl->add_option("--config", o.config_path,
                                        "Session file whose [session] server_host and [server] control_port to use")
                            ->check(CLI::ExistingFile);
  ctl->add_option("--session", o.session,
                  "The running session of this name (platoon run on this machine announces it), when several run")
      ->excludes(server_option)
      ->excludes(config_option);
  ctl->add_option("--key", o.key_file,
                  "CURVE: this client's secret key file (default: the --config file's [security] key; an operator's "
                  "key for start, pause, param set and mark)")
      ->check(CLI::ExistingFile);
  ctl->add_option("--server-key", o.server_key_file,
                  "CURVE without --config: the server's public key file (with --key and --server)")
      ->check(CLI::ExistingFile);
  ctl->add_flag("--json", o.json, "Print one JSON object on stdout (for scripts)");
  ctl->add_option("--timeout", o.timeout_s, "Seconds to wait for the server's answers")
      ->check(config::cli::Finite())
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  ctl->add_flag("-v,--verbose", o.verbose, "Log the session client's join and clock lines on stderr");

  // Each command sets o.command when parsed; ctl's options may also follow the command.
  auto command = [&](CLI::App* parent, const char* name, const char* help, CtlCommand which) {
    auto* sub = parent->add_subcommand(name, help);
    sub->fallthrough();
    sub->callback([&o, which] { o.command = which; });
    return sub;
  };
  command(ctl, "status", "The node table (id, name, role, host, clock offset, round trip, update rate, loss) and the "
                         "session (name, phase, sim time, lock-step step, replay speed)",
          CtlCommand::kStatus);
  auto* start = command(ctl, "start",
                        "Start a waiting or stopped session now; waits until it runs. A starting, running or paused "
                        "session refuses it (sim time would jump back): use restart",
                        CtlCommand::kStart);
  start->add_option("--at-sim", o.at_sim_s, "Sim time the session starts from, in s")
      ->check(config::cli::Finite())
      ->check(CLI::Range(-1e7, 1e7));
  auto* restart = command(ctl, "restart",
                          "Begin the session again at sim time S (default 0) now, in any phase; the server logs who "
                          "and why. Operators only; waits until it runs",
                          CtlCommand::kRestart);
  restart->add_option("--reason", o.reason, "Why the session begins again (required; logged), e.g. \"scenario B\"");
  restart->add_option("--at-sim", o.at_sim_s, "Sim time the session starts again from, in s")
      ->check(config::cli::Finite())
      ->check(CLI::Range(-1e7, 1e7));
  command(ctl, "pause", "Pause a running session; waits until it is paused", CtlCommand::kPause);
  command(ctl, "resume", "Resume a paused session; waits until it runs", CtlCommand::kResume);
  command(ctl, "stop", "Stop the session; waits until it is stopped", CtlCommand::kStop);
  auto* study = command(ctl, "study",
                        "A study waiting for its operator (platoon study, docs/STUDIES.md): next starts the next block, "
                        "repeat runs the last one again, abort REASON ends the study; needs no server",
                        CtlCommand::kStudy);
  study->add_option("out", o.study_dir, "The study's output folder")->required();
  study->add_option("word", o.study_words, "next | repeat | abort REASON...")->required();
  command(ctl, "seek", "A replay: move sim time to S seconds (the phase stays)", CtlCommand::kSeek)
      ->add_option("S", o.seek_s, "Target sim time, in s")
      ->required()
      ->check(config::cli::Finite())
      ->check(CLI::Range(-1e7, 1e7));
  command(ctl, "speed", "A replay: play X sim seconds per real second", CtlCommand::kSpeed)
      ->add_option("X", o.speed, "Speed, in (0, 1000], e.g. 0.25 or 4")
      ->required()
      ->check(config::cli::Finite())
      ->check(CLI::PositiveNumber)
      ->check(CLI::Range(0.0, 1000.0));
  auto* param = ctl->add_subcommand("param", "Parameters by path (docs/PROTOCOL.md \"Parameters\")");
  param->fallthrough();
  param->require_subcommand(1);
  command(param, "list", "Every parameter (under PREFIX) with its value, writability and description",
          CtlCommand::kParamList)
      ->add_option("PREFIX", o.prefix, "Path prefix, e.g. server.");
  command(param, "get", "One parameter's value", CtlCommand::kParamGet)
      ->add_option("PATH", o.path, "Parameter path, e.g. server.broadcast_hz")
      ->required();
  auto* set = command(param, "set", "Set a writable parameter; the server checks the value", CtlCommand::kParamSet);
  set->add_option("PATH", o.path, "Parameter path, e.g. server.broadcast_hz")->required();
  set->add_option("VALUE", o.value, "New value as a TOML literal, e.g. 30")->required();
  command(ctl, "mark", "Log a marker on the synced clock (sim time of its arrival) in the session's event log",
          CtlCommand::kMark)
      ->add_option("TEXT", o.mark_text, "The marker's text, 1 to 1024 bytes")
      ->required();
  auto* events = command(ctl, "events", "The session's logged events (markers, parameter changes, scenario firings "
                                        "and actions), oldest first", CtlCommand::kEvents);
  events->add_option("--after", o.after, "Only events with a sequence number above N")->capture_default_str();
  events->add_flag("--follow", o.follow, "Keep printing new events until Ctrl-C");
  return ctl;
}

int RunCtl(const CtlOptions& o) {
  // A study waiting between blocks is told through its folder, not the server.
  if (o.command == CtlCommand::kStudy) return SendStudyWord(o.study_dir, o.study_words);
  if (o.command == CtlCommand::kRestart && o.reason.empty()) {
    std::fprintf(stderr,
                 "%s restart: --reason TEXT is required: say why the session begins again (the server logs it), "
                 "e.g. platoon ctl restart --reason \"scenario B\"\n",
                 kMe);
    return config::cli::kExitUsage;
  }
  // Where the server is (session::FindServer): --server, --config, --session, PLATOON_SERVER, the one
  // session `platoon run` announced on this machine, else 127.0.0.1:7400.
  session::ResolvedServer found;
  // The session file whose [security] gives CURVE: --config's, else the running session's that was found.
  std::optional<config::SessionDef> session_def;
  try {
    session::ServerQuery query;
    query.server_flag = o.server;
    query.session_flag = o.session;
    if (!o.config_path.empty()) {
      session_def = config::LoadSession(o.config_path);
      query.config = ServerAddress{session_def->server_host, session_def->server.control_port};
      query.config_path = o.config_path;
    }
    found = session::FindServer(query);
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return config::cli::kExitUsage;
  } catch (const session::DiscoveryError& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return config::cli::kExitUsage;
  }
  for (const auto& note : found.notes) std::fprintf(stderr, "%s: note: %s\n", kMe, note.c_str());
  if (!session_def && found.session && o.server_key_file.empty()) {
    try {
      session_def = config::LoadSession(found.session->session_file);
    } catch (const config::ConfigError& e) {
      // The file changed since the session started: its address still holds, its keys are unknown.
      std::fprintf(stderr, "%s: note: the running session's file no longer loads, so no CURVE keys from it: %s\n", kMe,
                   e.what());
    }
  }
  const ServerAddress address = found.endpoint;
  // Messages that say where the server is name the source, unless --server named it.
  const std::string where =
      address.Text() + (found.source == session::ServerSource::kFlag || found.source == session::ServerSource::kDefault
                            ? std::string()
                            : " (" + found.from + ")");
  // CURVE: as the session file says (its keys, or --key); without one, when --key and --server-key name them.
  std::optional<transport::CurveDef> curve;
  try {
    if (session_def) {
      curve = config::LoadClientCurve(*session_def, o.key_file);
    } else if (!o.key_file.empty() || !o.server_key_file.empty()) {
      if (o.key_file.empty() || o.server_key_file.empty()) {
        std::fprintf(stderr, "%s: without --config, CURVE needs both --key and --server-key\n", kMe);
        return config::cli::kExitUsage;
      }
      transport::CurveDef c;
      c.secret_key = transport::ReadKeyFile(o.key_file);
      c.public_key = transport::PublicKeyOf(c.secret_key);
      c.server_key = transport::ReadKeyFile(o.server_key_file);
      curve = c;
    }
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return config::cli::kExitUsage;
  } catch (const transport::KeyError& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return config::cli::kExitUsage;
  }
  const Report report(o, address.Text());

  // An observer that no lock-step waits for, under a name unique to this process.
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  session::ClientDef def =
      session::DefaultClientDef(fmt::format("ctl-{}-{}", host, getpid()), protocol::Role::kObserver);
  def.lockstep_member = false;
  def.retry_refused = false;
  def.keep_replies = true;
  def.clock.min_fit_span_s = 0.2;  // a start needs "now" on the server's clock, not a drift fit
  auto logger = o.verbose ? log::MakeLogger("ctl", "info") : nullptr;

  std::signal(SIGINT, OnCtlSignal);
  std::signal(SIGTERM, OnCtlSignal);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s));
  // No CURVE: the operator is whoever reads the token the server wrote for its user (docs/DEPLOYMENT.md).
  std::optional<session::OperatorTokenLookup> token;
  if (!curve) {
    token = session::FindOperatorToken(address.port);
    def.operator_token = token->token;
  }
  CtlSession s(address, std::move(def), logger, curve, token);
  auto& c = s.Client();
  int code = 1;
  if (!s.Until([&] { return c.Joined() || c.Refused().has_value(); }, deadline)) {
    code = report.NoAnswer(fmt::format("no answer from the server at {} within {:g} s (the address is {}; is "
                                       "platoon-server or platoon replay running there, on that control port?{})",
                                       address.Text(), o.timeout_s, found.from,
                                                    curve ? " With CURVE, the server admits only its clients' keys: is "
                                                            "this key one of them, and the server key the server's?"
                                                          : " A server beyond loopback needs a key: --config or --key"));
  } else if (c.Refused()) {
    code = report.Refused("the server refused to let ctl join: " + *c.Refused());
  } else {
    switch (o.command) {
      case CtlCommand::kStatus: code = Status(s, report, where, deadline); break;
      case CtlCommand::kParamList:
      case CtlCommand::kParamGet:
      case CtlCommand::kParamSet: code = Params(s, o, report, deadline); break;
      case CtlCommand::kMark: code = Mark(s, o, report, deadline); break;
      case CtlCommand::kEvents: code = Events(s, o, report, deadline); break;
      case CtlCommand::kNone: code = config::cli::kExitUsage; break;
      default: code = Control(s, o, report, where, deadline); break;
    }
  }
  std::fflush(stdout);
  s.Leave();
  return code;
}

}  // namespace platoon::launcher
