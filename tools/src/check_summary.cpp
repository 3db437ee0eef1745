#include "check_summary.hpp"

#include "platoon/sensors/sensor_config.hpp"
#include "platoon/session/discovery.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace platoon::launcher {
namespace {

using config::ActionDef;
using config::ConditionDef;

// "30" or "0.5": a number as short as it reads.
std::string SummaryNumber(double v) { return fmt::format("{:g}", v); }

// What an event waits for, in words: "sim time reaches 10 s", "gap of seat1 below 20".
std::string SummaryCondition(const ConditionDef& c) {
  switch (c.kind) {
    case ConditionDef::Kind::kSimTime: return "sim time reaches " + SummaryNumber(c.sim_time_s) + " s";
    case ConditionDef::Kind::kMarker: return "marker \"" + c.text + "\"";
    case ConditionDef::Kind::kKey: return "key " + c.text + (c.seat.empty() ? " on any seat" : " on seat " + c.seat);
    case ConditionDef::Kind::kEventState: return "event \"" + c.text + "\" " + c.state;
    case ConditionDef::Kind::kParameter: {
      std::string text = "parameter " + c.text;
      if (!c.equals_text.empty()) return text + " is \"" + c.equals_text + "\"";
      if (c.equals) text += " equals " + SummaryNumber(*c.equals);
      if (c.below) text += " below " + SummaryNumber(*c.below);
      if (c.above) text += (c.below ? " and above " : " above ") + SummaryNumber(*c.above);
      return text;
    }
    case ConditionDef::Kind::kQuantity: break;
  }
  std::string text = std::string(config::QuantityName(c.quantity)) + " of " + c.entity;
  if (!c.other.empty()) text += " (behind " + c.other + ")";
  if (c.quantity >= config::Quantity::kSignAheadDistance) text += c.sign.empty() ? " (any sign)" : " (" + c.sign + " signs)";
  if (c.quantity == config::Quantity::kRegion) {
    text += c.circle ? fmt::format(" in the circle ({:g}, {:g}) r {:g} m", c.center_m[0], c.center_m[1], c.radius_m)
                     : fmt::format(" in the box ({:g}, {:g})..({:g}, {:g}) m", c.box_m[0], c.box_m[1], c.box_m[2],
                                   c.box_m[3]);
  }
  if (c.lane) text += " is " + std::to_string(*c.lane);
  if (c.equals && !c.lane) text += " equals " + SummaryNumber(*c.equals);
  if (c.below) text += " below " + SummaryNumber(*c.below);
  if (c.above) text += (c.below ? " and above " : " above ") + SummaryNumber(*c.above);
  return text;
}

// One action in words: "brake ahead", "set_param server.broadcast_hz = 30", "message \"Brake!\"".
std::string SummaryAction(const ActionDef& a) {
  switch (a.kind) {
    case ActionDef::Kind::kSetParam: return a.name + " " + a.path + " = " + a.value;
    case ActionDef::Kind::kMessage: return a.name + " \"" + a.text + "\"" + (a.node.empty() ? "" : " on " + a.node);
    case ActionDef::Kind::kMark: return a.name + " \"" + a.text + "\"";
    case ActionDef::Kind::kSpawn: return a.name + " on " + a.node;
    default: return a.name + (a.target.empty() ? "" : " " + a.target);
  }
}

std::string SummaryJoin(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace

std::string CheckSummary(const config::SessionDef& s) {
  using protocol::Role;
  std::string out = fmt::format("summary: `platoon run {}` sets up\n", s.file);

  // The server: where it binds and listens, and how clients find it.
  const auto& sv = s.server;
  if (sv.control_port == 0)
    out += fmt::format("  server      bind {}, ports chosen by the OS at start (control_port = 0)\n", sv.bind_address);
  else
    out += fmt::format("  server      bind {}, ports {} (control), {} (time), {} (world), {} (state)\n", sv.bind_address,
                       sv.control_port, sv.time_port, sv.world_port, sv.state_port);
  out += fmt::format("              ctl and the viewer find it while it runs (discovery file in {})\n",
                     session::DiscoveryDir());

  // The nodes, with their sensors and a seat's input.
  size_t width = 4;
  for (const auto& n : s.nodes) width = std::max(width, n.name.size());
  out += fmt::format("  nodes       {}\n", s.nodes.size());
  for (const auto& n : s.nodes) {
    std::string line = fmt::format("    {:<{}} {:<9} host {}", n.name, width, protocol::RoleName(n.role), n.host);
    std::vector<std::string> sensors;
    for (const auto& t : n.sensors) {
      const auto spec = sensors::ReadSensorSpec(t);
      sensors.push_back(fmt::format("{} ({}, {:g} Hz)", spec.id, protocol::StreamKindName(spec.kind), spec.rate_hz));
    }
    if (!sensors.empty()) line += ", sensors " + SummaryJoin(sensors);
    if (n.role == Role::kDriver) line += ", seat input " + n.input + (n.input_mapping ? " (with [node.input_mapping])" : "");
    out += line + "\n";
  }

  // Scenario events, one line each.
  out += fmt::format("  events      {}\n", s.events.size());
  for (const auto& e : s.events) {
    std::vector<std::string> actions;
    for (const auto& a : e.actions) actions.push_back(SummaryAction(a));
    // OR-of-AND groups (any = [...], an OpenSCENARIO trigger): counted, `platoon scenario check --events` lists them.
    const std::string when = e.any.empty() ? SummaryCondition(e.when)
                                           : fmt::format("any of {} condition group(s)", e.any.size());
    out += fmt::format("    {}: when {}{}{}: {}\n", e.name, when,
                       e.delay_s > 0 ? ", after " + SummaryNumber(e.delay_s) + " s" : "",
                       e.repeat ? ", again at every rising edge" : "", SummaryJoin(actions));
  }

  // Data writes and recorders: the files a run leaves.
  std::vector<std::string> writes, recorders;
  for (const auto& n : s.nodes) {
    if (n.data_write) {
      std::string path = n.data_write->path;
      for (size_t at; (at = path.find("{node}")) != std::string::npos;) path.replace(at, 6, n.name);
      writes.push_back(fmt::format("{} -> {} at {:g} Hz", n.name, path, n.data_write->rate_hz));
    }
    if (n.role == Role::kRecorder) {
      const auto& r = n.recorder;
      recorders.push_back(fmt::format("{} -> {}, streams {}", n.name, r.path,
                                      r.streams.empty() ? std::string("none (world and events only)")
                                                        : SummaryJoin(r.streams)));
    }
  }
  out += fmt::format("  data writes {}\n", writes.size());
  for (const auto& w : writes) out += "    " + w + "\n";
  out += fmt::format("  recorders   {}\n", recorders.size());
  for (const auto& r : recorders) out += "    " + r + "\n";

  // How sim time advances.
  if (s.step.lockstep)
    out += fmt::format("  timing      lock-step, {:g} steps per sim second{}\n", s.step.step_hz,
                       s.step.end_s > 0 ? ", ends at sim " + SummaryNumber(s.step.end_s) + " s" : "");
  else
    out += "  timing      real time (lock-step with platoon run --lockstep)\n";
  return out;
}

}  // namespace platoon::launcher
