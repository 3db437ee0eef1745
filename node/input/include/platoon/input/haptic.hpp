#pragma once
/// The seam between force feedback and the wheel's motor (docs/INPUTS.md, "Force feedback"): a
/// HapticDevice takes a torque in -1..1 of its full scale. The SDL one (SdlInput::OpenHaptic) plays a
/// constant-force effect; MockHaptic records what it was told, for tests (no uinput needed).

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace platoon::input {

/// A force-feedback motor. Calls come from one thread (for SDL: the one that owns SDL).
class HapticDevice {
 public:
  virtual ~HapticDevice() = default;
  /// Commands `torque`, a fraction of full scale in -1..1 (clamped); positive turns the wheel left.
  virtual void SetTorque(double torque) = 0;
  /// Zero torque and the effect stopped; SetTorque starts it again. Also what the destructor does.
  virtual void Stop() = 0;
};

/// A HapticDevice that records each command with the time its clock gives (ns), for tests. Thread-safe.
class MockHaptic final : public HapticDevice {
 public:
  /// One command: when, the torque (0 for Stop), and whether it was Stop().
  struct Sample {
    int64_t t_ns = 0;     ///< The clock's time of the call, in ns.
    double torque = 0;    ///< Torque commanded, fraction of full scale.
    bool stop = false;    ///< Stop() rather than SetTorque().
  };
  /// `now_ns` stamps each sample (a test's fake clock).
  explicit MockHaptic(std::function<int64_t()> now_ns) : now_ns_(std::move(now_ns)) {}
  void SetTorque(double torque) override { Add({now_ns_(), torque < -1 ? -1 : torque > 1 ? 1 : torque, false}); }
  void Stop() override { Add({now_ns_(), 0.0, true}); }
  /// Every command so far, oldest first.
  std::vector<Sample> Samples() const {
    std::lock_guard lock(mutex_);
    return samples_;
  }

 private:
  void Add(const Sample& s) {
    std::lock_guard lock(mutex_);
    samples_.push_back(s);
  }
  std::function<int64_t()> now_ns_;
  mutable std::mutex mutex_;
  std::vector<Sample> samples_;
};

}  // namespace platoon::input
