#pragma once
/// A 3D vehicle on Bullet's btRaycastVehicle, for ground contact on graded road meshes and collisions
/// with walls and buildings (driver seats). Equations and figures: docs/BULLET_VEHICLE.md.
///
/// The caller owns time: BulletWorld::Step(dt) advances every vehicle of the world in fixed 1 ms
/// substeps. No clock, no I/O, no logging. Deterministic for the same sequence of calls (Bullet,
/// single-threaded, fixed steps). Bullet headers stay in the source file (pimpl).
///
/// Threads: Debian's Bullet is not thread-safe for ray tests, so a BulletWorld and its vehicles
/// belong to one owner thread; never share one across threads (one world per thread is fine).
///
/// Frames: world x east, y north, z up. Chassis body frame at the centre of gravity (CG): x forward,
/// y left, z up. State() reports the rear-axle centre at ground level, like vehicle::ToKinematic.

#include "platoon/geometry.hpp"
#include "platoon/road/environment.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace platoon::vehicle {

/// Read-only settings of a BulletWorld.
struct BulletWorldDef {
  double gravity_mps2 = 9.81;        ///< Gravity magnitude, along -z, in m/s^2. 9.81 on Earth.
  double substep_s = 0.001;          ///< Fixed internal step, in s. Typical 0.001 (1 kHz).
  double road_sample_step_m = 2.0;   ///< Spacing of the road mesh rows along s, in m. Typical 1..2.
  double road_margin_m = 3.0;        ///< Ground beyond each carriageway edge in the road mesh, in m. Typical 2..5.
  double ground_friction = 1.0;      ///< Friction of ground and boxes for chassis contacts, dimensionless. Typical 0.5..1.
};

/// Default world definition: Earth gravity, 1 ms substeps, road mesh every 2 m with 3 m margins.
inline BulletWorldDef DefaultBulletWorldDef() { return BulletWorldDef{}; }

/// Bullet-specific vehicle settings; the mass, axle positions, wheel radius, engine, brakes,
/// steering and friction come from VehicleDef.
struct BulletVehicleDef {
  double track_width_m = 1.6;                   ///< Distance between left and right wheel centres, in m. Typical 1.5..1.65.
  double suspension_rest_length_m = 0.30;       ///< Unloaded spring length (connection point to wheel centre), in m. Typical 0.2..0.35.
  double suspension_max_travel_m = 0.20;        ///< Travel either side of the rest length, in m. Typical 0.1..0.25.
  double suspension_stiffness_npm = 30000.0;    ///< Spring rate of one wheel, in N/m. Typical 20000..40000.
  double suspension_compression_damping_nspm = 6600.0;  ///< Damping of one wheel while compressing, in N s/m. Typical 3000..7000.
  double suspension_relaxation_damping_nspm = 3500.0;   ///< Damping of one wheel while extending, in N s/m. Typical 2000..5000.
  double max_suspension_force_n = 50000.0;      ///< Cap of one wheel's suspension force, in N. Typical 3..5 x static load.
  double roll_influence = 0.1;                  ///< Bullet's roll influence of side forces, dimensionless (1 = physical, lower resists rollover). Typical 0.1..0.3.
  double body_length_m = 4.6;                   ///< Chassis collision box length, in m. Typical 4.2..4.9.
  double body_width_m = 1.8;                    ///< Chassis collision box width, in m. Typical 1.75..1.9.
  double body_height_m = 1.1;                   ///< Chassis collision box height, in m. Typical 1.0..1.5.
  double front_overhang_m = 0.9;                ///< Front axle to front face of the box, in m. Typical 0.8..1.0.
  double ground_clearance_m = 0.20;             ///< Ground to the box's bottom at static load, in m. Typical 0.15..0.2.
};

/// Default Bullet vehicle definition: a mid-size car, 1.6 m track, ~1.4 Hz body bounce.
inline BulletVehicleDef DefaultBulletVehicleDef() { return BulletVehicleDef{}; }

class BulletVehicle;

/// A Bullet dynamics world: gravity, static ground (a road mesh or a flat plane), static boxes and
/// the vehicles created in it. Not copyable; one owner thread.
class BulletWorld {
 public:
  /// Empty world with gravity; add ground and boxes before stepping.
  explicit BulletWorld(const BulletWorldDef& def = DefaultBulletWorldDef());
  ~BulletWorld();
  BulletWorld(const BulletWorld&) = delete;
  BulletWorld& operator=(const BulletWorld&) = delete;

  /// The definition it was built from.
  const BulletWorldDef& Def() const;

  /// Adds an infinite flat ground plane at height `height_m`, in m.
  void AddFlatGround(double height_m = 0.0);
  /// Adds the road's carriageway plus road_margin_m on each side as a static triangle mesh, rows
  /// every road_sample_step_m along s from Road::PointAt, heights from Road::Height. The mesh is
  /// copied: the road need not outlive the world.
  void AddRoadGround(const road::Road& road);
  /// Adds a static box centred at `center_m` (the box's centre, not its footprint), rotated
  /// `yaw_rad` about z, of size length (along yaw) x width x height `size_m`, in m.
  void AddBox(const Vec3& center_m, double yaw_rad, const Vec3& size_m);
  /// Adds every environment object as a static box standing on its footprint centre.
  void AddEnvironment(const std::vector<road::EnvObject>& objects);

  /// Advances all vehicles by `dt_s` seconds in fixed substeps; a remainder shorter than a substep
  /// is carried to the next call, so sim time never drifts. Vehicles' inputs are held over the step.
  void Step(double dt_s);
  /// Sim time advanced so far (whole substeps), in s.
  double TimeS() const;
  /// Number of static objects (ground pieces and boxes).
  int StaticObjectCount() const;

 private:
  friend class BulletVehicle;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A four-wheel btRaycastVehicle in a BulletWorld. Must be destroyed before its world. Not copyable.
class BulletVehicle {
 public:
  /// Creates the vehicle in `world` with its rear-axle centre at `rear_axle_m` (at ground level;
  /// the chassis is placed at static ride height above it), heading `yaw_rad` from +x, at rest.
  /// `drop_m` lifts it that far above its ride height (0: placed on its suspension).
  BulletVehicle(BulletWorld& world, const VehicleDef& def, const BulletVehicleDef& bullet_def,
                const Vec3& rear_axle_m, double yaw_rad, double drop_m = 0.0);
  ~BulletVehicle();
  BulletVehicle(const BulletVehicle&) = delete;
  BulletVehicle& operator=(const BulletVehicle&) = delete;

  /// Sets the driver input held over the next steps; clamped to its ranges. Brake wins over throttle.
  /// A negative throttle (down to -1) is the reverse gear: the same engine force, pushing backwards.
  void SetInput(const VehicleInput& input);
  /// The input last set (clamped).
  const VehicleInput& Input() const;

  /// World-frame state of the rear-axle centre at ground level (body z down by cg_height_m from
  /// the CG), stamped `stamp_ns`; acceleration is the mean over the last BulletWorld::Step.
  KinematicState State(int64_t stamp_ns) const;
  /// Signed speed along the chassis x axis, in m/s (negative when rolling backwards).
  double SpeedMps() const;
  /// Largest number of contact points between the chassis box and static objects (ground or
  /// boxes) over the substeps of the last Step; > 0 means a collision (or the body on the ground).
  int Contacts() const;
  /// Total number of substeps with at least one chassis contact since creation.
  int64_t ContactSubsteps() const;
  /// Wheel spin angles about their axles (front left, front right, rear left, rear right), wrapped
  /// to [-pi, pi], in rad; increasing while rolling forward.
  std::array<double, 4> WheelAnglesRad() const;
  /// Whether each wheel (same order) touched the ground in the last substep.
  std::array<bool, 4> WheelsInContact() const;
  /// Current front road-wheel angle, left positive, in rad.
  double SteerRad() const;
  /// FNV-1a 64 over the chassis pose, velocities and wheel angles, for determinism tests.
  uint64_t Hash() const;

 private:
  friend class BulletWorld;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::vehicle
