// DBC signal codec throughput on one core: frames per second through platoon::can::EncodeMessage and
// DecodeMessage (physical values by signal name, the API the `can` role uses) for a classic 8-byte message
// of 8 signals (Intel and Motorola, signed, scaled) and a 64-byte CAN FD message of 8 signals, beside
// baselines measured in the same run: the payload copy alone (memcpy of the frame), the raw bit
// insertion and extraction alone (InsertRaw / ExtractRaw, no scaling and no names), and the per-signal
// codec without the name map (EncodeSignal / DecodeSignal).
#include "platoon/can/dbc.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace platoon::can;

namespace {

using Clock = std::chrono::steady_clock;

// Two messages written for the benchmark: 8 signals each, both byte orders, signed, scaled.
const char* const kBenchDbc = R"(VERSION ""
BS_:
BU_: Ecu Seat
BO_ 256 VehicleState: 8 Ecu
 SG_ Speed : 0|16@1+ (0.01,0) [0|655.35] "km/h" Seat
 SG_ YawRate : 16|12@1- (0.05,0) [-102.4|102.35] "deg/s" Seat
 SG_ AccelX : 39|10@0- (0.05,0) [-25.6|25.55] "m/s2" Seat
 SG_ AccelY : 45|10@0- (0.05,0) [-25.6|25.55] "m/s2" Seat
 SG_ Gear : 51|4@0+ (1,0) [0|15] "" Seat
 SG_ Indicator : 56|2@1+ (1,0) [0|3] "" Seat
 SG_ Brake : 58|1@1+ (1,0) [0|1] "" Seat
 SG_ Counter : 60|4@1+ (1,0) [0|15] "" Seat
BO_ 1024 ObjectList: 64 Ecu
 SG_ Count : 0|8@1+ (1,0) [0|255] "" Seat
 SG_ Distance : 8|20@1+ (0.001,0) [0|1000] "m" Seat
 SG_ RelSpeed : 28|14@1- (0.01,0) [-81.92|81.91] "m/s" Seat
 SG_ Azimuth : 263|24@0- (1e-05,0) [-80|80] "rad" Seat
 SG_ Width : 303|12@0+ (0.01,0) [0|40] "m" Seat
 SG_ Length : 384|16@1+ (0.01,0) [0|600] "m" Seat
 SG_ Class : 400|4@1+ (1,0) [0|15] "" Seat
 SG_ Timestamp : 447|48@0+ (1e-06,0) [0|0] "s" Seat
)";

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Row {
  const char* what;
  double frames_per_s;
};

// Runs `body` `frames` times and returns frames per second.
template <typename F>
double Rate(long frames, F&& body) {
  const auto t0 = Clock::now();
  for (long i = 0; i < frames; ++i) body(i);
  return static_cast<double>(frames) / Seconds(t0);
}

void Measure(const Message& m, long frames, std::vector<Row>& rows, double& sink) {
  // Values in each signal's range that change every frame (the encoder cannot be skipped).
  std::map<std::string, double> values;
  std::vector<double> plain;
  for (const Signal& s : m.signals) {
    const double v = s.minimum != s.maximum ? s.minimum + (s.maximum - s.minimum) * 0.37 : 123.456;
    values[s.name] = v;
    plain.push_back(v);
  }
  const Frame sample = EncodeMessage(m, values);

  // Baseline 1: the frame copied out and back (what a transport does with the payload).
  rows.push_back({"memcpy of the frame (baseline)", Rate(frames, [&](long i) {
                    Frame f;
                    std::memcpy(&f, &sample, sizeof f);
                    f.data[0] = static_cast<uint8_t>(i);
                    Frame g;
                    std::memcpy(&g, &f, sizeof g);
                    sink += g.data[0] + g.data[m.length - 1];
                  })});
  // Baseline 2: raw bits only: InsertRaw + ExtractRaw of every signal.
  rows.push_back({"InsertRaw + ExtractRaw, raw bits only (baseline)", Rate(frames, [&](long i) {
                    Frame f;
                    f.len = static_cast<uint8_t>(m.length);
                    for (const Signal& s : m.signals) InsertRaw(s, i, f.data.data(), f.len);
                    int64_t acc = 0;
                    for (const Signal& s : m.signals) acc += ExtractRaw(s, f.data.data(), f.len);
                    sink += static_cast<double>(acc);
                  })});
  // Per-signal codec with scaling, rounding and clamping, without names.
  rows.push_back({"EncodeSignal + DecodeSignal, by index", Rate(frames, [&](long i) {
                    Frame f;
                    f.len = static_cast<uint8_t>(m.length);
                    for (size_t k = 0; k < m.signals.size(); ++k) EncodeSignal(m.signals[k], plain[k] + (i & 7) * m.signals[k].factor, f);
                    double acc = 0;
                    for (const Signal& s : m.signals) acc += DecodeSignal(s, f);
                    sink += acc;
                  })});
  // The API: values by name in, values by name out.
  rows.push_back({"EncodeMessage + DecodeMessage, by name", Rate(frames, [&](long i) {
                    values.begin()->second = plain[0] + (i & 7);
                    const Frame f = EncodeMessage(m, values);
                    const auto out = DecodeMessage(m, f);
                    sink += out.begin()->second;
                  })});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"DBC codec frames per second: EncodeMessage + DecodeMessage against payload copy and raw bit baselines"};
  long frames = 1000000;
  app.add_option("--frames", frames, "Frames per measurement")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const Database db = ParseDbc(kBenchDbc, "can_codec_bench.dbc");
  double sink = 0;
  for (const Message& m : db.messages) {
    std::vector<Row> rows;
    Measure(m, frames, rows, sink);
    std::printf("%s: %u bytes, %zu signals%s, %ld frames per row, one core\n", m.name.c_str(), m.length, m.signals.size(),
                m.fd ? " (CAN FD)" : "", frames);
    for (const Row& r : rows) std::printf("  %-52s %12.0f frames/s  %8.1f ns/frame\n", r.what, r.frames_per_s, 1e9 / r.frames_per_s);
  }
  std::printf("(checksum %g)\n", sink);
  return 0;
}
