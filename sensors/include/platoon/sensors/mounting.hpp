#pragma once
/// Where a sensor sits on a vehicle, and the transforms sensor <-> vehicle <-> world (seed 003 eq. 1).
///
/// Frames (see docs/SENSORS.md, "Mounting"):
///  - vehicle frame V: origin at the rear-axle centre, x forward, y left, z up (as in geometry.hpp);
///  - sensor frame S: the sensor's own axes, placed on the vehicle by a `Mounting`;
///  - world frame W: ENU-like, x east, y north, z up.
/// A `Mounting` is seed 003's T^V_Sensor: d^V = T^V_Sensor * d^Sensor (eq. 1).

#include "platoon/geometry.hpp"

namespace platoon::sensors {

/// Rigid placement of a sensor on a vehicle: the pose of frame S in frame V (seed 003's T^V_Sensor).
struct Mounting {
  Vec3 position_m = Vec3::Zero();       ///< Sensor origin in the vehicle frame, in m. Typical (1.3, 0, 0.5) for an IMU.
  Quat orientation = Quat::Identity();  ///< Sensor-to-vehicle rotation (unit quaternion). Identity: axes aligned with V.
  bool operator==(const Mounting& o) const {
    return position_m == o.position_m && orientation.coeffs() == o.orientation.coeffs();
  }
};

/// Sensor frame aligned with the vehicle frame, at the rear-axle centre.
Mounting DefaultMounting();

/// Point `p_sensor_m` given in the sensor frame, expressed in the vehicle frame, in m (seed 003 eq. 1).
Vec3 SensorToVehicle(const Mounting& mount, const Vec3& p_sensor_m);
/// Point `p_vehicle_m` given in the vehicle frame, expressed in the sensor frame, in m (inverse of eq. 1).
Vec3 VehicleToSensor(const Mounting& mount, const Vec3& p_vehicle_m);

/// Pose of the sensor frame in the world, given the vehicle's world pose: T^W_S = T^W_V * T^V_S.
Pose SensorPoseInWorld(const Pose& vehicle, const Mounting& mount);
/// Point `p_sensor_m` given in the sensor frame, expressed in the world frame, in m.
Vec3 SensorToWorld(const Pose& vehicle, const Mounting& mount, const Vec3& p_sensor_m);
/// Point `p_world_m` given in the world frame, expressed in the sensor frame, in m.
Vec3 WorldToSensor(const Pose& vehicle, const Mounting& mount, const Vec3& p_world_m);

/// Kinematics of the mount point (rigidly attached to the vehicle), all vectors in the world frame:
///   position  p_S = p_V + r,               r = R_WV * mount.position_m (lever arm, world frame)
///   velocity  v_S = v_V + w x r
///   accel.    a_S = a_V + dw/dt x r + w x (w x r)
///   angular velocity w_S = w_V; orientation q_WS = q_WV * q_VS.
/// KinematicState carries no angular acceleration, so `angular_acceleration_radps2` (world frame, rad/s^2)
/// is passed separately; leave it zero when the vehicle's yaw rate is steady. Stamp is copied.
KinematicState MountPointKinematics(const KinematicState& vehicle, const Mounting& mount,
                                    const Vec3& angular_acceleration_radps2 = Vec3::Zero());

}  // namespace platoon::sensors
