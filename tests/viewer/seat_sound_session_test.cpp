// The seat's sound in a real session (node/src/driver_seat.cpp -> viewer::SeatAudio): `platoon run` of one
// scripted driver seat with a window under xvfb-run, SDL's disk audio driver writing what the seat plays.
// The car stands braked, then drives off at 0.8 throttle: the file's engine note starts at the idle firing
// frequency and rises well above it.
#include "platoon/viewer/cockpit.hpp"
#include "../support/session_fixture.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace platoon;

namespace seat_sound_session_test_detail {

// Strongest frequency of x[from, from + n) between 15 and 400 Hz on a 0.5 Hz grid, in Hz (Hann window,
// Goertzel's recurrence per frequency): a few windows only, so no FFT is needed here.
double StrongestHz(const std::vector<float>& x, size_t from, size_t n, double fs) {
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i)
    w[i] = x[from + i] * (0.5 - 0.5 * std::cos(2 * M_PI * static_cast<double>(i) / static_cast<double>(n - 1)));
  double best_hz = 0, best = -1;
  for (double f = 15; f <= 400; f += 0.5) {
    const double c = 2 * std::cos(2 * M_PI * f / fs);
    double s1 = 0, s2 = 0;
    for (double v : w) {
      const double s0 = v + c * s1 - s2;
      s2 = s1;
      s1 = s0;
    }
    const double power = s1 * s1 + s2 * s2 - c * s1 * s2;
    if (power > best) best = power, best_hz = f;
  }
  return best_hz;
}

}  // namespace seat_sound_session_test_detail

TEST_CASE("seat sound: a driver seat with a window plays its engine through the SDL disk driver from idle upwards") {
  using namespace seat_sound_session_test_detail;
  const std::string xvfb = "/usr/bin/xvfb-run";
  if (!std::filesystem::exists(xvfb)) {
    MESSAGE("xvfb-run not installed (package xvfb): skipped");
    return;
  }
  testing::TempDir dir;
  const std::string raw = dir.Path() + "/seat.raw";
  dir.Write("drive.csv", "time_s, steer, throttle, brake\n0.0, 0, 0, 1\n2.0, 0, 0, 1\n2.1, 0, 0.8, 0\n60, 0, 0.8, 0\n");
  const auto p = testing::FreePorts(4);
  const std::string session = dir.Write(
      "sound.toml", "[session]\nname = \"seat_sound\"\nserver_host = \"127.0.0.1\"\n[server]\nbind_address = \"127.0.0.1\"\n"
                    "control_port = " + std::to_string(p[0]) + "\ntime_port = " + std::to_string(p[1]) +
                    "\nworld_port = " + std::to_string(p[2]) + "\nstate_port = " + std::to_string(p[3]) +
                    "\n[road]\ngenerate_length_m = 2000\nseed = 1\nlanes = 2\n"
                    "[[node]]\nname = \"seat\"\nrole = \"driver\"\ninput = \"scripted:drive.csv\"\nstart_s_m = 40\n"
                    "view_width_px = 160\nview_height_px = 90\nview_fps = 30\nmirrors = false\nengine_cylinders = 4\n");
  // The children inherit the driver choice; this process plays no sound itself.
  setenv("SDL_AUDIODRIVER", "disk", 1);
  setenv("SDL_DISKAUDIOFILE", raw.c_str(), 1);
  process::Child run = process::Child::Spawn(
      {xvfb, "-a", "-s", "-screen 0 640x480x24", testing::BinDir() + "/platoon", "run", "--duration", "9", session});
  unsetenv("SDL_AUDIODRIVER");
  unsetenv("SDL_DISKAUDIOFILE");
  const auto status = testing::RunToExit(run, std::chrono::seconds(60));
  REQUIRE(status.has_value());
  CHECK(*status == 0);
  const auto& lines = run.Lines();
  testing::CheckNoErrorLines(lines);
  if (!testing::AnyLineContains(lines, "seat sound: disk: default at 48000 Hz")) {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    FAIL_CHECK("the seat did not open the disk audio driver; its output:\n" << all);
  }

  std::ifstream in(raw, std::ios::binary);
  REQUIRE(in);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> x(bytes.size() / sizeof(float));
  std::memcpy(x.data(), bytes.data(), x.size() * sizeof(float));
  const double fs = 48000;
  MESSAGE((static_cast<double>(x.size()) / fs) << " s of sound in the file");
  REQUIRE(x.size() > static_cast<size_t>(5 * fs));
  // Idle: the car stands braked at the start (the session joins, then 2 s of script).
  const double idle_hz = viewer::AutomaticGearDisplay(0, 0).rpm * 4 / 120.0;
  const double start_hz = StrongestHz(x, static_cast<size_t>(0.5 * fs), static_cast<size_t>(0.2 * fs), fs);
  // Then the engine note over the rest of the file, every 0.5 s.
  double top_hz = 0;
  for (size_t from = static_cast<size_t>(1.0 * fs); from + static_cast<size_t>(0.2 * fs) <= x.size(); from += static_cast<size_t>(0.5 * fs))
    top_hz = std::max(top_hz, StrongestHz(x, from, static_cast<size_t>(0.2 * fs), fs));
  MESSAGE("idle " << start_hz << " Hz (expected " << idle_hz << " Hz), highest engine note " << top_hz << " Hz");
  CHECK(std::abs(start_hz - idle_hz) / idle_hz < 0.05);
  CHECK(top_hz > 1.5 * idle_hz);
}
