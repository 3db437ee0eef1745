#include "platoon/server/scenario_system.hpp"

#include "platoon/data/vehicle_metrics.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/road/session_road.hpp"

#include <fmt/format.h>

#include <cmath>

namespace platoon::server {
namespace {

using config::ActionDef;
using config::ConditionDef;
using config::Quantity;
using protocol::LoggedEvent;

// A number for a JSON object: null when it is not finite.
std::string Num(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string("null"); }


double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

ScenarioSystem::ScenarioSystem(WorldCore& core, std::vector<config::EventDef> events, road::RoadNetwork roads,
                               std::shared_ptr<spdlog::logger> log)
    : core_(core), events_(std::move(events)), roads_(std::move(roads)), log_(std::move(log)), state_(events_.size()) {}

void ScenarioSystem::OnLoggedEvent(const protocol::LoggedEvent& event, int64_t /*now_ns*/) {
  // Markers are conditions of the next evaluation (a marker an action logs included).
  if (event.kind != LoggedEvent::Kind::kMarker) return;
  if (markers_.size() >= kMaxMarkers) markers_.erase(markers_.begin());
  markers_.push_back(event);
}

bool ScenarioSystem::StateAt(uint64_t id, int64_t sim_ns, protocol::EntityState& out) const {
  const auto& entities = core_.Entities();
  const auto it = entities.find(id);
  if (it == entities.end()) return false;
  out = it->second.state;
  // Owners send by dead-reckoning thresholds: move the last state on to sim_ns as receivers do.
  KinematicState& k = out.kinematics;
  const double dt = Seconds(std::clamp<int64_t>(sim_ns - k.stamp_ns, 0, kMaxExtrapolationNs));
  if (!it->second.frozen && dt > 0) {
    k.pose.position_m += k.velocity_mps * dt + 0.5 * k.acceleration_mps2 * dt * dt;
    // A braking vehicle does not reverse.
    const Vec3 v = k.velocity_mps + k.acceleration_mps2 * dt;
    k.velocity_mps = v.dot(k.velocity_mps) < 0 ? Vec3::Zero() : v;
    k.stamp_ns = sim_ns;
  }
  return true;
}

bool ScenarioSystem::Evaluate(size_t i, int64_t sim_ns, std::string& detail, uint64_t& subject, uint64_t& ahead) {
  const ConditionDef& c = events_[i].when;
  switch (c.kind) {
    case ConditionDef::Kind::kSimTime:
      detail = fmt::format("{{\"sim_time_s\":{}}}", Num(Seconds(sim_ns)));
      return sim_ns >= static_cast<int64_t>(std::llround(c.sim_time_s * 1e9));
    case ConditionDef::Kind::kMarker:
    case ConditionDef::Kind::kKey: {
      const std::string want = c.kind == ConditionDef::Kind::kKey ? config::SeatKeyMarker(c.text) : c.text;
      for (const auto& m : markers_)
        if (m.text == want && (c.seat.empty() || m.source == c.seat)) {
          detail = fmt::format("{{\"marker\":{},\"source\":{},\"marker_sequence\":{}}}", session_log::JsonQuote(m.text),
                               session_log::JsonQuote(m.source), m.sequence);
          return true;
        }
      return false;
    }
    case ConditionDef::Kind::kQuantity:
      break;
  }
  subject = config::EntityRefId(c.entity);
  protocol::EntityState own;
  if (!StateAt(subject, sim_ns, own)) return false;
  // The vehicles around it, as the data write sees them: every vehicle, or only the named other one.
  std::vector<data::VehicleSample> others;
  const bool pair = c.quantity == Quantity::kGap || c.quantity == Quantity::kTimeHeadway || c.quantity == Quantity::kTtc;
  if (pair) {
    if (!c.other.empty()) {
      protocol::EntityState o;
      if (StateAt(config::EntityRefId(c.other), sim_ns, o)) others.push_back(data::SampleOf(o));
    } else {
      for (const auto& [id, e] : core_.Entities()) {
        if (id == subject || !data::IsVehicle(e.state.kind)) continue;
        protocol::EntityState o;
        if (StateAt(id, sim_ns, o)) others.push_back(data::SampleOf(o));
      }
    }
  }
  // "ahead" targets need the leader even for a speed or region condition.
  if (!pair) {
    for (const auto& [id, e] : core_.Entities()) {
      if (id == subject || !data::IsVehicle(e.state.kind)) continue;
      protocol::EntityState o;
      if (StateAt(id, sim_ns, o)) others.push_back(data::SampleOf(o));
    }
  }
  data::MetricsDef def = data::DefaultMetricsDef();
  const data::VehicleSample me = data::SampleOf(own);
  const data::MetricsRow row = data::ComputeMetrics(sim_ns, me, others, roads_, def, &ahead);
  double value = std::nan("");
  bool holds = false;
  switch (c.quantity) {
    case Quantity::kSpeed: value = row[data::Column::kSpeed]; break;
    case Quantity::kGap: value = row[data::Column::kHeadway]; break;
    case Quantity::kTimeHeadway: value = row[data::Column::kTimeHeadway]; break;
    case Quantity::kTtc: value = row[data::Column::kTtc]; break;
    case Quantity::kLane: value = row[data::Column::kLane]; break;
    case Quantity::kLaneOffset: value = row[data::Column::kLaneOffset]; break;
    case Quantity::kRegion: {
      const double x = me.position_m.x(), y = me.position_m.y();
      const bool in = c.circle ? std::hypot(x - c.center_m[0], y - c.center_m[1]) <= c.radius_m
                               : x >= c.box_m[0] && x <= c.box_m[2] && y >= c.box_m[1] && y <= c.box_m[3];
      value = in ? 1.0 : 0.0;
      holds = in;
      break;
    }
  }
  if (c.quantity == Quantity::kLane) holds = std::isfinite(value) && c.lane && static_cast<int>(value) == *c.lane;
  else if (c.quantity != Quantity::kRegion)
    holds = std::isfinite(value) && (!c.below || value < *c.below) && (!c.above || value > *c.above);
  detail = fmt::format(
      "{{\"entity\":{},\"quantity\":\"{}\",\"value\":{},\"x_m\":{},\"y_m\":{},\"speed_mps\":{},\"lane\":{},\"gap_m\":{},"
      "\"time_headway_s\":{},\"ttc_s\":{},\"ahead\":{},\"entity_name\":{},\"ahead_name\":{}}}",
      subject, config::QuantityName(c.quantity), Num(value), Num(me.position_m.x()), Num(me.position_m.y()),
      Num(row[data::Column::kSpeed]), Num(row[data::Column::kLane]), Num(row[data::Column::kHeadway]),
      Num(row[data::Column::kTimeHeadway]), Num(row[data::Column::kTtc]), ahead, session_log::JsonQuote(NameOf(subject)),
      session_log::JsonQuote(ahead ? NameOf(ahead) : std::string()));
  return holds;
}

void ScenarioSystem::OnAdvance(int64_t sim_ns, int64_t now_ns) {
  // Conditions, in file order: a firing at the rising edge (once, or again with repeat).
  for (size_t i = 0; i < events_.size(); ++i) {
    const config::EventDef& e = events_[i];
    State& st = state_[i];
    if (st.fired && !e.repeat) continue;
    std::string detail;
    uint64_t subject = 0, ahead = 0;
    const bool now_true = Evaluate(i, sim_ns, detail, subject, ahead);
    const bool rising = now_true && !st.was_true;
    st.was_true = now_true;
    // Markers are pulses: each one is a rising edge of its own.
    if (e.when.kind == ConditionDef::Kind::kMarker || e.when.kind == ConditionDef::Kind::kKey) st.was_true = false;
    if (!rising) continue;
    if (st.fired && e.repeat && sim_ns - st.last_fired_ns < static_cast<int64_t>(std::llround(e.min_interval_s * 1e9))) continue;
    st.fired = true;
    st.last_fired_ns = sim_ns;
    const int64_t delay_ns = static_cast<int64_t>(std::llround(e.delay_s * 1e9));
    LoggedEvent fired;
    fired.kind = LoggedEvent::Kind::kFired;
    fired.sim_time_ns = sim_ns;
    fired.source = "event:" + e.name;
    fired.text = e.name;
    fired.detail = detail;
    if (delay_ns > 0) fired.detail.insert(fired.detail.size() - 1, fmt::format(",\"delay_s\":{}", Num(e.delay_s)));
    fired.entity_id = subject;
    core_.LogEvent(fired, now_ns);
    if (firings_.size() >= kMaxFirings) firings_.pop_front();
    firings_.push_back(ScenarioFiring{e.name, sim_ns, fired.detail});
    if (pending_.size() >= kMaxPending) {
      if (!dropped_logged_) log_->warn("scenario: more than {} delayed firings waiting: dropping", kMaxPending);
      dropped_logged_ = true;
      continue;
    }
    pending_.push_back(Pending{i, sim_ns + delay_ns, subject, ahead});
  }
  markers_.clear();
  // Actions whose time has come, in firing order.
  std::vector<Pending> due;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->due_sim_ns <= sim_ns) {
      due.push_back(*it);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  for (const Pending& p : due) RunActions(p, sim_ns, now_ns);
}

std::string ScenarioSystem::NameOf(uint64_t id) const {
  // The session's names first (its vehicle_names), then nodes that joined without being in the file.
  std::vector<NodeNaming> nodes = config::SessionNaming(core_.Session());
  for (const auto& [node_id, n] : core_.Nodes())
    nodes.push_back(NodeNaming{n.info.name, n.info.role == protocol::Role::kDriver, {}});
  return EntityDisplayName(id, nodes);
}

uint32_t ScenarioSystem::NodeIdByName(const std::string& name) const {
  for (const auto& [id, n] : core_.Nodes())
    if (n.info.name == name) return id;
  return 0;
}

uint32_t ScenarioSystem::OwnerOf(uint64_t id, const std::string& ref) const {
  const auto& entities = core_.Entities();
  if (auto it = entities.find(id); it != entities.end()) return it->second.state.owner_node;
  // Not in the world (yet): the node its reference names.
  if (ref.rfind("id:", 0) == 0) return 0;
  const auto colon = ref.rfind(':');
  if (const uint32_t n = NodeIdByName(ref)) return n;
  return colon == std::string::npos ? 0 : NodeIdByName(ref.substr(0, colon));
}

uint64_t ScenarioSystem::LeaderOf(uint64_t id, int64_t sim_ns) const {
  protocol::EntityState own;
  if (id == 0 || !StateAt(id, sim_ns, own)) return 0;
  std::vector<data::VehicleSample> others;
  for (const auto& [other, e] : core_.Entities()) {
    if (other == id || !data::IsVehicle(e.state.kind)) continue;
    protocol::EntityState o;
    if (StateAt(other, sim_ns, o)) others.push_back(data::SampleOf(o));
  }
  uint64_t leader = 0;
  data::ComputeMetrics(sim_ns, data::SampleOf(own), others, roads_, data::DefaultMetricsDef(), &leader);
  return leader;
}

void ScenarioSystem::RunActions(const Pending& p, int64_t sim_ns, int64_t now_ns) {
  const config::EventDef& e = events_[p.event];
  const std::string source = "event:" + e.name;
  for (const ActionDef& a : e.actions) {
    LoggedEvent out;
    out.sim_time_ns = sim_ns;
    out.source = source;
    out.text = a.name;
    // The vehicle it acts on, as it is now.
    uint64_t target = 0;
    if (a.target == "ahead") target = p.ahead;
    else if (a.target == "self") target = p.subject;
    else if (a.target.rfind("ahead:", 0) == 0) target = LeaderOf(config::EntityRefId(a.target.substr(6)), sim_ns);
    else if (!a.target.empty()) target = config::EntityRefId(a.target);
    const bool on_vehicle = !a.target.empty();
    if (on_vehicle && target == 0) {
      log_->warn("scenario: event {}: action {}: no vehicle {} of {} at sim {:.3f} s; skipped", e.name, a.name,
                 a.target, e.when.entity, Seconds(sim_ns));
      continue;
    }
    switch (a.kind) {
      case ActionDef::Kind::kSetParam: {
        const auto reply = core_.RequestParamSet(a.path, a.value, source, now_ns);
        if (reply && !reply->ok)
          log_->warn("scenario: event {}: set_param {} = {}: {}", e.name, a.path, a.value, reply->error);
        continue;
      }
      case ActionDef::Kind::kMark:
        out.kind = LoggedEvent::Kind::kMarker;
        out.text = a.text;
        break;
      case ActionDef::Kind::kMessage:
        out.kind = LoggedEvent::Kind::kMessage;
        out.text = a.text;
        out.target_node = a.node.empty() ? 0 : NodeIdByName(a.node);
        out.detail = fmt::format("{{\"duration_s\":{},\"seat\":{}}}", Num(a.duration_s), session_log::JsonQuote(a.node));
        if (!a.node.empty() && out.target_node == 0) {
          log_->warn("scenario: event {}: message for seat {}, which has not joined; skipped", e.name, a.node);
          continue;
        }
        break;
      case ActionDef::Kind::kSpawn:
        out.kind = LoggedEvent::Kind::kAction;
        out.target_node = NodeIdByName(a.node);
        out.detail = fmt::format("{{\"s_m\":{},\"lane\":{},\"speed_mps\":{}}}", Num(a.s_m), a.lane, Num(a.speed_mps));
        if (out.target_node == 0) {
          log_->warn("scenario: event {}: spawn on {}, which has not joined; skipped", e.name, a.node);
          continue;
        }
        break;
      default: {
        out.kind = LoggedEvent::Kind::kAction;
        out.entity_id = target;
        out.target_node = OwnerOf(target, a.target);
        std::string args;
        switch (a.kind) {
          case ActionDef::Kind::kBrake:
            args = fmt::format("\"decel_mps2\":{},\"duration_s\":{}", Num(a.decel_mps2), Num(a.duration_s));
            break;
          case ActionDef::Kind::kStop: args = fmt::format("\"decel_mps2\":{}", Num(a.decel_mps2)); break;
          case ActionDef::Kind::kChangeLane: args = fmt::format("\"lane\":{},\"direction\":{}", a.lane, a.direction); break;
          case ActionDef::Kind::kSpeedProfile: {
            args = "\"points\":[";
            for (size_t k = 0; k < a.profile.size(); ++k)
              args += fmt::format("{}{},{}", k ? "," : "", Num(a.profile[k].first), Num(a.profile[k].second));
            args += "]";
            break;
          }
          default: break;
        }
        out.detail = "{" + args + (args.empty() ? "" : ",") +
                     fmt::format("\"target\":{},\"target_name\":{}}}", session_log::JsonQuote(a.target),
                                 session_log::JsonQuote(NameOf(target)));
        if (out.target_node == 0) {
          log_->warn("scenario: event {}: {} on vehicle {} ({}, id {}), which is in no node's hands; skipped", e.name,
                     a.name, NameOf(target), a.target, target);
          continue;
        }
        break;
      }
    }
    core_.LogEvent(out, now_ns);
    // A removed vehicle leaves the world now; its node stops driving it when the action reaches it.
    if (a.kind == ActionDef::Kind::kRemove) core_.RemoveEntity(target);
  }
}

std::shared_ptr<ScenarioSystem> InstallScenario(WorldCore& core, std::shared_ptr<spdlog::logger> log) {
  const config::SessionDef& session = core.Session();
  if (session.events.empty()) return nullptr;
  road::RoadNetwork roads = session.has_road ? road::SessionRoadNetwork(session.road) : road::RoadNetwork{};
  auto system = std::make_shared<ScenarioSystem>(core, session.events, std::move(roads), std::move(log));
  core.AddSystem(system, system_priority::kStepper);
  return system;
}

}  // namespace platoon::server
