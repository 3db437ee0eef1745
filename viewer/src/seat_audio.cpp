#include "platoon/viewer/seat_audio.hpp"

#include <SDL.h>

#include <atomic>
#include <chrono>
#include <mutex>

namespace platoon::viewer {

struct SeatAudio::Impl {
  explicit Impl(const SeatAudioDef& d) : def(d), sound(d.sound) {}
  SeatAudioDef def;
  SeatSound sound;               // device thread only (inside the callback)
  SDL_AudioDeviceID device = 0;
  bool subsystem = false;        // SDL's audio subsystem was started here
  std::string name;
  // The newest state from the seat, picked up at the device's next buffer.
  std::mutex mutex;
  SoundState pending;
  bool has_pending = false;
  std::atomic<uint64_t> rendered{0};
  std::atomic<double> render_s{0};

  static void Callback(void* user, Uint8* stream, int bytes) {
    auto* self = static_cast<Impl*>(user);
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(self->mutex);
      if (self->has_pending) {
        self->sound.Set(self->pending);
        self->has_pending = false;
      }
    }
    const size_t frames = static_cast<size_t>(bytes) / sizeof(float);
    self->sound.Render(reinterpret_cast<float*>(stream), frames);
    self->rendered.fetch_add(frames);
    self->render_s.store(self->render_s.load() +
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  void Close() {
    if (device != 0) SDL_CloseAudioDevice(device);
    if (subsystem) SDL_QuitSubSystem(SDL_INIT_AUDIO);
    device = 0;
    subsystem = false;
  }
};

std::unique_ptr<SeatAudio> SeatAudio::Open(const SeatAudioDef& def, std::string* error) {
  auto impl = std::make_unique<Impl>(def);
  if (SDL_InitSubSystem(SDL_INIT_AUDIO) != 0) {
    if (error) *error = std::string("cannot start SDL audio: ") + SDL_GetError();
    return nullptr;
  }
  impl->subsystem = true;
  SDL_AudioSpec want{};
  want.freq = static_cast<int>(def.sound.sample_rate_hz);
  want.format = AUDIO_F32SYS;
  want.channels = 1;
  want.samples = static_cast<Uint16>(def.buffer_frames);
  want.callback = &Impl::Callback;
  want.userdata = impl.get();
  SDL_AudioSpec have{};
  // No changes allowed: SDL converts to whatever the hardware wants, the core always renders this format.
  impl->device = SDL_OpenAudioDevice(nullptr, 0, &want, &have, 0);
  if (impl->device == 0) {
    if (error) *error = std::string("no audio device (driver ") + (SDL_GetCurrentAudioDriver() ? SDL_GetCurrentAudioDriver() : "none") +
                        "): " + SDL_GetError();
    impl->Close();
    return nullptr;
  }
  impl->name = std::string(SDL_GetCurrentAudioDriver() ? SDL_GetCurrentAudioDriver() : "?") + ": default";
  SDL_PauseAudioDevice(impl->device, 0);
  return std::unique_ptr<SeatAudio>(new SeatAudio(std::move(impl)));
}

SeatAudio::SeatAudio(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SeatAudio::~SeatAudio() { impl_->Close(); }

void SeatAudio::Close() { impl_->Close(); }

void SeatAudio::Set(const SoundState& state) {
  std::lock_guard lock(impl_->mutex);
  impl_->pending = state;
  impl_->has_pending = true;
}

uint64_t SeatAudio::SamplesRendered() const { return impl_->rendered.load(); }

double SeatAudio::SampleRateHz() const { return impl_->def.sound.sample_rate_hz; }

std::string SeatAudio::DeviceName() const { return impl_->name; }

double SeatAudio::RenderCostMsPerS() const {
  const uint64_t n = impl_->rendered.load();
  return n ? 1e3 * impl_->render_s.load() / (static_cast<double>(n) / impl_->def.sound.sample_rate_hz) : 0.0;
}

}  // namespace platoon::viewer
