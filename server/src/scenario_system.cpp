#include "platoon/server/scenario_system.hpp"

#include "platoon/data/sign_columns.hpp"
#include "platoon/data/vehicle_metrics.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/road/session_road.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

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

ScenarioSystem::ScenarioSystem(WorldCore& core, std::vector<config::EventDef> events, road::RoadNetwork roads,
                               std::shared_ptr<spdlog::logger> log,
                               const std::vector<std::pair<std::string, std::string>>& params)
    : ScenarioSystem(core, std::move(events), std::move(roads), std::move(log)) {
  for (const auto& [name, value] : params) params_[name] = value;
}

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
  const config::EventDef& e = events_[i];
  State& st = state_[i];
  // The condition's value the event sees: the raw value through its edge, then negated when asked.
  auto through_edge = [](const ConditionDef& c, bool raw, uint8_t& prev) {
    bool v = raw;
    switch (c.edge) {
      case ConditionDef::Edge::kNone: break;
      case ConditionDef::Edge::kRising: v = raw && !prev; break;
      case ConditionDef::Edge::kFalling: v = !raw && prev; break;
      case ConditionDef::Edge::kRisingOrFalling: v = raw != static_cast<bool>(prev); break;
    }
    prev = raw ? 1 : 0;
    return c.negate ? !v : v;
  };
  if (e.any.empty()) {
    if (st.prev.empty()) st.prev.assign(1, std::vector<uint8_t>(1, 0));
    return through_edge(e.when, EvaluateOne(e.when, i, sim_ns, detail, subject, ahead), st.prev[0][0]);
  }
  // OR of AND groups: every condition is evaluated each time (edges need every value); the first group whose
  // conditions all hold fires, with the values of its conditions.
  if (st.prev.size() != e.any.size()) {
    st.prev.clear();
    for (const auto& g : e.any) st.prev.emplace_back(g.size(), 0);
  }
  bool any = false;
  for (size_t g = 0; g < e.any.size(); ++g) {
    bool all = true;
    std::string details;
    uint64_t g_subject = 0, g_ahead = 0;
    for (size_t k = 0; k < e.any[g].size(); ++k) {
      std::string d;
      uint64_t sub = 0, ah = 0;
      const bool v = through_edge(e.any[g][k], EvaluateOne(e.any[g][k], i, sim_ns, d, sub, ah), st.prev[g][k]);
      all = all && v;
      details += (k ? "," : "") + (d.empty() ? std::string("{}") : d);
      if (sub && !g_subject) {
        g_subject = sub;
        g_ahead = ah;
      }
    }
    if (all && !any) {
      any = true;
      detail = fmt::format("{{\"group\":{},\"conditions\":[{}]}}", g, details);
      subject = g_subject;
      ahead = g_ahead;
    }
  }
  return any;
}

bool ScenarioSystem::EvaluateOne(const ConditionDef& c, size_t /*event*/, int64_t sim_ns, std::string& detail,
                                 uint64_t& subject, uint64_t& ahead) {
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
    case ConditionDef::Kind::kEventState: {
      // Another event's state: started (its actions began), running (they still run) or done (they ended).
      size_t j = 0;
      while (j < events_.size() && events_[j].name != c.text) ++j;
      if (j == events_.size()) return false;
      const State& o = state_[j];
      const bool started = o.count > 0 && sim_ns >= o.start_ns;
      const bool running = started && sim_ns < o.running_until_ns;
      const bool holds = c.state == "started" ? started : c.state == "running" ? running : started && !running;
      detail = fmt::format("{{\"event\":{},\"state\":\"{}\",\"count\":{}}}", session_log::JsonQuote(c.text),
                           c.state, o.count);
      return holds;
    }
    case ConditionDef::Kind::kParameter: {
      const auto it = params_.find(c.text);
      const std::string text = it == params_.end() ? std::string() : it->second;
      detail = fmt::format("{{\"parameter\":{},\"value\":{}}}", session_log::JsonQuote(c.text),
                           session_log::JsonQuote(text));
      if (!c.equals_text.empty() || (!c.equals && !c.below && !c.above)) return text == c.equals_text;
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end == text.c_str()) return false;
      return (!c.below || v < *c.below) && (!c.above || v > *c.above) && (!c.equals || std::abs(v - *c.equals) <= 1e-9);
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
  data::MetricsRow row = data::ComputeMetrics(sim_ns, me, others, roads_, def, &ahead);
  const bool sign_quantity = c.quantity >= Quantity::kSignAheadDistance;
  if (sign_quantity) {
    // The next and last sign of the asked type for the vehicle's direction (the data write's columns).
    // Variable message signs as the live parameters set them now (signs.vms_<id>).
    const auto& contents = core_.Session().conditions.variable_signs;
    if (contents != sign_contents_) {
      sign_contents_ = contents;
      if (road::ApplyVariableContents(all_signs_, sign_contents_)) FilterSigns();
    }
    const auto signs = signs_.find(c.sign);
    if (sign_road_ && signs != signs_.end()) data::FillSignColumns(row, *sign_road_, signs->second, 1e9);
  }
  double value = std::nan("");
  bool holds = false;
  switch (c.quantity) {
    case Quantity::kSpeed: value = row[data::Column::kSpeed]; break;
    case Quantity::kGap: value = row[data::Column::kHeadway]; break;
    case Quantity::kTimeHeadway: value = row[data::Column::kTimeHeadway]; break;
    case Quantity::kTtc: value = row[data::Column::kTtc]; break;
    case Quantity::kLane: value = row[data::Column::kLane]; break;
    case Quantity::kLaneOffset: value = row[data::Column::kLaneOffset]; break;
    case Quantity::kDistance:
    case Quantity::kRelativeSpeed:
    case Quantity::kTraveled:
    case Quantity::kStandstill:
    case Quantity::kAcceleration: value = ExtraQuantity(c, subject, own, sim_ns); break;
    case Quantity::kSignAheadDistance: value = row[data::Column::kNextSignDistance]; break;
    case Quantity::kSignAheadValue: value = row[data::Column::kNextSignValue]; break;
    case Quantity::kSignPassedDistance: value = row[data::Column::kLastSignDistance]; break;
    case Quantity::kSignPassedValue: value = row[data::Column::kLastSignValue]; break;
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
    holds = std::isfinite(value) && (!c.below || value < *c.below) && (!c.above || value > *c.above) &&
            (!c.equals || std::abs(value - *c.equals) <= 1e-9);
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
  TrackVehicles(sim_ns);
  // Conditions, in file order: a firing at the rising edge (once, or again with repeat up to max_count).
  for (size_t i = 0; i < events_.size(); ++i) {
    const config::EventDef& e = events_[i];
    State& st = state_[i];
    if (st.fired && !e.repeat) continue;
    if (e.max_count > 0 && st.count >= e.max_count) continue;
    std::string detail;
    uint64_t subject = 0, ahead = 0;
    const bool now_true = Evaluate(i, sim_ns, detail, subject, ahead);
    const bool rising = now_true && !st.was_true;
    st.was_true = now_true;
    // Markers are pulses: each one is a rising edge of its own.
    if (e.when.kind == ConditionDef::Kind::kMarker || e.when.kind == ConditionDef::Kind::kKey) st.was_true = false;
    if (!rising) continue;
    if (st.fired && e.repeat && sim_ns - st.last_fired_ns < static_cast<int64_t>(std::llround(e.min_interval_s * 1e9))) continue;
    // Priorities within a group (an OpenSCENARIO maneuver): skip while another one runs, or end those running.
    if (!e.group.empty() && e.priority != "parallel") {
      bool other_running = false;
      for (size_t j = 0; j < events_.size(); ++j) {
        State& o = state_[j];
        if (j == i || events_[j].group != e.group || o.count == 0 || sim_ns >= o.running_until_ns) continue;
        if (e.priority == "skip") other_running = true;
        else o.running_until_ns = sim_ns;  // overwrite: it ends now; its vehicle commands are replaced
      }
      if (other_running) {
        st.was_true = false;  // try again at the next evaluation
        continue;
      }
    }
    const int64_t delay_ns = static_cast<int64_t>(std::llround(e.delay_s * 1e9));
    st.fired = true;
    st.last_fired_ns = sim_ns;
    ++st.count;
    st.start_ns = sim_ns + delay_ns;
    st.running_until_ns = INT64_MAX;  // until its actions start and say how long they run
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

double ScenarioSystem::AlongRoad(const Vec3& from_m, const Vec3& to_m) const {
  // In the direction of travel of the lane `from` is on: +s right of the reference line, -s left of it.
  const road::RoadCoord a = roads_.Project(from_m), b = roads_.Project(to_m);
  return a.lane > 0 ? a.s_m - b.s_m : b.s_m - a.s_m;
}

void ScenarioSystem::RunActions(const Pending& p, int64_t sim_ns, int64_t now_ns) {
  const config::EventDef& e = events_[p.event];
  const std::string source = "event:" + e.name;
  // How long the event runs: its longest action (a speed or lane change), from now.
  double running_s = 0;
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
      case ActionDef::Kind::kScenarioParam: {
        // A scenario parameter: set, or changed arithmetically (a value that is no number counts as 0).
        std::string& v = params_[a.path];
        if (a.op == "set") {
          v = a.text;
        } else {
          const double old = std::strtod(v.c_str(), nullptr);
          v = fmt::format("{}", a.op == "add" ? old + a.amount : old * a.amount);
        }
        out.kind = LoggedEvent::Kind::kParam;
        out.text = "scenario." + a.path + " = " + v;
        break;
      }
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
          case ActionDef::Kind::kChangeLane: {
            int lane = a.lane, direction = a.direction;
            if (!a.relative_to.empty()) {
              // Relative to a vehicle's lane now: its lane plus `lanes` (left positive), on its side of the road.
              const uint64_t ref = a.relative_to == "self" ? target : config::EntityRefId(a.relative_to);
              protocol::EntityState r;
              const int ref_lane = StateAt(ref, sim_ns, r) && !roads_.Roads().empty()
                                       ? roads_.Project(r.kinematics.pose.position_m).lane : 0;
              lane = ref_lane + (ref_lane < 0 ? a.direction : -a.direction);
              direction = 0;
              if (ref_lane == 0 || lane == 0 || (lane > 0) != (ref_lane > 0)) {
                log_->warn("scenario: event {}: change_lane relative to {} (lane {}) by {}: no such lane; skipped", e.name,
                           a.relative_to, ref_lane, a.direction);
                continue;
              }
            }
            args = fmt::format("\"lane\":{},\"direction\":{}", lane, direction);
            if (a.duration_s > 0 || a.shape == "step" || a.offset_m != 0)
              args += fmt::format(",\"shape\":\"{}\",\"duration_s\":{},\"offset_m\":{}", a.shape,
                                  Num(a.shape == "step" ? 0.0 : a.duration_s), Num(a.offset_m));
            running_s = std::max(running_s, config::ActionDuration(a, 0, 0));
            break;
          }
          case ActionDef::Kind::kLaneOffset:
            args = fmt::format("\"offset_m\":{},\"shape\":\"{}\",\"duration_s\":{}", Num(a.offset_m), a.shape,
                               Num(a.shape == "step" ? 0.0 : a.duration_s));
            running_s = std::max(running_s, config::ActionDuration(a, 0, 0));
            break;
          case ActionDef::Kind::kSpeed: {
            // The target from the speeds at this moment, then the profile the node follows (held at the end).
            protocol::EntityState own;
            const double v0 = StateAt(target, sim_ns, own) ? own.kinematics.velocity_mps.norm() : 0.0;
            double v1 = a.speed_mps;
            if (!a.relative_to.empty()) {
              double ref = v0;
              protocol::EntityState r;
              if (a.relative_to != "self") {
                if (!StateAt(config::EntityRefId(a.relative_to), sim_ns, r)) {
                  log_->warn("scenario: event {}: speed relative to {}, which is not in the world; skipped", e.name,
                             a.relative_to);
                  continue;
                }
                ref = r.kinematics.velocity_mps.norm();
              }
              v1 = std::max(0.0, a.factor ? ref * a.delta_mps : ref + a.delta_mps);
            }
            const auto points = config::SpeedProfilePoints(a, v0, v1);
            running_s = std::max(running_s, config::ActionDuration(a, v0, v1));
            out.text = "speed_profile";
            args = fmt::format("\"action\":\"speed\",\"from_mps\":{},\"speed_mps\":{},\"shape\":\"{}\",\"dimension\":\"{}\","
                               "\"value\":{},\"points\":[",
                               Num(v0), Num(v1), a.shape, a.dimension, Num(a.amount));
            for (size_t k = 0; k < points.size(); ++k)
              args += fmt::format("{}{:.9g},{:.9g}", k ? "," : "", points[k].first, points[k].second);
            args += "]";
            break;
          }
          case ActionDef::Kind::kSynchronize: {
            // Both distances along the road and the master's speed now: the target covers its distance in the
            // time the master needs for its own at that speed.
            const uint64_t master_id = config::EntityRefId(a.master);
            protocol::EntityState own, master;
            if (roads_.Roads().empty() || !StateAt(target, sim_ns, own) || !StateAt(master_id, sim_ns, master)) {
              log_->warn("scenario: event {}: synchronize {} with {}: {} not in the world (or no road); skipped", e.name,
                         a.target, a.master, roads_.Roads().empty() ? "no road," : "a vehicle is");
              continue;
            }
            const double d_own = AlongRoad(own.kinematics.pose.position_m, Vec3(a.point[0], a.point[1], 0));
            const double d_master = AlongRoad(master.kinematics.pose.position_m, Vec3(a.master_point[0], a.master_point[1], 0));
            const double v0 = own.kinematics.velocity_mps.norm(), vm = master.kinematics.velocity_mps.norm();
            std::optional<double> final_speed;
            if (a.final_speed)
              final_speed = a.relative_to.empty() ? a.speed_mps : std::max(0.0, a.factor ? vm * a.delta_mps : vm + a.delta_mps);
            const double T = vm > 1e-3 && d_master > 0 ? d_master / vm : -1;
            const auto points = T > 0 && d_own >= 0 ? config::SynchronizeProfile(d_own, T, v0, final_speed)
                                                    : std::vector<std::pair<double, double>>{};
            if (points.empty()) {
              log_->warn("scenario: event {}: synchronize {} with {}: {} m to go for it, {} m at {:.2f} m/s for {}: no "
                         "speed profile without reversing; skipped", e.name, a.target, a.master, Num(d_own), Num(d_master),
                         vm, a.master);
              continue;
            }
            running_s = std::max(running_s, T);
            out.text = "speed_profile";
            args = fmt::format("\"action\":\"synchronize\",\"master\":{},\"distance_m\":{},\"master_distance_m\":{},"
                               "\"arrival_s\":{},\"points\":[",
                               session_log::JsonQuote(a.master), Num(d_own), Num(d_master), Num(Seconds(sim_ns) + T));
            for (size_t k = 0; k < points.size(); ++k)
              args += fmt::format("{}{:.9g},{:.9g}", k ? "," : "", points[k].first, points[k].second);
            args += "]";
            break;
          }
          case ActionDef::Kind::kFollowPath: {
            // The points across the road (s, t), and with times the speeds that pass them then.
            protocol::EntityState own;
            if (roads_.Roads().empty() || !StateAt(target, sim_ns, own)) {
              log_->warn("scenario: event {}: follow_path of {}: not in the world (or no road); skipped", e.name, a.target);
              continue;
            }
            const road::RoadCoord here = roads_.Project(own.kinematics.pose.position_m);
            std::vector<double> s, t, times;
            bool ordered = true;
            for (size_t k = 0; k + 1 < a.path_xy.size(); k += 2) {
              const road::RoadCoord c = roads_.Project(Vec3(a.path_xy[k], a.path_xy[k + 1], 0));
              if (!s.empty() && !(c.s_m > s.back())) ordered = false;
              s.push_back(c.s_m);
              t.push_back(c.t_m);
            }
            if (!ordered || s.back() <= here.s_m) {
              log_->warn("scenario: event {}: follow_path of {}: the points must lie ahead of it in its direction along "
                         "the road, one after another; skipped", e.name, a.target);
              continue;
            }
            out.text = "follow_path";
            args = "\"action\":\"follow_path\",\"path\":[";
            for (size_t k = 0; k < s.size(); ++k) args += fmt::format("{}{:.9g},{:.9g}", k ? "," : "", s[k], t[k]);
            args += "]";
            if (!a.times_s.empty()) {
              std::vector<double> ds;
              for (size_t k = 0; k < s.size(); ++k) {
                times.push_back(a.absolute_times ? a.times_s[k] - Seconds(sim_ns) : a.times_s[k]);
                ds.push_back(s[k] - here.s_m);
              }
              bool exact = true;
              const auto points = config::TimedPathProfile(times, ds, own.kinematics.velocity_mps.norm(), &exact);
              if (!exact)
                log_->warn("scenario: event {}: follow_path of {}: its times ask it to go back; it waits instead", e.name, a.target);
              args += ",\"points\":[";
              for (size_t k = 0; k < points.size(); ++k)
                args += fmt::format("{}{:.9g},{:.9g}", k ? "," : "", points[k].first, points[k].second);
              args += "]";
              running_s = std::max(running_s, times.back());
            } else {
              const double v = own.kinematics.velocity_mps.norm();
              if (v > 1e-3) running_s = std::max(running_s, (s.back() - here.s_m) / v);
            }
            break;
          }
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
  state_[p.event].running_until_ns = sim_ns + static_cast<int64_t>(std::llround(running_s * 1e9));
}

void ScenarioSystem::TrackVehicles(int64_t sim_ns) {
  // Once per sim time: the distance each vehicle drove since the last evaluation, and since when it stands.
  if (sim_ns == tracked_ns_) return;
  tracked_ns_ = sim_ns;
  for (const auto& [id, e] : core_.Entities()) {
    if (!data::IsVehicle(e.state.kind)) continue;
    protocol::EntityState s;
    if (!StateAt(id, sim_ns, s)) continue;
    Track& t = tracks_[id];
    const Vec3 p = s.kinematics.pose.position_m;
    if (t.seen) t.traveled_m += (p - t.last_m).head<2>().norm();
    t.last_m = p;
    t.seen = true;
    const bool still = s.kinematics.velocity_mps.norm() < 0.01;
    if (!still) t.still_since_ns = -1;
    else if (t.still_since_ns < 0) t.still_since_ns = sim_ns;
  }
}

double ScenarioSystem::ExtraQuantity(const ConditionDef& c, uint64_t subject, const protocol::EntityState& own,
                                     int64_t sim_ns) {
  const auto& k = own.kinematics;
  const double speed = k.velocity_mps.norm();
  switch (c.quantity) {
    case Quantity::kTraveled: {
      const auto it = tracks_.find(subject);
      return it == tracks_.end() ? 0.0 : it->second.traveled_m;
    }
    case Quantity::kStandstill: {
      const auto it = tracks_.find(subject);
      return it == tracks_.end() || it->second.still_since_ns < 0 ? 0.0 : Seconds(sim_ns - it->second.still_since_ns);
    }
    case Quantity::kAcceleration: {
      // Along the direction of travel (the heading when it stands).
      const double yaw = data::SampleOf(own).yaw_rad;
      const Vec3 dir = speed > 1e-6 ? Vec3(k.velocity_mps.x() / speed, k.velocity_mps.y() / speed, 0)
                                    : Vec3(std::cos(yaw), std::sin(yaw), 0);
      return k.acceleration_mps2.dot(dir);
    }
    default: break;
  }
  protocol::EntityState other;
  if (!StateAt(config::EntityRefId(c.other), sim_ns, other)) return std::nan("");
  const data::VehicleSample me = data::SampleOf(own), it = data::SampleOf(other);
  if (c.quantity == Quantity::kRelativeSpeed) return speed - other.kinematics.velocity_mps.norm();
  // Distance in the subject's frame (x forward, y left), between reference points or boxes.
  const Vec3 d = it.position_m - me.position_m;
  const double ch = std::cos(me.yaw_rad), sh = std::sin(me.yaw_rad);
  const double dx = d.x() * ch + d.y() * sh, dy = -d.x() * sh + d.y() * ch;
  double lon = std::abs(dx), lat = std::abs(dy);
  if (c.freespace) {
    // Boxes span -0.2 .. +0.8 of their length about the reference point, 1.8 m wide (same heading assumed).
    const double gap_ahead = dx - 0.2 * it.length_m - 0.8 * me.length_m;
    const double gap_behind = -dx - 0.2 * me.length_m - 0.8 * it.length_m;
    lon = std::max(0.0, std::max(gap_ahead, gap_behind));
    lat = std::max(0.0, std::abs(dy) - 1.8);
  }
  if (c.measure == "longitudinal") return lon;
  if (c.measure == "lateral") return lat;
  return std::hypot(lon, lat);
}

void ScenarioSystem::SetSigns(road::Road road, std::vector<road::Sign> signs) {
  sign_road_ = std::move(road);
  all_signs_ = std::move(signs);
  FilterSigns();
}

void ScenarioSystem::FilterSigns() {
  const auto& signs = all_signs_;
  signs_.clear();
  auto add = [&](const config::ConditionDef& c) {
    if (c.kind != config::ConditionDef::Kind::kQuantity || c.quantity < Quantity::kSignAheadDistance || signs_.count(c.sign))
      return;
    std::vector<road::Sign> kept;
    for (const auto& s : signs)
      if (c.sign.empty() || road::SignTypeName(s.type) == c.sign) kept.push_back(s);
    signs_.emplace(c.sign, std::move(kept));
  };
  for (const auto& e : events_) {
    add(e.when);
    for (const auto& group : e.any)
      for (const auto& c : group) add(c);
  }
}

std::shared_ptr<ScenarioSystem> InstallScenario(WorldCore& core, std::shared_ptr<spdlog::logger> log) {
  const config::SessionDef& session = core.Session();
  if (session.events.empty()) return nullptr;
  road::RoadNetwork roads = session.has_road ? road::SessionRoadNetwork(session.road) : road::RoadNetwork{};
  auto system = std::make_shared<ScenarioSystem>(core, session.events, std::move(roads), std::move(log),
                                                 session.scenario_params);
  if (session.has_road) {
    auto signs = road::SessionSigns(session);
    if (!signs.empty()) system->SetSigns(road::SessionRoad(session.road), std::move(signs));
  }
  core.AddSystem(system, system_priority::kStepper);
  return system;
}

}  // namespace platoon::server
