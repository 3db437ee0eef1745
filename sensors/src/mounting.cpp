#include "platoon/sensors/mounting.hpp"

namespace platoon::sensors {

Mounting DefaultMounting() { return Mounting{}; }

Vec3 SensorToVehicle(const Mounting& mount, const Vec3& p_sensor_m) {
  return mount.orientation * p_sensor_m + mount.position_m;
}

Vec3 VehicleToSensor(const Mounting& mount, const Vec3& p_vehicle_m) {
  return mount.orientation.conjugate() * (p_vehicle_m - mount.position_m);
}

Pose SensorPoseInWorld(const Pose& vehicle, const Mounting& mount) {
  Pose s;
  s.position_m = vehicle.orientation * mount.position_m + vehicle.position_m;
  // Renormalise so chains of compositions do not drift off the unit sphere.
  s.orientation = (vehicle.orientation * mount.orientation).normalized();
  return s;
}

Vec3 SensorToWorld(const Pose& vehicle, const Mounting& mount, const Vec3& p_sensor_m) {
  return vehicle.orientation * SensorToVehicle(mount, p_sensor_m) + vehicle.position_m;
}

Vec3 WorldToSensor(const Pose& vehicle, const Mounting& mount, const Vec3& p_world_m) {
  return VehicleToSensor(mount, vehicle.orientation.conjugate() * (p_world_m - vehicle.position_m));
}

KinematicState MountPointKinematics(const KinematicState& vehicle, const Mounting& mount,
                                    const Vec3& angular_acceleration_radps2) {
  // Lever arm from the rear-axle centre to the mount point, rotated into the world frame.
  const Vec3 r = vehicle.pose.orientation * mount.position_m;
  const Vec3& w = vehicle.angular_velocity_radps;

  KinematicState s;
  s.stamp_ns = vehicle.stamp_ns;
  s.pose = SensorPoseInWorld(vehicle.pose, mount);
  // Rigid-body transport: tangential (w x r) velocity; Euler (dw/dt x r) and centripetal (w x (w x r)) acceleration.
  s.velocity_mps = vehicle.velocity_mps + w.cross(r);
  s.acceleration_mps2 = vehicle.acceleration_mps2 + angular_acceleration_radps2.cross(r) + w.cross(w.cross(r));
  s.angular_velocity_radps = w;
  return s;
}

}  // namespace platoon::sensors
