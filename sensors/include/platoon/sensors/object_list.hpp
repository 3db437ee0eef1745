#pragma once
/// Object-list sensor error model (seed 002 ch. 3): an ordered chain of modules M = M^(n) o ... o M^(1)
/// (eq. 3.3) that maps ground-truth objects to a sensed object list. Every module takes and returns the
/// same object format, may keep memory between frames (Z_{t-1}, per-track state), and draws its randomness
/// from the caller's generator. Default chain, in the perception order of seed 002 Fig. 3.6:
///   1. FieldOfViewModule   - drops objects outside range and azimuth limits (§3.4.1, detection);
///   2. DetectionModule     - keeps an object with a per-class probability (§3.4.1, eq. 3.4);
///   3. GaussianNoiseModule - position and velocity noise: a per-track offset drawn once per tracking
///                            series plus white noise per frame (§3.4.2.1-3, eq. 3.5);
///   4. ClassTransitionModule - indirect perception: unclassified -> car once the length first exceeds
///                            2.0 m, then sticks (§3.4.3, Fig. 3.21).
/// Coordinates are in the sensor frame: x forward, y left, z up. Equations: docs/CAMERA_OBJECTS.md.

#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace platoon::sensors {

/// Object class as reported by an object-list sensor.
enum class ObjectClass : uint8_t {
  kUnclassified = 0,  ///< Not (yet) classified.
  kCar = 1,           ///< Passenger car.
  kTruck = 2,         ///< Truck or bus.
  kMotorbike = 3,     ///< Motorbike or scooter.
  kBicycle = 4,       ///< Bicycle with rider.
  kPedestrian = 5,    ///< Pedestrian.
};

/// Lower-case name of a class ("unclassified", "car", "truck", "motorbike", "bicycle", "pedestrian").
std::string_view ObjectClassName(ObjectClass c);
/// Parses a class name; nullopt for anything else.
std::optional<ObjectClass> ObjectClassFromName(std::string_view name);
/// Every class name, in code order (for config errors).
std::vector<std::string> ObjectClassNames();
/// The true class of a simulated entity (static objects and unknown kinds: unclassified).
ObjectClass ObjectClassOf(protocol::EntityKind kind);

/// Ground-truth object relative to the sensor (input of the chain, Z^(0) = X).
struct GroundTruthObject {
  uint32_t id = 0;                               ///< Object id, stable over frames (one tracking series).
  ObjectClass object_class = ObjectClass::kCar;  ///< True class.
  Vec3 position_m = Vec3::Zero();                ///< Reference point in the sensor frame, in m.
  Vec3 velocity_mps = Vec3::Zero();              ///< Absolute velocity in sensor-frame axes, in m/s.
  Vec3 size_m = Vec3(4.6, 1.8, 1.5);             ///< Length, width, height as far as visible to the sensor, in m.
};

/// One object of the sensed list (format of every intermediate Z^(k) and of the output Z).
struct SensedObject {
  uint32_t id = 0;                                        ///< Track id (the ground-truth id).
  ObjectClass object_class = ObjectClass::kUnclassified;  ///< Reported class.
  ObjectClass truth_class = ObjectClass::kUnclassified;   ///< True class, for modules and evaluation only.
  Vec3 position_m = Vec3::Zero();                         ///< Reported position in the sensor frame, in m.
  Vec3 velocity_mps = Vec3::Zero();                       ///< Reported velocity, in m/s.
  Vec3 size_m = Vec3::Zero();                             ///< Reported length, width, height, in m.
};

/// One step of the chain, M^(k)(gamma_k) of seed 002 eq. 3.3b. Modules may keep state between frames.
class ObjectListModule {
 public:
  virtual ~ObjectListModule() = default;
  /// Short name for logs ("fov", "detection", "noise", "class").
  virtual std::string_view Name() const = 0;
  /// Maps Z^(k-1) to Z^(k) in place; `previous_output` is the chain's output Z_{t-1} of the last frame.
  virtual void Apply(std::vector<SensedObject>& objects, const std::vector<SensedObject>& previous_output,
                     std::mt19937_64& rng) = 0;
};

/// Field-of-view limits (seed 002 §3.4.1: range and horizontal angle).
struct FieldOfViewDef {
  double range_min_m = 0.5;            ///< Objects closer than this are dropped, in m.
  double range_max_m = 200.0;          ///< Objects farther than this are dropped, in m. Typical 200.
  double azimuth_half_rad = 0.7854;    ///< Half horizontal opening, azimuth = atan2(y, x), in rad. 45 deg.
};

/// Detection probability per true class (seed 002 eq. 3.4).
struct DetectionDef {
  double default_probability = 1.0;              ///< For classes not listed, 0..1.
  std::map<ObjectClass, double> probability;     ///< Per true class, 0..1. Typical car 0.98.
};

/// Gaussian position and velocity errors (seed 002 eq. 3.5 with the per-series mean of Fig. 3.13/3.18).
struct NoiseDef {
  Vec3 position_sigma_m = Vec3(0.1, 0.1, 0.0);          ///< Per-frame white noise, in m (seed Fig. 3.20: 0.1).
  Vec3 position_offset_sigma_m = Vec3(0.5, 0.2, 0.0);   ///< Per-track offset, drawn once per track, in m.
  Vec3 velocity_sigma_mps = Vec3(0.45, 0.2, 0.0);       ///< Per-frame white noise, in m/s (seed: 0.447).
  Vec3 velocity_offset_sigma_mps = Vec3(0.1, 0.1, 0.0); ///< Per-track offset, in m/s.
  uint32_t track_timeout_frames = 10;  ///< A track unseen this many frames is lost: a new offset is drawn.
};

/// One trigger-based class transition (seed 002 §3.4.3).
struct ClassTransitionRule {
  ObjectClass truth_class = ObjectClass::kCar;        ///< Applies to objects of this true class.
  ObjectClass initial_class = ObjectClass::kUnclassified;  ///< Reported before the trigger.
  ObjectClass final_class = ObjectClass::kCar;        ///< Reported from the trigger on, for good.
  double length_threshold_m = 2.0;                    ///< Trigger when length first exceeds this, in m.
  double width_threshold_m = 1.0;                     ///< ... or width first exceeds this, in m (<= 0: off).
};

/// Class transitions; objects of a class without a rule report their true class.
struct ClassTransitionDef {
  std::vector<ClassTransitionRule> rules = {ClassTransitionRule{}};  ///< Default: car, 2.0 m / 1.0 m.
  uint32_t track_timeout_frames = 10;  ///< A track unseen this many frames starts unclassified again.
};

/// The whole chain's configuration.
struct ObjectListDef {
  FieldOfViewDef fov;          ///< Module 1: range and azimuth limits.
  DetectionDef detection;      ///< Module 2: detection probability per class.
  NoiseDef noise;              ///< Module 3: position and velocity noise with per-track offsets.
  ClassTransitionDef classes;  ///< Module 4: class transition rules.
  double rate_hz = 20.0;       ///< Update rate, in Hz (seed 002 Fig. 3.20: 20). Informational: the caller paces.
};

/// Default definition: 200 m, +-45 deg, all detected, seed-like noise, car rule at 2.0 m / 1.0 m.
ObjectListDef DefaultObjectListDef();

/// Checks a definition; returns "" when valid, else a message naming the first bad field.
std::string ValidateObjectListDef(const ObjectListDef& def);

/// Module 1: drops objects outside [range_min, range_max] (3D distance) or |azimuth| > azimuth_half.
class FieldOfViewModule final : public ObjectListModule {
 public:
  explicit FieldOfViewModule(FieldOfViewDef def) : def_(def) {}
  std::string_view Name() const override { return "fov"; }
  void Apply(std::vector<SensedObject>& objects, const std::vector<SensedObject>& previous_output,
             std::mt19937_64& rng) override;

 private:
  FieldOfViewDef def_;
};

/// Module 2: keeps each object with its class's probability (one uniform draw per object).
class DetectionModule final : public ObjectListModule {
 public:
  explicit DetectionModule(DetectionDef def) : def_(std::move(def)) {}
  std::string_view Name() const override { return "detection"; }
  void Apply(std::vector<SensedObject>& objects, const std::vector<SensedObject>& previous_output,
             std::mt19937_64& rng) override;

 private:
  DetectionDef def_;
};

/// Module 3: adds offset_j + white noise to position and velocity; offset_j is drawn when track j first
/// appears and kept (by id) until the track is unseen for track_timeout_frames frames.
class GaussianNoiseModule final : public ObjectListModule {
 public:
  explicit GaussianNoiseModule(NoiseDef def) : def_(def) {}
  std::string_view Name() const override { return "noise"; }
  void Apply(std::vector<SensedObject>& objects, const std::vector<SensedObject>& previous_output,
             std::mt19937_64& rng) override;
  /// Number of tracks with a remembered offset.
  size_t TrackCount() const { return tracks_.size(); }

 private:
  struct Track {
    Vec3 position_offset_m = Vec3::Zero();
    Vec3 velocity_offset_mps = Vec3::Zero();
    uint32_t unseen_frames = 0;
  };
  NoiseDef def_;
  std::unordered_map<uint32_t, Track> tracks_;
};

/// Module 4: trigger-based class transitions with memory: once triggered, a track keeps the final class.
class ClassTransitionModule final : public ObjectListModule {
 public:
  explicit ClassTransitionModule(ClassTransitionDef def) : def_(std::move(def)) {}
  std::string_view Name() const override { return "class"; }
  void Apply(std::vector<SensedObject>& objects, const std::vector<SensedObject>& previous_output,
             std::mt19937_64& rng) override;

 private:
  ClassTransitionDef def_;
  std::unordered_map<uint32_t, uint32_t> triggered_;  // triggered track id -> frames unseen
};

/// The chain M = M^(n) o ... o M^(1): converts ground truth to SensedObject, runs the modules in order and
/// remembers its output for the next frame.
class ObjectListChain {
 public:
  /// The default four modules in order, configured from `def`.
  explicit ObjectListChain(ObjectListDef def);
  /// A custom sequence of modules, run in the given order.
  explicit ObjectListChain(std::vector<std::unique_ptr<ObjectListModule>> modules);
  /// One sensor update: Z_t = M(X_t), deterministic for a given rng state and history.
  std::vector<SensedObject> Process(const std::vector<GroundTruthObject>& truth, std::mt19937_64& rng);
  /// The modules, in run order.
  const std::vector<std::unique_ptr<ObjectListModule>>& Modules() const { return modules_; }

 private:
  std::vector<std::unique_ptr<ObjectListModule>> modules_;
  std::vector<SensedObject> previous_;
};

}  // namespace platoon::sensors
