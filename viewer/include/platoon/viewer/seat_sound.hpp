#pragma once
/// The seat's sound (issue 37, item 4): a pure synthesis core that turns what the car does (engine speed and
/// load, speed, tyre slip, the indicator lamp) into mono samples. It reads no clock and opens no device: the
/// caller hands it the state and asks for N samples at its sample rate; the same states in the same blocks
/// give the same samples (seeded noise). SeatAudio (seat_audio.hpp) plays it through SDL audio.
///
/// Layers (docs/INPUTS.md, "Sound"):
///   engine     a four-stroke engine fires cylinders/2 times a revolution: f0 = rpm / 60 * cylinders / 2 Hz,
///              the fundamental with harmonics 2..4 whose share grows with load, and a little combustion
///              roughness (noise amplitude-modulated at f0);
///   tyres      rolling noise (low-passed noise, level ~ speed) and squeal, a ~1 kHz tone with a slow
///              wobble, growing with the larger axle slip angle beyond squeal_threshold_rad;
///   wind       band-limited noise, level ~ speed^2;
///   indicator  a short decaying click on every on/off edge of the indicator lamp (the relay).
/// Parameters move linearly to each new state over smoothing_s, so a 60 Hz update gives no clicks.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace platoon::viewer {

/// Levels and constants of the seat's sound; validated once (ValidateSeatSoundDef).
struct SeatSoundDef {
  double sample_rate_hz = 48000.0;     ///< Output sample rate, in Hz. Typical 44100 or 48000.
  double volume = 0.5;                 ///< Master level, 0..1 (0: silence).
  double engine = 1.0;                 ///< Engine layer level, 0..1.
  double tyres = 1.0;                  ///< Tyre layer level (rolling and squeal), 0..1.
  double wind = 1.0;                   ///< Wind layer level, 0..1.
  double indicator = 1.0;              ///< Indicator click level, 0..1.
  int engine_cylinders = 4;            ///< Cylinders of the four-stroke engine, 1..16 (sets the firing frequency).
  double squeal_threshold_rad = 0.06;  ///< Slip angle where the tyres start to squeal, in rad. Typical 0.05..0.08.
  double squeal_full_rad = 0.15;       ///< Slip angle of full squeal, in rad (> threshold). Typical 0.12..0.2.
  double squeal_hz = 1000.0;           ///< Squeal tone, in Hz. Typical 800..1200.
  double wind_ref_mps = 40.0;          ///< Speed where the wind layer reaches full level (level ~ (v / this)^2), in m/s.
  double rolling_ref_mps = 30.0;       ///< Speed where rolling noise reaches full level (level ~ v / this), in m/s.
  double smoothing_s = 0.02;           ///< Time a new state's parameters take to be reached (linear ramp), in s.
  uint64_t seed = 0x5eed5011d;         ///< Seed of the noise generator (same seed, same samples).
};

/// The default sound: 48 kHz, volume 0.5, every layer at 1, a four-cylinder engine.
inline SeatSoundDef DefaultSeatSoundDef() { return SeatSoundDef{}; }

/// Checks a definition; "" when valid, else a message naming the field and its value ("volume: expected 0..1, got 2").
std::string ValidateSeatSoundDef(const SeatSoundDef& def);

/// What the car does now, as the sound hears it (the seat hands one over every frame).
struct SoundState {
  double rpm = 800.0;               ///< Engine speed, in 1/min. Typical 800..7000.
  double load = 0.0;                ///< Engine load (accelerator), 0..1.
  double speed_mps = 0.0;           ///< Speed over ground, in m/s (sign ignored).
  double slip_front_rad = 0.0;      ///< Front axle slip angle from the tyre model, in rad (sign ignored).
  double slip_rear_rad = 0.0;       ///< Rear axle slip angle from the tyre model, in rad (sign ignored).
  bool indicator_lamp = false;      ///< The indicator lamp is lit now (either side): each change clicks.
};

/// Firing frequency of a four-stroke engine with `cylinders` at `rpm`, in Hz: rpm / 60 * cylinders / 2.
double EngineFiringHz(double rpm, int cylinders);

/// Squeal level of a slip angle `slip_rad` (sign ignored), 0..1: 0 up to squeal_threshold_rad, 1 from
/// squeal_full_rad, smooth (cubic) in between.
double SquealLevel(const SeatSoundDef& def, double slip_rad);

/// The synthesis core: Set the state, Render samples. Not thread-safe (the audio shell serialises it).
class SeatSound {
 public:
  /// A core at rest (idle engine, standing car, lamp off). Asserts a valid `def`.
  explicit SeatSound(const SeatSoundDef& def);

  /// The state the sound moves to over the next smoothing_s of rendered samples. A lamp edge clicks
  /// at the next rendered sample.
  void Set(const SoundState& state);

  /// Renders `frames` mono samples in -1..1 into `out`, continuing from the last call.
  void Render(float* out, size_t frames);
  /// Renders `frames` samples into a new vector.
  std::vector<float> Render(size_t frames);

  /// Samples rendered so far.
  uint64_t SamplesRendered() const { return samples_; }
  /// Lamp edges (clicks started) so far.
  uint64_t Clicks() const { return clicks_; }
  /// The definition.
  const SeatSoundDef& Def() const { return def_; }

 private:
  // Smoothed parameters: the value now, its step per sample and the samples until the target.
  struct Ramp {
    double value = 0, step = 0;
    int64_t left = 0;
    void To(double target, int64_t samples);
    double Next();
  };
  double Noise();  // uniform -1..1 from the seeded generator

  SeatSoundDef def_;
  int64_t ramp_samples_ = 1;
  Ramp firing_hz_, load_, speed_mps_, squeal_;
  bool lamp_ = false;
  // Oscillator phases (0..1 turns), filter states and the click in progress.
  double engine_phase_ = 0, squeal_phase_ = 0, wobble_phase_ = 0;
  double roll_lp_ = 0, wind_lp1_ = 0, wind_lp2_ = 0, wind_hp_ = 0, rough_lp_ = 0;
  int64_t click_at_ = -1;   // samples since the click started; -1: none
  bool click_on_ = false;   // the click of an on edge (higher) or an off edge (lower)
  uint64_t rng_ = 0, samples_ = 0, clicks_ = 0;
};

}  // namespace platoon::viewer
