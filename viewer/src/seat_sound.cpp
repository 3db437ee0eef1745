#include "platoon/viewer/seat_sound.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

namespace platoon::viewer {
namespace {

constexpr double kTwoPi = 6.283185307179586;
// Mix weights of the layers at full level, so that all of them at once stay about within -1..1.
constexpr double kEngineMix = 0.32, kRollMix = 0.2, kSquealMix = 0.25, kWindMix = 0.25, kClickMix = 0.45;
// Click: a decaying tone, higher for the lamp going on than off (a relay's tick and tock).
constexpr double kClickOnHz = 2600.0, kClickOffHz = 1900.0, kClickDecayS = 0.0012, kClickLengthS = 0.008;
constexpr double kSquealWobbleHz = 7.0, kSquealWobbleDepth = 0.03;

// Coefficient of a one-pole low-pass y += a (x - y) with corner `hz` at `fs`.
double OnePole(double hz, double fs) { return 1.0 - std::exp(-kTwoPi * std::min(hz, 0.45 * fs) / fs); }

// `v` if finite, else `fallback`; then clamped.
double Sane(double v, double fallback, double lo, double hi) { return std::clamp(std::isfinite(v) ? v : fallback, lo, hi); }

}  // namespace

std::string ValidateSeatSoundDef(const SeatSoundDef& d) {
  auto unit = [](const char* name, double v) -> std::string {
    return std::isfinite(v) && v >= 0 && v <= 1 ? "" : fmt::format("{}: expected 0..1, got {:g}", name, v);
  };
  for (const auto& [name, v] : {std::pair{"volume", d.volume}, {"engine", d.engine}, {"tyres", d.tyres}, {"wind", d.wind},
                                {"indicator", d.indicator}})
    if (auto e = unit(name, v); !e.empty()) return e;
  if (!(d.sample_rate_hz >= 8000 && d.sample_rate_hz <= 192000))
    return fmt::format("sample_rate_hz: expected 8000..192000, got {:g}", d.sample_rate_hz);
  if (d.engine_cylinders < 1 || d.engine_cylinders > 16)
    return fmt::format("engine_cylinders: expected 1..16, got {}", d.engine_cylinders);
  if (!(d.squeal_threshold_rad >= 0 && d.squeal_threshold_rad < d.squeal_full_rad && d.squeal_full_rad <= 1.5))
    return fmt::format("squeal_threshold_rad, squeal_full_rad: expected 0 <= threshold < full <= 1.5, got {:g}, {:g}",
                       d.squeal_threshold_rad, d.squeal_full_rad);
  if (!(d.squeal_hz >= 100 && d.squeal_hz <= 0.4 * d.sample_rate_hz))
    return fmt::format("squeal_hz: expected 100..{:g} (0.4 of the sample rate), got {:g}", 0.4 * d.sample_rate_hz, d.squeal_hz);
  if (!(d.wind_ref_mps > 0 && d.rolling_ref_mps > 0))
    return fmt::format("wind_ref_mps, rolling_ref_mps: expected > 0, got {:g}, {:g}", d.wind_ref_mps, d.rolling_ref_mps);
  if (!(d.smoothing_s >= 0 && d.smoothing_s <= 1)) return fmt::format("smoothing_s: expected 0..1, got {:g}", d.smoothing_s);
  return "";
}

double EngineFiringHz(double rpm, int cylinders) { return rpm / 60.0 * cylinders / 2.0; }

double SquealLevel(const SeatSoundDef& def, double slip_rad) {
  const double x = std::clamp((std::abs(slip_rad) - def.squeal_threshold_rad) / (def.squeal_full_rad - def.squeal_threshold_rad),
                              0.0, 1.0);
  return x * x * (3.0 - 2.0 * x);
}

void SeatSound::Ramp::To(double target, int64_t samples) {
  left = std::max<int64_t>(samples, 1);
  step = (target - value) / static_cast<double>(left);
}

double SeatSound::Ramp::Next() {
  if (left > 0) {
    value += step;
    --left;
  }
  return value;
}

SeatSound::SeatSound(const SeatSoundDef& def) : def_(def), rng_(def.seed | 1) {
  assert(ValidateSeatSoundDef(def).empty());
  ramp_samples_ = std::max<int64_t>(1, std::llround(def_.smoothing_s * def_.sample_rate_hz));
  const SoundState rest;
  firing_hz_.value = EngineFiringHz(rest.rpm, def_.engine_cylinders);
}

void SeatSound::Set(const SoundState& s) {
  // Each parameter ramps from where it is now to its new value over smoothing_s.
  firing_hz_.To(EngineFiringHz(Sane(s.rpm, 0, 0, 30000), def_.engine_cylinders), ramp_samples_);
  load_.To(Sane(s.load, 0, 0, 1), ramp_samples_);
  speed_mps_.To(Sane(std::abs(s.speed_mps), 0, 0, 150), ramp_samples_);
  const double slip = std::max(std::abs(Sane(s.slip_front_rad, 0, -2, 2)), std::abs(Sane(s.slip_rear_rad, 0, -2, 2)));
  squeal_.To(SquealLevel(def_, slip), ramp_samples_);
  // A lamp edge: the relay clicks at the next sample.
  if (s.indicator_lamp != lamp_) {
    lamp_ = s.indicator_lamp;
    click_at_ = 0;
    click_on_ = lamp_;
    ++clicks_;
  }
}

double SeatSound::Noise() {
  // xorshift64*: 53 high bits as a uniform number in -1..1.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  const uint64_t r = rng_ * 0x2545F4914F6CDD1Dull;
  return static_cast<double>(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

void SeatSound::Render(float* out, size_t frames) {
  const double fs = def_.sample_rate_hz;
  const double rough_a = OnePole(800.0, fs), wind_hp_a = OnePole(120.0, fs);
  const int64_t click_len = std::llround(kClickLengthS * fs);
  for (size_t i = 0; i < frames; ++i) {
    const double f0 = firing_hz_.Next(), load = load_.Next(), v = speed_mps_.Next(), squeal = squeal_.Next();
    double y = 0;
    // Engine: the firing frequency and harmonics 2..4 (brighter with load), plus combustion roughness.
    if (def_.engine > 0) {
      engine_phase_ += f0 / fs;
      engine_phase_ -= std::floor(engine_phase_);
      const double p = kTwoPi * engine_phase_;
      const double tone = std::sin(p) + (0.22 + 0.28 * load) * std::sin(2 * p) + (0.1 + 0.18 * load) * std::sin(3 * p) +
                          (0.05 + 0.1 * load) * std::sin(4 * p);
      rough_lp_ += rough_a * (Noise() - rough_lp_);
      const double rough = (0.15 + 0.25 * load) * rough_lp_ * (0.5 + 0.5 * std::sin(p));
      const double level = f0 > 0 ? 0.45 + 0.55 * load : 0.0;
      y += kEngineMix * def_.engine * level * (tone + rough);
    }
    // Tyres: rolling noise (its corner rises with speed) and the squeal tone with a slow wobble.
    if (def_.tyres > 0) {
      roll_lp_ += OnePole(150.0 + 15.0 * v, fs) * (Noise() - roll_lp_);
      const double roll_level = std::min(1.0, v / def_.rolling_ref_mps);
      wobble_phase_ += kSquealWobbleHz / fs;
      wobble_phase_ -= std::floor(wobble_phase_);
      squeal_phase_ += def_.squeal_hz * (1.0 + kSquealWobbleDepth * std::sin(kTwoPi * wobble_phase_)) / fs;
      squeal_phase_ -= std::floor(squeal_phase_);
      const double q = kTwoPi * squeal_phase_;
      y += def_.tyres * (kRollMix * roll_level * 3.0 * roll_lp_ + kSquealMix * squeal * (std::sin(q) + 0.3 * std::sin(2 * q)));
    }
    // Wind: noise band-passed between ~120 Hz and a corner rising with speed, level ~ v^2.
    if (def_.wind > 0) {
      const double a = OnePole(500.0 + 20.0 * v, fs);
      wind_lp1_ += a * (Noise() - wind_lp1_);
      wind_lp2_ += a * (wind_lp1_ - wind_lp2_);
      wind_hp_ += wind_hp_a * (wind_lp2_ - wind_hp_);
      const double level = std::min(1.0, (v / def_.wind_ref_mps) * (v / def_.wind_ref_mps));
      y += kWindMix * def_.wind * level * 4.0 * (wind_lp2_ - wind_hp_);
    }
    // Indicator: the relay's click, a decaying tone starting at full level.
    if (click_at_ >= 0) {
      const double t = static_cast<double>(click_at_) / fs;
      y += kClickMix * def_.indicator * std::exp(-t / kClickDecayS) * std::cos(kTwoPi * (click_on_ ? kClickOnHz : kClickOffHz) * t);
      if (++click_at_ >= click_len) click_at_ = -1;
    }
    out[i] = static_cast<float>(std::clamp(def_.volume * y, -1.0, 1.0));
  }
  samples_ += frames;
}

std::vector<float> SeatSound::Render(size_t frames) {
  std::vector<float> out(frames);
  Render(out.data(), frames);
  return out;
}

}  // namespace platoon::viewer
