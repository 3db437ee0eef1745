#pragma once
/// Inertial measurement unit: truth from the vehicle's kinematic state plus bias and white noise,
/// seed 003 eq. 5-6, with Kalibr's continuous-time noise parameters and discrete-time conversion
/// (docs/SENSORS.md, "IMU").
///
///   w~ = w + b_g + n_g        (seed 003 eq. 5)
///   a~ = a + b_a + n_a        (seed 003 eq. 6)
///
/// Sign convention of `a` (read this before fusing the output): platoon's accelerometer reports the
/// kinematic acceleration PLUS the gravity vector g_W = (0, 0, -g), both rotated into the sensor frame:
///   a = R_SW * (a_kin,W + (0, 0, -g)).
/// An IMU at rest and level therefore reads a_z = -g = -9.80665 m/s^2, as seed 003 §V.E reports
/// ("z-axis acceleration is around the -9.81"). This is the negative of the specific force
/// f = a_kin - g_W that a physical accelerometer senses (+9.81 at rest); negate `acceleration_mps2`
/// to feed an estimator that expects specific force.
///
/// Noise (per axis, independent, Kalibr discrete-time form with dt = 1 / rate_hz):
///   n_k   = sigma_c / sqrt(dt) * N(0,1)                       white noise
///   b_k   = b_{k-1} + sigma_bc * sqrt(dt) * N(0,1)            bias random walk
/// The model is pure: it reads no clock; the caller calls Measure once per 1 / rate_hz of sim time.

#include "platoon/geometry.hpp"
#include "platoon/sensors/mounting.hpp"

#include <cstdint>
#include <random>
#include <string>

namespace platoon::sensors {

/// Configuration of one IMU (read-only while the simulation runs).
struct ImuDef {
  double rate_hz = 100.0;                              ///< Output rate, in Hz. Seed 003: 100 Hz.
  double gyro_noise_density_radps_rthz = 4.0e-4;       ///< Gyro white noise sigma_g, in rad/s/sqrt(Hz). MEMS: 1e-4-1e-2.
  double gyro_bias_random_walk_radps2_rthz = 4.0e-6;   ///< Gyro bias random walk sigma_bg, in rad/s^2/sqrt(Hz). MEMS: 1e-6-1e-4.
  double accel_noise_density_mps2_rthz = 6.0e-3;       ///< Accel white noise sigma_a, in m/s^2/sqrt(Hz). MEMS: 1e-3-1e-2.
  double accel_bias_random_walk_mps3_rthz = 2.0e-4;    ///< Accel bias random walk sigma_ba, in m/s^3/sqrt(Hz). MEMS: 1e-5-1e-3.
  double gyro_initial_bias_sigma_radps = 1.0e-3;       ///< Turn-on gyro bias sigma per axis, in rad/s. Typical 1e-4-1e-2.
  double accel_initial_bias_sigma_mps2 = 2.0e-2;       ///< Turn-on accel bias sigma per axis, in m/s^2. Typical 1e-3-1e-1.
  double gravity_mps2 = 9.80665;                       ///< Magnitude g of the gravity vector (0, 0, -g), in m/s^2.
  Mounting mounting{Vec3(1.3, 0.0, 0.5), Quat::Identity()};  ///< Pose of the IMU frame on the vehicle.
};

/// ADIS16448-class MEMS IMU at 100 Hz: the noise figures of Kalibr's example imu.yaml for the ADIS16448
/// (accel 0.006 m/s^2/sqrt(Hz), 2e-4 m/s^3/sqrt(Hz); gyro 4e-4 rad/s/sqrt(Hz), 4e-6 rad/s^2/sqrt(Hz)),
/// mounted level at (1.3, 0, 0.5) m in the vehicle frame.
ImuDef DefaultImuDef();

/// Checks an ImuDef; returns an empty string when valid, else a message naming the bad field.
std::string ValidateImuDef(const ImuDef& def);

/// What changes while the IMU runs: its biases. Plain data (copy, compare, record, replay).
struct ImuState {
  Vec3 gyro_bias_radps = Vec3::Zero();   ///< Current gyro bias b_g (sensor frame), in rad/s.
  Vec3 accel_bias_mps2 = Vec3::Zero();   ///< Current accel bias b_a (sensor frame), in m/s^2.
  bool operator==(const ImuState&) const = default;
};

/// A turn-on state: biases drawn from N(0, initial bias sigma^2) per axis.
ImuState InitialImuState(const ImuDef& def, std::mt19937_64& rng);

/// One IMU output, in the sensor frame.
struct ImuSample {
  int64_t stamp_ns = 0;                        ///< Sim time of the measurement, in ns (the vehicle state's stamp).
  Vec3 angular_velocity_radps = Vec3::Zero();  ///< w~ (eq. 5), sensor frame, in rad/s.
  Vec3 acceleration_mps2 = Vec3::Zero();       ///< a~ (eq. 6), sensor frame, in m/s^2; level at rest: (0, 0, -9.81).
  bool operator==(const ImuSample&) const = default;
};

/// The noise-free part of a sample (w, a of eq. 5-6) at the mount point of `def.mounting`, including the lever-arm
/// terms of MountPointKinematics; `angular_acceleration_radps2` in the world frame, rad/s^2.
ImuSample TrueImuSample(const KinematicState& vehicle, const ImuDef& def,
                        const Vec3& angular_acceleration_radps2 = Vec3::Zero());

/// One measurement: advances the biases in `state` by one step of dt = 1 / def.rate_hz (bias random walk), then
/// returns TrueImuSample + bias + white noise (eq. 5-6). Deterministic for a given rng state.
ImuSample Measure(const KinematicState& vehicle, const ImuDef& def, ImuState& state, std::mt19937_64& rng,
                  const Vec3& angular_acceleration_radps2 = Vec3::Zero());

}  // namespace platoon::sensors
