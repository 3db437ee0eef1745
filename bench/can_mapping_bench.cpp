// CAN frames per second through the mapping on one core (the benchmark): encode, send, receive and
// decode on one thread over a UDP bus on loopback, for the rig mapping (configs/can/rig_map.toml):
//   tx path: CanMapping::Due (the seat's values -> the frames due: SimMotion, SimPose every 10 ms and SimDriver
//            on change, the values changing every step) -> UdpBus::Send -> UdpBus::Receive on the peer bus ->
//            DecodeMessage (what the ECU does with them);
//   rx path: EncodeMessage of EcuCommand (the ECU) -> UdpBus::Send -> UdpBus::Receive -> CanMapping::Take +
//            Command (what the seat does).
// Baselines in the same run: the codec alone (the same frames' EncodeMessage + DecodeMessage, no bus), and a
// raw UDP sendto + recv of the same datagram bytes on the same kind of sockets (no codec, no framing).
#include "platoon/can/dbc.hpp"
#include "platoon/can/mapping.hpp"
#include "platoon/can/transport.hpp"

#include <CLI/CLI.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace platoon::can;

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The seat's values at step i: every variable moves so that on_change messages go and nothing is cached.
VariableValues ValuesAt(long i) {
  VariableValues v{};
  const double t = static_cast<double>(i) * 0.01;
  v[static_cast<size_t>(Variable::kSpeedMps)] = 20 + 5 * std::sin(t);
  v[static_cast<size_t>(Variable::kYawRateRadps)] = 0.2 * std::sin(0.7 * t);
  v[static_cast<size_t>(Variable::kAxMps2)] = std::cos(t);
  v[static_cast<size_t>(Variable::kAyMps2)] = 2 * std::sin(0.7 * t);
  v[static_cast<size_t>(Variable::kXM)] = 100 * std::cos(0.01 * t);
  v[static_cast<size_t>(Variable::kYM)] = 100 * std::sin(0.01 * t);
  v[static_cast<size_t>(Variable::kYawRad)] = std::remainder(0.01 * t + 1.5707963, 6.283185307179586);
  v[static_cast<size_t>(Variable::kSteer)] = 0.3 * std::sin(0.5 * t + static_cast<double>(i & 1) * 0.01);
  v[static_cast<size_t>(Variable::kThrottle)] = 0.4;
  v[static_cast<size_t>(Variable::kBrake)] = 0;
  v[static_cast<size_t>(Variable::kIndicator)] = static_cast<double>((i / 500) % 3);
  v[static_cast<size_t>(Variable::kGear)] = 1;
  return v;
}

// Receives the next frame on `bus`, spinning while loopback has not delivered it yet; false after many empty polls.
bool ReceiveOne(Bus& bus, Frame& out) {
  for (int spin = 0; spin < 1'000'000; ++spin)
    if (auto f = bus.Receive()) {
      out = *f;
      return true;
    }
  return false;
}

struct Result {
  double frames_per_s = 0;
  long frames = 0;
  long lost = 0;
};

// Tx path: Due -> Send -> Receive -> DecodeMessage, `steps` steps of 10 ms of sim time.
Result TxPath(const std::string& map_path, long steps, double& sink) {
  CanMapping mapping(LoadMapping(map_path), 0.25);
  const Database& db = mapping.Def().dbc;
  UdpBus ecu("127.0.0.1", 0, "127.0.0.1", 1);
  UdpBus seat_to_ecu("127.0.0.1", 0, "127.0.0.1", ecu.LocalPort());
  Result r;
  const auto t0 = Clock::now();
  for (long i = 0; i < steps; ++i) {
    const auto due = mapping.Due(i * 10'000'000, ValuesAt(i));
    for (const auto& sf : due) seat_to_ecu.Send(sf.frame);
    for (size_t k = 0; k < due.size(); ++k) {
      Frame f;
      if (!ReceiveOne(ecu, f)) {
        ++r.lost;
        continue;
      }
      const Message* m = db.FindMessage(f.id, f.extended);
      if (m) sink += DecodeMessage(*m, f).begin()->second;
      ++r.frames;
    }
  }
  r.frames_per_s = static_cast<double>(r.frames) / Seconds(t0);
  return r;
}

// The tx path's frames, made once, for the baselines.
std::vector<Frame> TxFrames(const std::string& map_path, long steps) {
  CanMapping mapping(LoadMapping(map_path), 0.25);
  std::vector<Frame> out;
  for (long i = 0; i < steps; ++i)
    for (const auto& sf : mapping.Due(i * 10'000'000, ValuesAt(i))) out.push_back(sf.frame);
  return out;
}

// Baseline: the codec alone on the same frames: EncodeMessage of their decoded values + DecodeMessage.
Result CodecOnly(const Database& db, const std::vector<Frame>& frames, double& sink) {
  std::vector<std::pair<const Message*, std::map<std::string, double>>> inputs;
  for (const Frame& f : frames) {
    const Message* m = db.FindMessage(f.id, f.extended);
    inputs.emplace_back(m, DecodeMessage(*m, f));
  }
  Result r;
  const auto t0 = Clock::now();
  for (const auto& [m, values] : inputs) {
    const Frame f = EncodeMessage(*m, values);
    sink += DecodeMessage(*m, f).begin()->second;
    ++r.frames;
  }
  r.frames_per_s = static_cast<double>(r.frames) / Seconds(t0);
  return r;
}

// Baseline: raw sendto + recv of the same datagram bytes between two non-blocking loopback UDP sockets.
Result RawUdp(const std::vector<Frame>& frames, double& sink) {
  std::vector<std::vector<uint8_t>> datagrams;
  for (const Frame& f : frames) datagrams.push_back(EncodeUdpFrame(f));
  const int a = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), b = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(b, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(b, reinterpret_cast<sockaddr*>(&addr), &len);
  uint8_t buffer[128];
  Result r;
  const auto t0 = Clock::now();
  for (const auto& d : datagrams) {
    sendto(a, d.data(), d.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ssize_t n = -1;
    for (int spin = 0; spin < 1'000'000 && n < 0; ++spin) n = recv(b, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0) {
      ++r.lost;
      continue;
    }
    sink += buffer[n - 1];
    ++r.frames;
  }
  r.frames_per_s = static_cast<double>(r.frames) / Seconds(t0);
  close(a);
  close(b);
  return r;
}

// Rx path: the ECU encodes EcuCommand -> Send -> Receive -> Take + Command, `frames` frames 10 ms apart.
Result RxPath(const std::string& map_path, long frames, double& sink) {
  CanMapping mapping(LoadMapping(map_path), 0.25);
  const Message* cmd = nullptr;
  for (const auto& m : mapping.Def().messages)
    if (m.direction == Direction::kRx) cmd = m.message;
  if (!cmd) return {};
  UdpBus seat("127.0.0.1", 0, "127.0.0.1", 1);
  UdpBus ecu("127.0.0.1", 0, "127.0.0.1", seat.LocalPort());
  std::map<std::string, double> values;
  for (const auto& s : cmd->signals) values[s.name] = 0;
  Result r;
  const auto t0 = Clock::now();
  for (long i = 0; i < frames; ++i) {
    values["SteerCmd"] = 30 * std::sin(0.005 * static_cast<double>(i));
    values["ThrottleCmd"] = static_cast<double>(i % 100);
    values["Counter"] = static_cast<double>(i & 15);
    ecu.Send(EncodeMessage(*cmd, values));
    Frame f;
    if (!ReceiveOne(seat, f)) {
      ++r.lost;
      continue;
    }
    const int64_t sim_ns = i * 10'000'000;
    mapping.Take(f, sim_ns);
    sink += mapping.Command(sim_ns).steer;
    ++r.frames;
  }
  r.frames_per_s = static_cast<double>(r.frames) / Seconds(t0);
  return r;
}

void Print(const char* what, const Result& r) {
  std::printf("  %-62s %10.0f frames/s  %7.2f us/frame  (%ld frames, %ld lost)\n", what, r.frames_per_s, 1e6 / r.frames_per_s,
              r.frames, r.lost);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CAN frames per second through the mapping (encode, send, receive, decode) on one core, over UDP on loopback"};
  long steps = 100000;
  std::string map_path = "configs/can/rig_map.toml";
  app.add_option("--steps", steps, "10 ms sim-time steps of the tx path (about 2.5 frames each); the rx path takes as many frames")
      ->check(CLI::PositiveNumber);
  app.add_option("--map", map_path, "The CAN mapping file (with its DBC)")->check(CLI::ExistingFile);
  CLI11_PARSE(app, argc, argv);

  try {
    const MappingDef def = LoadMapping(map_path);
    double sink = 0;
    const std::vector<Frame> frames = TxFrames(map_path, steps);
    std::printf("%s: %ld steps of 10 ms, %zu tx frames, one thread, UDP on 127.0.0.1\n", map_path.c_str(), steps, frames.size());
    Print("codec alone: EncodeMessage + DecodeMessage (baseline)", CodecOnly(def.dbc, frames, sink));
    Print("raw UDP sendto + recv of the same datagrams (baseline)", RawUdp(frames, sink));
    Print("tx: Due -> UdpBus::Send -> UdpBus::Receive -> DecodeMessage", TxPath(map_path, steps, sink));
    Print("rx: EncodeMessage -> Send -> Receive -> Take + Command", RxPath(map_path, steps, sink));
    std::printf("(checksum %g)\n", sink);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "can_mapping_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
