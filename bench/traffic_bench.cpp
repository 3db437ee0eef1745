// Road traffic at scale: the road traffic role stepped in this process at its rate
// (100 Hz) with 1,000 to 4,000 vehicles on the demo road (generated, 20 km, 3 lanes), with and without a
// second traffic node's vehicles as remote vehicles. Reports the module's step time against its period and
// vehicles per core, and where the time goes: the traffic model (lane index against the brute-force scan of
// every vehicle, same run), the projection of remote vehicles (near their last s against the whole road,
// same run) and the states handed to the runtime. With --session N: a real session over loopback, each
// node's CPU, update latency and view error (its displayed remote vehicles against their owner's truth,
// from platoon-node --pose-log on every 20th vehicle).
#include "percentile.hpp"
#include "platoon/config/session.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/module.hpp"
#include "platoon/node/pose_log.hpp"
#include "platoon/node/road_traffic_module.hpp"
#include "platoon/process/child.hpp"
#include "platoon/road/session_road.hpp"
#include "platoon/vehicle/road_traffic.hpp"

#include "bench_support.hpp"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

using namespace platoon;
using Clock = std::chrono::steady_clock;

namespace {

using platoon::bench::CpuSeconds;
using platoon::bench::Percentile;
using platoon::bench::Summary;
using platoon::bench::Field;

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// A runtime without sockets: remote vehicles handed in, published states copied out (the least any runtime
// does with them: ClientModuleContext also keeps the truth and runs a send policy per entity).
class BenchContext final : public node::ModuleContext {
 public:
  std::vector<node::RemoteEntity> remote;
  std::vector<protocol::EntityState> published;
  std::vector<node::RemoteEntity> RemoteEntities(int64_t) const override { return remote; }
  void Publish(const protocol::EntityState& truth) override { published.push_back(truth); }
  void WorldStats(uint64_t& received, int64_t& max_gap_ns) const override {
    received = 0;
    max_gap_ns = 0;
  }
  uint32_t NodeId() const override { return 1; }
};

config::NodeDef TrafficNode(const std::string& name, int vehicles, double rate_hz) {
  config::NodeDef n;
  n.name = name;
  n.role = protocol::Role::kTraffic;
  n.traffic_model = "road";
  n.vehicles = vehicles;
  n.speed_mps = 25.0;
  n.module_rate_hz = rate_hz;
  return n;
}

struct Case {
  int vehicles = 0;
  int remote = 0;
};

// A real session over loopback: platoon-server, `nodes` road traffic nodes sharing `vehicles` on the demo
// road, and an observer. Prints each node's CPU share (over the measured seconds) and update latency.
int RunSession(const std::string& bin, int vehicles, int nodes, double seconds, double warmup, double length_m,
               int lanes, double rate_hz, int pose_every, double pose_hz, bool keep,
               const std::vector<std::string>& node_extra, int keyframe_parts) {
  using namespace std::chrono_literals;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("platoon-traffic-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string session = (dir / "session.toml").string(), ready = (dir / "ready.json").string();
  {
    std::ofstream f(session);
    f << "[session]\nname = \"traffic-bench\"\nserver_host = \"127.0.0.1\"\n[server]\nbind_address = \"127.0.0.1\"\n"
      << "status_interval_s = 0\nkeyframe_parts = " << keyframe_parts << "\n[road]\ngenerate_length_m = " << length_m << "\nseed = 1\nlanes = " << lanes << "\n";
    for (int i = 0; i < nodes; ++i)
      f << "[[node]]\nname = \"traffic-" << i << "\"\nrole = \"traffic\"\ntraffic_model = \"road\"\nvehicles = "
        << vehicles / nodes << "\nspeed_mps = 25\nmodule_rate_hz = " << rate_hz << "\n";
    f << "[[node]]\nname = \"observer\"\nrole = \"observer\"\n";
  }
  process::Child server = process::Child::Spawn({bin + "/platoon-server", "--config", session, "--port", "0",
                                                 "--ready-file", ready, "--autostart", "0", "--log-level", "warn"});
  while (!fs::exists(ready)) {
    if (server.TryWait()) {
      std::fprintf(stderr, "traffic_bench: the server did not start\n");
      return 1;
    }
    server.ReadLine(20ms);
  }
  std::ifstream rf(ready);
  const std::string json((std::istreambuf_iterator<char>(rf)), std::istreambuf_iterator<char>());
  const std::string port = std::to_string(static_cast<int>(Field(json, "control")));
  std::vector<std::string> names;
  for (int i = 0; i < nodes; ++i) names.push_back("traffic-" + std::to_string(i));
  names.push_back("observer");
  std::vector<process::Child> children;
  for (const auto& name : names) {
    std::vector<std::string> args = {bin + "/platoon-node", "--config", session, "--name", name, "--server",
                                     "127.0.0.1", "--port", port, "--log-level", "warn", "--monitor-hz", "100",
                                     "--stats-warmup", std::to_string(warmup), "--exit-after",
                                     std::to_string(warmup + seconds)};
    for (const auto& a : node_extra) args.push_back(a);
    // Every node's truth of its own vehicles and its view of the others', for the view error below.
    if (pose_every > 0)
      for (const std::string& a : {std::string("--pose-log"), (dir / (name + ".csv")).string(),
                                   std::string("--pose-log-every"), std::to_string(pose_every),
                                   std::string("--pose-log-hz"), std::to_string(pose_hz)})
        args.push_back(a);
    children.push_back(process::Child::Spawn(args));
  }
  const auto t0 = Clock::now();
  std::vector<double> cpu0(children.size()), cpu1(children.size());
  double server0 = 0, server1 = 0;
  bool m0 = false, m1 = false;
  auto w0 = t0, w1 = t0;
  std::vector<std::string> sink;
  while (true) {
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!m0 && t >= warmup) {
      for (size_t i = 0; i < children.size(); ++i) cpu0[i] = CpuSeconds(children[i].Pid());
      server0 = CpuSeconds(server.Pid());
      w0 = Clock::now();
      m0 = true;
    }
    if (!m1 && t >= warmup + seconds - 0.5) {
      for (size_t i = 0; i < children.size(); ++i) cpu1[i] = CpuSeconds(children[i].Pid());
      server1 = CpuSeconds(server.Pid());
      w1 = Clock::now();
      m1 = true;
    }
    bool running = false;
    for (auto& c : children) {
      c.Pump(sink);
      running |= !c.TryWait().has_value();
    }
    server.Pump(sink);
    sink.clear();
    if (!running) break;
    std::this_thread::sleep_for(20ms);
  }
  const double wall = std::chrono::duration<double>(w1 - w0).count();
  std::string extra;
  for (const auto& a : node_extra) extra += " " + a;
  std::printf("session: %d road vehicles on %d traffic node(s), %.0f Hz, %.0f s measured after %.0f s, keyframe_parts %d; "
              "server CPU %.0f %%%s\n",
              vehicles, nodes, rate_hz, seconds, warmup, keyframe_parts, 100.0 * (server1 - server0) / wall,
              extra.empty() ? "" : ("; nodes with" + extra).c_str());
  // The view error: each node's displayed remote vehicles against their owner's truth (both from the pose
  // logs), from the end of the warm-up on.
  std::vector<std::vector<node::PoseRow>> logs(children.size());
  std::vector<node::PoseRow> own;
  int64_t first_ns = INT64_MAX;
  if (pose_every > 0) {
    try {
      for (size_t i = 0; i < children.size(); ++i) {
        logs[i] = node::ReadPoseLog((dir / (names[i] + ".csv")).string());
        for (const auto& r : logs[i])
          if (r.source == node::PoseRow::Source::kOwn) {
            own.push_back(r);
            first_ns = std::min(first_ns, r.sim_ns);
          }
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "traffic_bench: %s\n", e.what());
      return 1;
    }
  }
  std::printf("%12s %6s %12s %12s %9s %12s %11s %11s %11s %8s %10s %10s %10s %9s\n", "node", "CPU%", "lat_p50_ms",
              "lat_p99_ms", "samples", "max_external", "view_p50_cm", "view_p99_cm", "view_max_cm", "judged",
              "est_p99_cm", "est_max_cm", "after_jump", "rough_p99");
  for (size_t i = 0; i < children.size(); ++i) {
    const std::string s = Summary(children[i]);
    if (s.empty()) {
      std::fprintf(stderr, "traffic_bench: node %s reported no SUMMARY; its last lines:\n", names[i].c_str());
      const auto& lines = children[i].Lines();
      for (size_t k = lines.size() > 3 ? lines.size() - 3 : 0; k < lines.size(); ++k)
        std::fprintf(stderr, "  %s\n", lines[k].c_str());
      continue;
    }
    node::ViewErrors view, estimate;
    if (pose_every > 0 && first_ns != INT64_MAX) {
      const int64_t from = first_ns + static_cast<int64_t>(warmup * 1e9), gap = static_cast<int64_t>(2.5e9 / rate_hz);
      view = node::CompareViews(own, logs[i], from, gap);
      estimate = node::CompareViews(own, logs[i], from, gap, node::PoseRow::Source::kEstimate);
    }
    const auto& e = view.errors_m;
    const auto& u = estimate.errors_m;
    std::printf("%12s %6.0f %12.2f %12.2f %9.0f %12.0f %11.2f %11.2f %11.2f %8zu %10.2f %10.2f %10zu %9.1f\n", names[i].c_str(),
                100.0 * (cpu1[i] - cpu0[i]) / wall, Field(s, "update_latency_p50_us") / 1e3,
                Field(s, "update_latency_p99_us") / 1e3, Field(s, "update_latency_samples"),
                Field(s, "road_max_external"), 100 * Percentile(e, 50), 100 * Percentile(e, 99),
                e.empty() ? 0.0 : 100 * *std::max_element(e.begin(), e.end()), e.size(), 100 * Percentile(u, 99),
                u.empty() ? 0.0 : 100 * *std::max_element(u.begin(), u.end()), view.after_jump,
                Percentile(view.roughness_mps2, 99));
  }
  if (keep)
    std::printf("session files and pose logs kept in %s\n", dir.c_str());
  else
    fs::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Road traffic at scale: the road traffic role's step time against its period"};
  std::vector<int> counts = {1000, 2000, 4000};
  double seconds = 5.0, warmup_s = 2.0, rate_hz = 100.0, length_m = 20000.0;
  int lanes = 3, scan_steps = 20;
  app.add_option("--vehicles", counts, "Vehicle counts of the one-node cases")->delimiter(',')->capture_default_str();
  app.add_option("--seconds", seconds, "Sim seconds measured per case")->capture_default_str();
  app.add_option("--warmup", warmup_s, "Sim seconds stepped before measuring (traffic settles)")->capture_default_str();
  app.add_option("--rate", rate_hz, "The traffic role's rate, in Hz")->capture_default_str();
  app.add_option("--length", length_m, "Generated road length, in m")->capture_default_str();
  app.add_option("--lanes", lanes, "Lanes in the driving direction")->capture_default_str();
  app.add_option("--scan-steps", scan_steps, "Steps of the brute-force baseline per case")->capture_default_str();
  int session_vehicles = 0, session_nodes = 1;
  double session_seconds = 20, session_warmup = 8;
  app.add_option("--session", session_vehicles,
                 "Instead: a real session with this many road vehicles (platoon-server, traffic nodes, an observer)");
  app.add_option("--session-nodes", session_nodes, "Traffic nodes sharing the session's vehicles")->capture_default_str();
  app.add_option("--session-seconds", session_seconds, "Measured seconds of the session")->capture_default_str();
  app.add_option("--session-warmup", session_warmup, "Seconds before measuring (joins, clock sync)")->capture_default_str();
  int pose_every = 20;
  double pose_hz = 20;
  app.add_option("--pose-hz", pose_hz, "Session: rate of the viewers' pose log rows, Hz (roughness needs 100)")
      ->check(CLI::Range(1.0, 1000.0))
      ->capture_default_str();
  int keyframe_parts = 0;
  app.add_option("--keyframe-parts", keyframe_parts,
                 "Session: [server] keyframe_parts (0 auto: a rolling keyframe past 512 entities; 1 whole keyframes)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  bool keep = false;
  app.add_flag("--keep", keep, "Session: keep its folder (session file, pose logs) and print where it is");
  std::vector<std::string> node_extra;
  app.add_option_function<double>(
      "--blend-time", [&](double v) { node_extra.insert(node_extra.end(), {"--blend-time", std::to_string(v)}); },
      "Session: every node's platoon-node --blend-time (the receivers' shortest blend, s)");
  app.add_option_function<double>(
      "--blend-speed", [&](double v) { node_extra.insert(node_extra.end(), {"--blend-speed", std::to_string(v)}); },
      "Session: every node's platoon-node --blend-speed (the fastest a blend moves the display, m/s)");
  app.add_option("--pose-every", pose_every,
                 "Session: judge the view error on every this many vehicles (platoon-node --pose-log); 0: not at all")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (session_vehicles > 0) {
    const std::string bin = std::filesystem::canonical("/proc/self/exe").parent_path().string();
    return RunSession(bin, session_vehicles, std::max(1, session_nodes), session_seconds, session_warmup, length_m,
                      lanes, rate_hz, pose_every, pose_hz, keep, node_extra, keyframe_parts);
  }

  config::SessionDef session;
  session.road.generate_length_m = length_m;
  session.road.lanes = lanes;
  session.road.seed = 1;
  const road::Road road = road::SessionRoad(session.road);
  const double period_us = 1e6 / rate_hz;
  const auto dt_ns = static_cast<int64_t>(1e9 / rate_hz + 0.5);

  // One node with N vehicles; and a node of a two-node session (N each) that sees the other's N as remote.
  std::vector<Case> cases;
  for (int n : counts) cases.push_back({n, 0});
  for (int n : counts)
    if (n <= 2000) cases.push_back({n / 2, n / 2});
  std::printf("traffic_bench: road %.0f m, %d lanes, role rate %.0f Hz (period %.0f us), %.0f s measured after %.0f s\n",
              length_m, lanes, rate_hz, period_us, seconds, warmup_s);
  std::printf("%6s %6s | %9s %9s %9s %7s | %9s %9s %7s | %9s %9s | %9s | %6s\n", "cars", "remote", "step_p50",
              "step_p99", "step_max", "late%", "model_idx", "model_scan", "x", "proj_near", "proj_whole", "publish",
              "veh/core");
  for (const Case& c : cases) {
    // The node under test, and the other node whose vehicles it sees.
    session.nodes = {TrafficNode("traffic-a", c.vehicles, rate_hz)};
    if (c.remote > 0) session.nodes.push_back(TrafficNode("traffic-b", c.remote, rate_hz));
    node::RoadTrafficModule module(session, session.nodes[0]);
    std::unique_ptr<node::RoadTrafficModule> other;
    if (c.remote > 0) other = std::make_unique<node::RoadTrafficModule>(session, session.nodes[1]);
    BenchContext ctx, other_ctx;
    std::vector<double> step_us;
    const int warm = static_cast<int>(warmup_s * rate_hz), total = warm + static_cast<int>(seconds * rate_hz);
    for (int k = 0; k < total; ++k) {
      const int64_t sim_ns = k * dt_ns;
      const node::StepInfo info{sim_ns, k == 0 ? 0 : dt_ns};
      if (other) {
        // The other node's vehicles, as this node displays them (their true pose: no network here).
        other_ctx.published.clear();
        other->Step(info, other_ctx);
        ctx.remote.clear();
        for (const auto& e : other_ctx.published) ctx.remote.push_back(node::RemoteEntity{e, e.kinematics.pose});
      }
      ctx.published.clear();
      const auto t0 = Clock::now();
      module.Step(info, ctx);
      const auto t1 = Clock::now();
      if (k >= warm) step_us.push_back(Us(t1 - t0));
    }
    int late = 0;
    for (double u : step_us) late += u > period_us;

    // Where the time goes, same run. The traffic model alone: lane index against the scan of every vehicle.
    vehicle::RoadTrafficDef def = vehicle::DefaultRoadTrafficDef();
    def.vehicles = c.vehicles;
    def.idm.desired_speed_mps = 25.0;
    def.seed = 1;
    vehicle::RoadTrafficDef scan_def = def;
    scan_def.spatial_index = false;
    vehicle::RoadTraffic indexed(road, def), scanned(road, scan_def);
    for (int k = 0; k < warm; ++k) indexed.Step(1.0 / rate_hz);
    for (int k = 0; k < std::min(warm, scan_steps); ++k) scanned.Step(1.0 / rate_hz);
    std::vector<double> idx_us, scan_us;
    for (int k = 0; k < static_cast<int>(seconds * rate_hz); ++k) {
      const auto t0 = Clock::now();
      indexed.Step(1.0 / rate_hz);
      idx_us.push_back(Us(Clock::now() - t0));
    }
    for (int k = 0; k < scan_steps; ++k) {
      const auto t0 = Clock::now();
      scanned.Step(1.0 / rate_hz);
      scan_us.push_back(Us(Clock::now() - t0));
    }
    // Remote vehicles: projected near their last s against onto the whole road.
    double near_us = 0, whole_us = 0;
    if (!ctx.remote.empty()) {
      std::unordered_map<uint64_t, double> last;
      for (const auto& e : ctx.remote) {
        double s = 0, d = 0;
        indexed.OnLane(e.displayed.position_m, &s, &d);
        last[e.state.id] = s;
      }
      const auto t0 = Clock::now();
      size_t on = 0;
      for (const auto& e : ctx.remote) {
        double s = 0, d = 0;
        on += indexed.OnLaneNear(e.displayed.position_m, last[e.state.id], 60.0, &s, &d).has_value();
      }
      const auto t1 = Clock::now();
      for (const auto& e : ctx.remote) on += indexed.OnLane(e.displayed.position_m).has_value();
      const auto t2 = Clock::now();
      near_us = Us(t1 - t0);
      whole_us = Us(t2 - t1);
      if (on == 0) std::printf("(no remote vehicle on a lane)\n");
    }
    // The states handed to the runtime: one KinematicState from the road per vehicle, and its copy.
    std::vector<protocol::EntityState> out;
    out.reserve(indexed.Cars().size());
    const auto p0 = Clock::now();
    for (int rep = 0; rep < 10; ++rep) {
      out.clear();
      for (const auto& car : indexed.Cars()) {
        protocol::EntityState e;
        e.id = VehicleId("traffic-a", car.index);
        e.kind = protocol::EntityKind::kCar;
        e.kinematics = indexed.State(car, 0);
        out.push_back(e);
      }
    }
    const double publish_us = Us(Clock::now() - p0) / 10.0;

    const double mean = Mean(step_us);
    std::printf("%6d %6d | %9.0f %9.0f %9.0f %7.1f | %9.0f %9.0f %7.0f | %9.0f %9.0f | %9.0f | %6.0f\n", c.vehicles,
                c.remote, Percentile(step_us, 50), Percentile(step_us, 99), Percentile(step_us, 100),
                100.0 * late / static_cast<double>(step_us.size()), Percentile(idx_us, 50), Percentile(scan_us, 50),
                Percentile(scan_us, 50) / std::max(1e-3, Percentile(idx_us, 50)), near_us, whole_us, publish_us,
                mean > 0 ? c.vehicles * period_us / mean : 0);
  }
  std::printf("step_*: RoadTrafficModule::Step in us (model, remote projection, states published) at the role's rate;\n"
              "late%%: steps over the period; model_idx / model_scan: RoadTraffic::Step alone with the lane index / the\n"
              "brute-force scan (baseline, p50 of %d steps), x: ratio; proj_near / proj_whole: projecting every remote\n"
              "vehicle near its last s / onto the whole road (baseline), us a step; publish: the vehicles' states, us a\n"
              "step; veh/core: vehicles one core steps at the role's rate (cars x period / mean step).\n",
              scan_steps);
  return 0;
}
