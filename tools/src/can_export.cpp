// `platoon export LOG.mcap --candump OUT.log --can-map MAP.toml [--vehicle NAME] [--interface can0]`:
// one recorded vehicle's signals as the CAN frames a seat with that mapping sends. Each recorded state
// of the vehicle (as the world broadcasts carried it) gives the mapping's variables (CanValuesOfState),
// can::CanMapping::Due makes the tx frames due at the state's sim time, and can::CandumpWriter writes
// them stamped with it. With --every-period, also at every k * period in between, from the state that
// data::RecordedTracks::StateAt finds there (--method). docs/CAN.md, "Recorded sessions as CAN logs".
#include "can_export.hpp"

#include "progress.hpp"

#include "platoon/can/candump.hpp"
#include "platoon/can/dbc.hpp"
#include "platoon/config/cli.hpp"
#include "platoon/config/session.hpp"
#include "platoon/data/recorded_tracks.hpp"
#include "platoon/data/vehicle_metrics.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/server/replay.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <optional>

namespace platoon::launcher {
namespace {

constexpr const char* kMe = "platoon export";
constexpr int kExitNothing = 1;
constexpr int kExitUsage = config::cli::kExitUsage;

int64_t SecondsToNs(double s) {
  if (s <= -9e9) return INT64_MIN;
  if (s >= 9e9) return INT64_MAX;
  return SToNs(s);
}

int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

std::string Hex(uint64_t id) { return fmt::format("{:016x}", id); }

std::string KindText(protocol::EntityKind kind) {
  switch (kind) {
    case protocol::EntityKind::kCar: return "car";
    case protocol::EntityKind::kTruck: return "truck";
    case protocol::EntityKind::kMotorcycle: return "motorcycle";
    case protocol::EntityKind::kBicycle: return "bicycle";
    case protocol::EntityKind::kPedestrian: return "pedestrian";
    case protocol::EntityKind::kStaticObject: return "static_object";
    default: return "unknown";
  }
}

// An interface name as candump writes it: 1..15 characters (IFNAMSIZ - 1), none that ends the field.
bool GoodInterface(const std::string& name) {
  if (name.empty() || name.size() > 15) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isgraph(c) && c != '(' && c != ')' && c != '#';
  });
}

// Whether the signal's raw value for `physical` had to be clamped into its bits or its [min|max].
bool Clamped(const can::Signal& s, double physical) {
  if (s.value_type != can::ValueType::kInteger) return false;
  const double raw = std::round((physical - s.offset) / s.factor);
  return !std::isfinite(raw) || static_cast<double>(can::PhysicalToRaw(s, physical)) != raw;
}

// What happened to one mapped tx message.
struct MessageTally {
  uint64_t frames = 0;
  std::vector<uint64_t> clamped;   // per mapped signal
  std::vector<double> first_clamped_s;  // per mapped signal: sim time of the first clamp
};

}  // namespace

can::VariableValues CanValuesOfState(const protocol::EntityState& state, double track_m) {
  const data::VehicleSample v = data::SampleOf(state);
  const double c = std::cos(v.yaw_rad), s = std::sin(v.yaw_rad);
  can::VariableValues out{};
  auto set = [&](can::Variable var, double value) { out[static_cast<size_t>(var)] = value; };
  // The vehicle frame: x forward along the heading, y to the left.
  set(can::Variable::kSpeedMps, c * v.velocity_mps.x() + s * v.velocity_mps.y());
  set(can::Variable::kYawRateRadps, v.yaw_rate_radps);
  set(can::Variable::kAxMps2, c * v.acceleration_mps2.x() + s * v.acceleration_mps2.y());
  set(can::Variable::kAyMps2, -s * v.acceleration_mps2.x() + c * v.acceleration_mps2.y());
  set(can::Variable::kXM, v.position_m.x());
  set(can::Variable::kYM, v.position_m.y());
  set(can::Variable::kYawRad, std::remainder(v.yaw_rad, 2 * M_PI));
  set(can::Variable::kSteer, v.steer);
  set(can::Variable::kThrottle, v.throttle);
  set(can::Variable::kBrake, v.brake);
  // As the seat sends them (node/src/driver_seat.cpp): left before right, reverse light = vx < -0.1 m/s.
  set(can::Variable::kIndicator, state.lights.indicator_left ? 1 : state.lights.indicator_right ? 2 : 0);
  set(can::Variable::kGear, state.lights.reverse ? -1 : 1);
  // The rear wheels sit on the reference point's axle: its velocity plus yaw_rate x (0, +-track / 2).
  const double speed = out[static_cast<size_t>(can::Variable::kSpeedMps)];
  set(can::Variable::kWheelSpeedRlMps, speed - v.yaw_rate_radps * track_m / 2);
  set(can::Variable::kWheelSpeedRrMps, speed + v.yaw_rate_radps * track_m / 2);
  return out;
}

int RunCanExport(const ExportOptions& o) {
  const auto t_start = std::chrono::steady_clock::now();
  // 1. Options and the mapping, before the log (which may be large).
  if (!GoodInterface(o.can_interface)) {
    std::fprintf(stderr, "%s: --interface: expected an interface name of 1..15 characters without spaces, '(', ')' or '#', got \"%s\"\n",
                 kMe, o.can_interface.c_str());
    return kExitUsage;
  }
  if (o.to_s < o.from_s) {
    std::fprintf(stderr, "%s: --to (%.3f s) is before --from (%.3f s)\n", kMe, o.to_s, o.from_s);
    return kExitUsage;
  }
  std::optional<can::CanMapping> mapping;
  try {
    // The timeout only concerns received commands, which an export does not take.
    mapping.emplace(can::LoadMapping(o.can_map_path), 1.0);
  } catch (const std::exception& e) {  // config::ConfigError, can::DbcError
    std::fprintf(stderr, "%s: --can-map: %s\n", kMe, e.what());
    return kExitUsage;
  }
  const can::MappingDef& map = mapping->Def();
  if (!mapping->HasTx()) {
    std::fprintf(stderr, "%s: --can-map: %s maps no tx message (direction = \"tx\"): nothing a vehicle sends to write\n", kMe,
                 o.can_map_path.c_str());
    return kExitUsage;
  }

  // Live parameters are a running node's; a recording holds only the changes logged as events.
  for (const auto& md : map.messages)
    for (const auto& sd : md.signals)
      if (md.direction == can::Direction::kTx && sd.param >= 0) {
        std::fprintf(stderr, "%s: --can-map: %s: %s.%s carries the live parameter \"%s\", which an export cannot read from a "
                             "recording; map it in a copy without that signal\n",
                     kMe, o.can_map_path.c_str(), md.message->name.c_str(), sd.signal->name.c_str(),
                     map.params[static_cast<size_t>(sd.param)].path.c_str());
        return kExitUsage;
      }
  // Front wheel speeds need the road-wheel angle and the wheelbase, which a recording does not hold.
  for (const auto& md : map.messages)
    for (const auto& sd : md.signals)
      if (md.direction == can::Direction::kTx && sd.param < 0 &&
          (sd.variable == can::Variable::kWheelSpeedFlMps || sd.variable == can::Variable::kWheelSpeedFrMps)) {
        std::fprintf(stderr, "%s: --can-map: %s: %s.%s carries %s, which an export cannot compute (a recording holds neither "
                             "the road-wheel angle nor the wheelbase; the rear wheel speeds it can); map it in a copy without that signal\n",
                     kMe, o.can_map_path.c_str(), md.message->name.c_str(), sd.signal->name.c_str(),
                     std::string(can::VariableName(sd.variable)).c_str());
        return kExitUsage;
      }

  // 2. The log.
  server::ReplayLog log;
  if (const int rc = LoadExportLog(o.log_path, log); rc != 0) return rc;

  // 3. The session, for its driver seats: --config, else the recorded file's text. Without one, the
  // vehicle is named with --vehicle (or is the only vehicle).
  config::SessionDef session;
  bool have_session = false;
  if (!o.config_path.empty()) {
    try {
      session = config::LoadSession(o.config_path);
      have_session = true;
    } catch (const config::ConfigError& e) {
      std::fprintf(stderr, "%s: --config: %s\n", kMe, e.what());
      return kExitUsage;
    }
  } else if (!log.session_text.empty()) {
    try {
      session = config::LoadSessionText(log.session_text, log.session_path.empty() ? o.log_path : log.session_path);
      have_session = true;
    } catch (const config::ConfigError& e) {
      std::fprintf(stderr, "%s: warning: the recorded session file does not load here (%s): its driver seats are unknown; "
                           "name the vehicle with --vehicle or give the session with --config FILE\n", kMe, e.what());
    }
  }

  // 4. The tracks and their names ("<node>:<index>", else the hex id).
  std::vector<data::TrackRemoval> removals;
  for (const auto& r : log.removals) removals.push_back({r.id, r.sim_ns});
  const data::RecordedTracks tracks(std::move(log.states), removals, log.last_world_ns);
  log.states = {};
  const auto& all = tracks.Tracks();
  std::vector<std::string> node_names;
  for (const auto& [id, name] : log.node_names) node_names.push_back(name);
  if (have_session)
    for (const auto& n : session.nodes) node_names.push_back(n.name);
  std::sort(node_names.begin(), node_names.end());
  node_names.erase(std::unique(node_names.begin(), node_names.end()), node_names.end());
  std::vector<std::string> names(all.size());
  std::vector<std::string> seat_of(all.size());  // the driver seat node whose vehicle it is, or ""
  for (size_t i = 0; i < all.size(); ++i) {
    names[i] = VehicleName(all[i].id, node_names);
    if (names[i].empty()) names[i] = Hex(all[i].id);
    if (have_session)
      for (const auto& n : session.nodes)
        if (n.role == protocol::Role::kDriver && all[i].id == VehicleId(n.name, 0)) seat_of[i] = n.name;
  }
  auto describe = [&](const std::vector<size_t>& which) {
    std::string out;
    for (size_t k = 0; k < which.size() && k < 20; ++k) {
      const size_t i = which[k];
      out += (out.empty() ? "" : ", ") + names[i] + " (" + KindText(all[i].kind) + (seat_of[i].empty() ? "" : ", driver seat") + ")";
    }
    if (which.size() > 20) out += fmt::format(", ... ({} in all)", which.size());
    return out.empty() ? std::string("none") : out;
  };
  std::vector<size_t> vehicles;
  for (size_t i = 0; i < all.size(); ++i)
    if (data::IsVehicle(all[i].kind)) vehicles.push_back(i);

  // 5. The vehicle: --vehicle by name, node name, or id; else the first driver seat of the session
  // (file order) that was recorded; else the only vehicle.
  size_t chosen = all.size();
  if (!o.vehicle.empty()) {
    std::string lower = o.vehicle;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    std::vector<size_t> matches;
    for (size_t i = 0; i < all.size(); ++i) {
      const uint64_t id = all[i].id;
      const bool by_id = lower == std::to_string(id) || lower == Hex(id) || lower == fmt::format("0x{:x}", id) ||
                         lower == fmt::format("{:x}", id);
      const auto colon = names[i].rfind(':');
      const bool by_node = colon != std::string::npos && names[i].substr(0, colon) == o.vehicle;
      if (names[i] == o.vehicle || by_id || by_node) matches.push_back(i);
    }
    if (matches.empty()) {
      std::fprintf(stderr, "%s: --vehicle: %s has no vehicle \"%s\" (its vehicles: %s)\n", kMe, o.log_path.c_str(),
                   o.vehicle.c_str(), describe(vehicles).c_str());
      return kExitUsage;
    }
    if (matches.size() > 1) {
      std::fprintf(stderr, "%s: --vehicle: \"%s\" is ambiguous, it names %zu vehicles (%s); give one of them\n", kMe,
                   o.vehicle.c_str(), matches.size(), describe(matches).c_str());
      return kExitUsage;
    }
    chosen = matches.front();
  } else {
    if (have_session)
      for (const auto& n : session.nodes) {
        if (n.role != protocol::Role::kDriver || chosen < all.size()) continue;
        if (const auto i = tracks.Find(VehicleId(n.name, 0))) chosen = *i;
      }
    if (chosen == all.size() && vehicles.size() == 1) chosen = vehicles.front();
    if (chosen == all.size()) {
      std::fprintf(stderr, "%s: %s has %s; choose the vehicle with --vehicle NAME (its vehicles: %s)\n", kMe,
                   o.log_path.c_str(),
                   have_session ? "no recorded driver seat's vehicle" : "no session file to find its driver seats in",
                   describe(vehicles).c_str());
      return kExitUsage;
    }
  }
  const data::Track& track = all[chosen];

  // 6. The states in --from .. --to.
  const int64_t from_ns = SecondsToNs(o.from_s), to_ns = SecondsToNs(o.to_s);
  const auto first = std::lower_bound(track.states.begin(), track.states.end(), from_ns,
                                      [](const protocol::EntityState& e, int64_t t) { return e.kinematics.stamp_ns < t; });
  const auto last = std::upper_bound(track.states.begin(), track.states.end(), to_ns,
                                     [](int64_t t, const protocol::EntityState& e) { return t < e.kinematics.stamp_ns; });
  if (first >= last) {
    std::fprintf(stderr, "%s: %s has no state of %s in %.3f .. %.3f s (its states: %.3f .. %.3f s): nothing to export\n", kMe,
                 o.log_path.c_str(), names[chosen].c_str(), std::max(o.from_s, -9e9), std::min(o.to_s, 9e9),
                 NsToS(track.FirstNs()), NsToS(track.LastStateNs()));
    return kExitNothing;
  }
  const size_t count = static_cast<size_t>(last - first);
  std::printf("%s: %s: vehicle %s (%s%s), %zu states in %.3f .. %.3f s; mapping %s (DBC %s)\n", kMe, o.log_path.c_str(),
              names[chosen].c_str(), KindText(track.kind).c_str(),
              seat_of[chosen].empty() ? "" : (", driver seat " + seat_of[chosen]).c_str(), count,
              NsToS(first->kinematics.stamp_ns), NsToS(std::prev(last)->kinematics.stamp_ns), o.can_map_path.c_str(),
              map.dbc_path.c_str());

  // 7. The frames: the tx messages due at each state's sim time, stamped with it.
  std::optional<can::CandumpWriter> writer;
  try {
    writer.emplace(o.candump_path);
  } catch (const can::CandumpError& e) {
    std::fprintf(stderr, "%s: --candump: %s\n", kMe, e.what());
    return kExitUsage;
  }
  std::vector<MessageTally> tally(map.messages.size());
  for (size_t m = 0; m < map.messages.size(); ++m) {
    tally[m].clamped.assign(map.messages[m].signals.size(), 0);
    tally[m].first_clamped_s.assign(map.messages[m].signals.size(), 0.0);
  }
  auto message_of = [&](const can::Frame& f) {
    for (size_t m = 0; m < map.messages.size(); ++m)
      if (map.messages[m].direction == can::Direction::kTx && map.messages[m].message->id == f.id &&
          map.messages[m].message->extended == f.extended)
        return m;
    return map.messages.size();
  };
  // The sim times: each recorded state's; with --every-period also every k * period of each periodic
  // message between the first and the last of them (the state there found by --method).
  const int64_t t0 = first->kinematics.stamp_ns, t1 = std::prev(last)->kinematics.stamp_ns;
  std::vector<int64_t> times;
  times.reserve(count);
  for (auto it = first; it != last; ++it) times.push_back(it->kinematics.stamp_ns);
  const auto method = data::TrackMethodFromName(o.method);
  if (o.can_every_period) {
    for (const auto& md : map.messages) {
      if (md.direction != can::Direction::kTx || md.on_change) continue;
      for (int64_t k = FloorDiv(t0 - 1, md.period_ns) + 1; k <= FloorDiv(t1, md.period_ns); ++k) times.push_back(k * md.period_ns);
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
  }
  uint64_t frames = 0, not_whole_us = 0;
  std::optional<Progress> progress;
  progress.emplace("export", times.size());  // silent during the first second
  std::string write_error;
  auto next_recorded = first;
  for (size_t i = 0; i < times.size() && write_error.empty(); ++i) {
    const int64_t t = times[i];
    // The recorded state at its stamp; between stamps (--every-period) the one the method finds.
    std::optional<protocol::EntityState> between;
    while (next_recorded != last && next_recorded->kinematics.stamp_ns < t) ++next_recorded;
    const bool at_recorded = next_recorded != last && next_recorded->kinematics.stamp_ns == t;
    if (!at_recorded) {
      between = tracks.StateAt(chosen, t, method.value_or(data::TrackMethod::kInterpolate));
      if (!between) continue;  // removed then
    }
    const protocol::EntityState& state = at_recorded ? *next_recorded : *between;
    if (t % 1000 != 0) ++not_whole_us;
    const can::VariableValues values = CanValuesOfState(state, map.track_m);
    for (const can::StampedFrame& sf : mapping->Due(t, values)) {
      // Values the signal cannot hold (its bits, its [min|max]) go clamped: counted per signal.
      const size_t m = message_of(sf.frame);
      if (m < map.messages.size()) {
        ++tally[m].frames;
        const auto& signals = map.messages[m].signals;
        for (size_t k = 0; k < signals.size(); ++k) {
          const double physical = (values[static_cast<size_t>(signals[k].variable)] - signals[k].offset) / signals[k].factor;
          if (Clamped(*signals[k].signal, physical) && tally[m].clamped[k]++ == 0) tally[m].first_clamped_s[k] = NsToS(t);
        }
      }
      if (!writer->Append(can::LoggedFrame{t, o.can_interface, sf.frame})) {
        write_error = fmt::format("writing {} failed at sim time {:.6f} s after {} frames: {}", o.candump_path, NsToS(t), frames,
                                  std::strerror(errno));
        break;
      }
      ++frames;
    }
    if (progress) progress->Update(i + 1, "sim times");
  }
  if (progress) progress->Done();
  if (write_error.empty() && !writer->Flush())
    write_error = fmt::format("writing {} failed: {}", o.candump_path, std::strerror(errno));
  writer.reset();
  if (!write_error.empty()) {
    std::fprintf(stderr, "%s: %s (the lines written before it are kept)\n", kMe, write_error.c_str());
    return kExitUsage;
  }

  // 8. What went on the bus, message by message, and what a reader should know.
  for (size_t m = 0; m < map.messages.size(); ++m) {
    const can::MessageMapDef& md = map.messages[m];
    const std::string id = md.message->extended ? fmt::format("0x{:08X}", md.message->id) : fmt::format("0x{:03X}", md.message->id);
    if (md.direction == can::Direction::kRx) {
      std::printf("  %s (%s): rx, not written (an export writes what the vehicle sends)\n", md.message->name.c_str(), id.c_str());
      continue;
    }
    if (md.on_change) {
      std::printf("  %s (%s) on change: %llu frames\n", md.message->name.c_str(), id.c_str(),
                  static_cast<unsigned long long>(tally[m].frames));
    } else {
      const int64_t slots = FloorDiv(t1, md.period_ns) - FloorDiv(t0, md.period_ns) + 1;
      std::printf("  %s (%s) every %g ms: %llu frames, %lld period slots in the span%s\n", md.message->name.c_str(), id.c_str(),
                  static_cast<double>(md.period_ns) / 1e6, static_cast<unsigned long long>(tally[m].frames),
                  static_cast<long long>(slots),
                  static_cast<int64_t>(tally[m].frames) < slots
                      ? " (the states come less often than the period: one frame in each slot that has a state; "
                        "--every-period fills every slot)"
                      : "");
    }
    for (size_t k = 0; k < md.signals.size(); ++k)
      if (tally[m].clamped[k] > 0) {
        const can::Signal& s = *md.signals[k].signal;
        std::fprintf(stderr, "%s: warning: %s.%s: %llu of %llu values outside what the signal holds (%s, [%g|%g] %s), written clamped; the first at %.3f s\n",
                     kMe, md.message->name.c_str(), s.name.c_str(), static_cast<unsigned long long>(tally[m].clamped[k]),
                     static_cast<unsigned long long>(tally[m].frames), std::string(can::VariableName(md.signals[k].variable)).c_str(),
                     s.minimum, s.maximum, s.unit.c_str(), tally[m].first_clamped_s[k]);
      }
  }
  if (not_whole_us > 0)
    std::fprintf(stderr, "%s: warning: %llu state stamps are not whole microseconds; candump time stamps have microseconds, truncated\n",
                 kMe, static_cast<unsigned long long>(not_whole_us));
  std::printf("%s: wrote %llu CAN frames on %s to %s, sim time stamps %.6f .. %.6f s, in %.1f s\n", kMe,
              static_cast<unsigned long long>(frames), o.can_interface.c_str(), o.candump_path.c_str(), NsToS(t0), NsToS(t1),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());
  std::fflush(stdout);
  return 0;
}

}  // namespace platoon::launcher
