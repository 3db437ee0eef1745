#pragma once
/// The seat's sound through SDL audio: a thin shell around SeatSound (seat_sound.hpp). It opens an audio
/// device (mono float at the definition's sample rate, a small buffer for low latency) whose callback
/// renders the core; any thread hands it the newest SoundState. SDL stays inside viewer/src.
///
/// Tests and machines without a sound card use SDL's disk driver: with SDL_AUDIODRIVER=disk and
/// SDL_DISKAUDIOFILE=<path> in the environment before Open, SDL 2.26 writes the raw samples it plays
/// (32-bit float, native byte order, mono) to that file, paced in about real time.

#include "platoon/viewer/seat_sound.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace platoon::viewer {

/// The audio device's settings.
struct SeatAudioDef {
  SeatSoundDef sound = DefaultSeatSoundDef();  ///< The synthesis (levels, sample rate).
  int buffer_frames = 512;                     ///< Samples per device buffer (latency ~ this / rate). Typical 256..1024.
};

/// The default: the default sound, 512-sample buffers (10.7 ms at 48 kHz).
inline SeatAudioDef DefaultSeatAudioDef() { return SeatAudioDef{}; }

/// An open, playing audio device fed by a SeatSound.
class SeatAudio {
 public:
  /// Opens SDL audio and the default output device and starts playing; nullptr with `*error` set (SDL's
  /// reason) when none opens. Never throws for a missing device.
  static std::unique_ptr<SeatAudio> Open(const SeatAudioDef& def, std::string* error);
  /// Stops playing, closes the device and SDL's audio subsystem (before anything quits SDL as a whole).
  ~SeatAudio();
  SeatAudio(const SeatAudio&) = delete;
  SeatAudio& operator=(const SeatAudio&) = delete;

  /// The state the sound moves to (any thread; the device's thread picks it up at its next buffer).
  void Set(const SoundState& state);
  /// Samples the device has taken so far (its playing position, in samples at SampleRateHz).
  uint64_t SamplesRendered() const;
  /// Stops and closes the device (waiting for a buffer being rendered); the counters stay readable. The
  /// destructor closes it too.
  void Close();
  /// Sample rate the device plays at, in Hz.
  double SampleRateHz() const;
  /// SDL's audio driver and the device ("pulseaudio: default", "disk: default").
  std::string DeviceName() const;
  /// Wall time the core took per second of audio rendered so far, in ms (synthesis cost).
  double RenderCostMsPerS() const;

  struct Impl;

 private:
  explicit SeatAudio(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::viewer
