// The seat's sound (viewer/src/seat_sound.cpp, seat_audio.cpp; issue 37 item 4): the engine's dominant frequency
// follows rpm over a scripted run-up, in the core and in the file SDL's disk audio driver writes; clicks on
// the indicator lamp's edges; silence at volume 0; determinism; squeal from slip; the [node] sound keys.
#include "platoon/config/session.hpp"
#include "platoon/viewer/seat_audio.hpp"
#include "platoon/viewer/seat_sound.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

using namespace platoon;

namespace seat_sound_test_detail {

constexpr double kPi = 3.14159265358979323846;

// In-place iterative radix-2 FFT (size a power of two).
void Fft(std::vector<std::complex<double>>& a) {
  const size_t n = a.size();
  for (size_t i = 1, j = 0; i < n; ++i) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const std::complex<double> w(std::cos(-2 * kPi / static_cast<double>(len)), std::sin(-2 * kPi / static_cast<double>(len)));
    for (size_t i = 0; i < n; i += len) {
      std::complex<double> wk(1, 0);
      for (size_t k = 0; k < len / 2; ++k) {
        const auto u = a[i + k], v = a[i + k + len / 2] * wk;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
        wk *= w;
      }
    }
  }
}

// The strongest frequency of x[from, from + n) above `min_hz`, in Hz: Hann window, zero-padded to 2^16
// points (0.73 Hz bins at 48 kHz), parabolic interpolation of the log magnitude around the peak.
double DominantHz(const std::vector<float>& x, size_t from, size_t n, double fs, double min_hz) {
  const size_t size = 1 << 16;
  std::vector<std::complex<double>> a(size);
  for (size_t i = 0; i < n && from + i < x.size(); ++i)
    a[i] = x[from + i] * (0.5 - 0.5 * std::cos(2 * kPi * static_cast<double>(i) / static_cast<double>(n - 1)));
  Fft(a);
  const double bin_hz = fs / static_cast<double>(size);
  size_t best = static_cast<size_t>(std::ceil(min_hz / bin_hz));
  for (size_t k = best; k < size / 2 - 1; ++k)
    if (std::abs(a[k]) > std::abs(a[best])) best = k;
  const double l = std::log(std::abs(a[best - 1]) + 1e-30), c = std::log(std::abs(a[best]) + 1e-30),
               r = std::log(std::abs(a[best + 1]) + 1e-30);
  const double d = l - 2 * c + r;
  return (static_cast<double>(best) + (d != 0 ? 0.5 * (l - r) / d : 0.0)) * bin_hz;
}

// Short-time analysis: 200 ms windows every 100 ms whose centres lie in [t_from_s, t_to_s]; in each, the
// dominant frequency against the firing frequency of rpm_at(centre) (rpm / 60 * cylinders / 2, computed
// here). Returns the worst relative error and where it was.
struct Follow {
  double worst = 0, worst_t_s = 0, worst_hz = 0, expected_hz = 0;
  int windows = 0;
};
Follow FollowRpm(const std::vector<float>& x, double fs, int cylinders, const std::function<double(double)>& rpm_at,
                 double t_from_s, double t_to_s) {
  Follow f;
  const size_t n = static_cast<size_t>(0.2 * fs);
  for (double t = t_from_s; t <= t_to_s + 1e-9; t += 0.1) {
    const size_t from = static_cast<size_t>((t - 0.1) * fs);
    if (from + n > x.size()) break;
    const double expected = rpm_at(t) * cylinders / 120.0;
    const double got = DominantHz(x, from, n, fs, 15.0);
    const double err = std::abs(got - expected) / expected;
    ++f.windows;
    if (err >= f.worst) f = Follow{err, t, got, expected, f.windows};
  }
  return f;
}

// The scripted run-up: rpm from `rpm0` to `rpm1` linearly over `span_s`, full load, speed rising with it.
viewer::SoundState RunUp(double t_s, double rpm0, double rpm1, double span_s) {
  viewer::SoundState s;
  const double u = std::clamp(t_s / span_s, 0.0, 1.0);
  s.rpm = rpm0 + (rpm1 - rpm0) * u;
  s.load = 1.0;
  s.speed_mps = 40.0 * u;
  return s;
}

std::vector<float> RenderScript(const viewer::SeatSoundDef& def, double span_s,
                                const std::function<viewer::SoundState(double)>& state_at, size_t block = 480, size_t split = 1) {
  viewer::SeatSound sound(def);
  std::vector<float> out;
  const size_t total = static_cast<size_t>(span_s * def.sample_rate_hz);
  out.reserve(total);
  while (out.size() < total) {
    sound.Set(state_at(static_cast<double>(out.size()) / def.sample_rate_hz));
    // One state per block, its samples asked for in `split` calls (the first takes the remainder).
    const size_t n = std::min(block, total - out.size());
    for (size_t part = 0; part < split; ++part) {
      const auto b = sound.Render(part == 0 ? n - (split - 1) * (n / split) : n / split);
      out.insert(out.end(), b.begin(), b.end());
    }
  }
  return out;
}

double Rms(const std::vector<float>& x, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += static_cast<double>(x[i]) * x[i];
  return std::sqrt(s / static_cast<double>(std::max<size_t>(1, to - from)));
}

std::string SoundConfigError(const std::string& extra) {
  try {
    (void)config::LoadSessionText("[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\n" + extra, "sound.toml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace seat_sound_test_detail

TEST_CASE("seat sound: the dominant frequency follows the firing frequency within 5 percent over a 900 to 5500 rpm run-up") {
  using namespace seat_sound_test_detail;
  for (const int cylinders : {4, 6}) {
    viewer::SeatSoundDef def = viewer::DefaultSeatSoundDef();
    def.engine_cylinders = cylinders;
    const double span_s = 8.0;
    // States at 100 Hz (blocks of 10 ms), as a seat hands them over.
    const auto x = RenderScript(def, span_s, [&](double t) { return RunUp(t, 900, 5500, span_s); });
    const Follow f = FollowRpm(x, def.sample_rate_hz, cylinders, [&](double t) { return RunUp(t, 900, 5500, span_s).rpm; }, 0.1,
                               span_s - 0.1);
    MESSAGE(cylinders << " cylinders: " << f.windows << " windows, worst " << f.worst * 100 << " % at t " << f.worst_t_s
                      << " s (" << f.worst_hz << " Hz, expected " << f.expected_hz << " Hz)");
    CHECK(f.windows >= 75);
    CHECK(f.worst < 0.05);
  }
}

TEST_CASE("seat sound: each indicator lamp edge starts a click at its first sample") {
  viewer::SeatSoundDef def = viewer::DefaultSeatSoundDef();
  def.engine = def.tyres = def.wind = 0;  // the click alone
  viewer::SeatSound sound(def);
  const size_t block = 480;
  const std::vector<size_t> edge_blocks = {3, 10, 25, 26};
  std::vector<float> x;
  bool lamp = false;
  for (size_t b = 0; b < 40; ++b) {
    if (std::find(edge_blocks.begin(), edge_blocks.end(), b) != edge_blocks.end()) lamp = !lamp;
    viewer::SoundState s;
    s.indicator_lamp = lamp;
    s.speed_mps = 20;  // the layers that are off stay silent whatever the car does
    sound.Set(s);
    const auto out = sound.Render(block);
    x.insert(x.end(), out.begin(), out.end());
  }
  CHECK(sound.Clicks() == edge_blocks.size());
  // Bursts: runs of non-zero samples; each starts exactly at an edge's first sample.
  std::vector<size_t> starts;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] != 0.0f && (i == 0 || x[i - 1] == 0.0f)) starts.push_back(i);
  std::vector<size_t> expected;
  for (size_t b : edge_blocks) expected.push_back(b * block);
  CHECK(starts == expected);
  for (size_t s : starts) {
    CHECK(std::abs(x[s]) > 0.05 * def.volume);  // a click starts at its loudest, not faded in
    MESSAGE("click at sample " << s << ": first sample " << x[s]);
  }
  // On (a rising edge) and off clicks differ.
  CHECK(x[edge_blocks[0] * block + 5] != x[edge_blocks[1] * block + 5]);
}

TEST_CASE("seat sound: volume 0 renders silence whatever the car does") {
  viewer::SeatSoundDef def = viewer::DefaultSeatSoundDef();
  def.volume = 0;
  const auto x = seat_sound_test_detail::RenderScript(def, 1.0, [](double t) {
    viewer::SoundState s = seat_sound_test_detail::RunUp(t, 900, 7000, 1.0);
    s.slip_front_rad = 0.3;
    s.indicator_lamp = std::fmod(t, 0.2) < 0.1;
    return s;
  });
  CHECK(std::all_of(x.begin(), x.end(), [](float v) { return v == 0.0f; }));
  // The same car at the default volume is not silent.
  const auto loud = seat_sound_test_detail::RenderScript(viewer::DefaultSeatSoundDef(), 1.0, [](double t) {
    return seat_sound_test_detail::RunUp(t, 900, 7000, 1.0);
  });
  CHECK(seat_sound_test_detail::Rms(loud, 0, loud.size()) > 0.01);
}

TEST_CASE("seat sound: two renders of the same states are equal sample for sample and another seed differs") {
  using namespace seat_sound_test_detail;
  auto script = [](double t) {
    viewer::SoundState s = RunUp(t, 900, 5500, 2.0);
    s.slip_rear_rad = 0.1;
    s.indicator_lamp = std::fmod(t, 0.6) < 0.3;
    return s;
  };
  const viewer::SeatSoundDef def = viewer::DefaultSeatSoundDef();
  const auto a = RenderScript(def, 2.0, script), b = RenderScript(def, 2.0, script);
  CHECK(a == b);
  viewer::SeatSoundDef other = def;
  other.seed = def.seed + 1;
  CHECK(RenderScript(other, 2.0, script) != a);
  // How the samples are asked for does not change them (a device asks for what it likes): each block in 3 calls.
  CHECK(RenderScript(def, 2.0, script, 480, 3) == a);
}

TEST_CASE("seat sound: squeal grows with slip beyond the threshold at its tone") {
  using namespace seat_sound_test_detail;
  viewer::SeatSoundDef def = viewer::DefaultSeatSoundDef();
  def.engine = def.wind = 0;
  CHECK(viewer::SquealLevel(def, 0.5 * def.squeal_threshold_rad) == 0.0);
  CHECK(viewer::SquealLevel(def, -def.squeal_full_rad) == 1.0);
  auto at_slip = [&](double slip) {
    return RenderScript(def, 0.5, [&](double) {
      viewer::SoundState s;
      s.speed_mps = 15;
      s.slip_front_rad = slip;
      return s;
    });
  };
  const auto below = at_slip(0.5 * def.squeal_threshold_rad), full = at_slip(-1.2 * def.squeal_full_rad);
  // At full squeal its tone dominates (the wobble is +-3 %), and the sound is much louder than rolling alone.
  const double hz = DominantHz(full, 4800, 9600, def.sample_rate_hz, 15.0);
  MESSAGE("squeal dominant " << hz << " Hz, rms below threshold " << Rms(below, 4800, 24000) << ", at full "
                             << Rms(full, 4800, 24000));
  CHECK(std::abs(hz - def.squeal_hz) / def.squeal_hz < 0.05);
  CHECK(Rms(full, 4800, 24000) > 3 * Rms(below, 4800, 24000));
}

TEST_CASE("seat sound: a jump of the state ramps without a step in the samples") {
  viewer::SeatSoundDef def = viewer::DefaultSeatSoundDef();
  def.tyres = def.wind = 0;
  viewer::SeatSound sound(def);
  viewer::SoundState s;
  s.rpm = 800;
  sound.Set(s);
  auto x = sound.Render(4800);
  double before = 0;
  for (size_t i = 1; i < x.size(); ++i) before = std::max(before, std::abs(static_cast<double>(x[i] - x[i - 1])));
  s.rpm = 6500;
  s.load = 1;
  sound.Set(s);
  const auto y = sound.Render(4800);
  // The largest sample-to-sample change right after the jump stays that of the steady sound at the new
  // state's peak slope (amplitude x 2 pi f / fs, here bounded by the full-load steady render), not a step.
  viewer::SeatSound steady(def);
  steady.Set(s);
  (void)steady.Render(9600);
  const auto z = steady.Render(4800);
  double after = std::abs(static_cast<double>(y[0] - x.back())), steady_max = 0;
  for (size_t i = 1; i < y.size(); ++i) after = std::max(after, std::abs(static_cast<double>(y[i] - y[i - 1])));
  for (size_t i = 1; i < z.size(); ++i) steady_max = std::max(steady_max, std::abs(static_cast<double>(z[i] - z[i - 1])));
  MESSAGE("largest step: idle " << before << ", after the jump " << after << ", steady at 6500 rpm " << steady_max);
  CHECK(after <= 1.2 * steady_max);
}

TEST_CASE("seat sound: invalid levels are refused naming the field") {
  viewer::SeatSoundDef def = viewer::DefaultSeatSoundDef();
  CHECK(viewer::ValidateSeatSoundDef(def).empty());
  def.wind = 1.5;
  CHECK(viewer::ValidateSeatSoundDef(def).find("wind") == 0);
  def = viewer::DefaultSeatSoundDef();
  def.engine_cylinders = 0;
  CHECK(viewer::ValidateSeatSoundDef(def).find("engine_cylinders") == 0);
}

TEST_CASE("seat sound config: the node keys set the levels and bad values name the key") {
  using namespace seat_sound_test_detail;
  const config::SessionDef plain =
      config::LoadSessionText("[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\n", "sound.toml");
  CHECK(plain.nodes[0].sound);
  const config::SessionDef s = config::LoadSessionText(
      "[[node]]\nname = \"seat\"\nrole = \"driver\"\nheadless = true\nsound = false\nsound_volume = 0.25\nsound_engine = 0.5\n"
      "sound_tyres = 0.75\nsound_wind = 0\nsound_indicator = 1\nengine_cylinders = 6\n",
      "sound.toml");
  const config::NodeDef& n = s.nodes[0];
  CHECK_FALSE(n.sound);
  CHECK(n.sound_volume == 0.25);
  CHECK(n.sound_engine == 0.5);
  CHECK(n.sound_tyres == 0.75);
  CHECK(n.sound_wind == 0.0);
  CHECK(n.sound_indicator == 1.0);
  CHECK(n.engine_cylinders == 6);
  const std::string volume = SoundConfigError("sound_volume = 1.5\n");
  MESSAGE(volume);
  CHECK(volume.find("sound.toml:5") != std::string::npos);
  CHECK(volume.find("sound_volume") != std::string::npos);
  CHECK(SoundConfigError("engine_cylinders = 0\n").find("engine_cylinders") != std::string::npos);
  const std::string wrong_role = [] {
    try {
      (void)config::LoadSessionText("[[node]]\nname = \"t\"\nrole = \"traffic\"\nsound_wind = 0.5\n", "sound.toml");
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  CHECK(wrong_role.find("sound_wind") != std::string::npos);
}

// The acceptance through SDL's disk audio driver: the shell plays a scripted run-up in real time (the state
// set from the device's own playing position, as the seat's frames would), and the file SDL wrote is read
// back and analysed like the core's samples.
TEST_CASE("seat sound: the SDL disk audio driver file follows rpm within 5 percent over a scripted run-up") {
  using namespace seat_sound_test_detail;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("platoon_seat_sound_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "seat.raw").string();
  const char* old_driver = std::getenv("SDL_AUDIODRIVER");
  const std::string saved = old_driver ? old_driver : "";
  setenv("SDL_AUDIODRIVER", "disk", 1);
  setenv("SDL_DISKAUDIOFILE", file.c_str(), 1);

  const double span_s = 3.0, rpm0 = 1200, rpm1 = 4800;
  viewer::SeatAudioDef def = viewer::DefaultSeatAudioDef();
  size_t played = 0;
  double cost_ms_per_s = 0, wall_s = 0;
  {
    std::string error;
    auto audio = viewer::SeatAudio::Open(def, &error);
    REQUIRE_MESSAGE(audio, error);
    MESSAGE("device " << audio->DeviceName());
    const double fs = audio->SampleRateHz();
    const auto t0 = std::chrono::steady_clock::now();
    // About every 2 ms: the state of the moment the device picks it up, the start of its next buffer.
    while (audio->SamplesRendered() < static_cast<uint64_t>((span_s + 0.3) * fs)) {
      const double t = static_cast<double>(audio->SamplesRendered() + static_cast<uint64_t>(def.buffer_frames)) / fs;
      audio->Set(RunUp(t, rpm0, rpm1, span_s));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20)) break;  // a stalled device: the checks below fail
    }
    // Closed first: a buffer the device was rendering meanwhile is counted and in the file.
    audio->Close();
    played = audio->SamplesRendered();
    cost_ms_per_s = audio->RenderCostMsPerS();
    wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (old_driver) setenv("SDL_AUDIODRIVER", saved.c_str(), 1);
  else unsetenv("SDL_AUDIODRIVER");
  unsetenv("SDL_DISKAUDIOFILE");

  // The file: raw 32-bit floats, mono, as opened (no header), every sample finite and in -1..1.
  std::ifstream in(file, std::ios::binary);
  REQUIRE(in);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(bytes.size() % sizeof(float) == 0);
  std::vector<float> x(bytes.size() / sizeof(float));
  std::memcpy(x.data(), bytes.data(), x.size() * sizeof(float));
  MESSAGE(x.size() << " samples in the file, " << played << " rendered, " << wall_s << " s wall, synthesis " << cost_ms_per_s
                   << " ms per s of audio");
  CHECK(x.size() + 2 * def.buffer_frames >= played);
  // SDL may write one buffer of silence before the device is unpaused at open: beyond what was rendered the
  // file holds at most that, and it is silent.
  const size_t unrendered = x.size() > played ? x.size() - played : 0;
  CHECK(unrendered <= def.buffer_frames);
  CHECK(std::all_of(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(std::min(unrendered, x.size())),
                    [](float v) { return v == 0.0f; }));
  CHECK(std::all_of(x.begin(), x.end(), [](float v) { return std::isfinite(v) && std::abs(v) <= 1.0f; }));
  const Follow f = FollowRpm(x, def.sound.sample_rate_hz, def.sound.engine_cylinders,
                             [&](double t) { return RunUp(t, rpm0, rpm1, span_s).rpm; }, 0.2, span_s);
  MESSAGE("disk driver: " << f.windows << " windows, worst " << f.worst * 100 << " % at t " << f.worst_t_s << " s ("
                          << f.worst_hz << " Hz, expected " << f.expected_hz << " Hz)");
  CHECK(f.windows >= 25);
  CHECK(f.worst < 0.05);
  std::filesystem::remove_all(dir);
}
