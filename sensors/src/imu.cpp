#include "platoon/sensors/imu.hpp"
#include "platoon/sensors/noise.hpp"

#include <cassert>
#include <cmath>
#include <numbers>
#include <sstream>

namespace platoon::sensors {

ImuDef DefaultImuDef() { return ImuDef{}; }

std::string ValidateImuDef(const ImuDef& def) {
  // The first bad field wins; a message names it and the offending value.
  auto bad = [](const char* name, const char* rule, double v) {
    std::ostringstream os;
    os << "imu." << name << " must be " << rule << ", got " << v;
    return os.str();
  };
  if (!(def.rate_hz > 0.0) || !std::isfinite(def.rate_hz)) return bad("rate_hz", "> 0", def.rate_hz);
  const struct {
    const char* name;
    double value;
  } non_negative[] = {
      {"gyro_noise_density_radps_rthz", def.gyro_noise_density_radps_rthz},
      {"gyro_bias_random_walk_radps2_rthz", def.gyro_bias_random_walk_radps2_rthz},
      {"accel_noise_density_mps2_rthz", def.accel_noise_density_mps2_rthz},
      {"accel_bias_random_walk_mps3_rthz", def.accel_bias_random_walk_mps3_rthz},
      {"gyro_initial_bias_sigma_radps", def.gyro_initial_bias_sigma_radps},
      {"accel_initial_bias_sigma_mps2", def.accel_initial_bias_sigma_mps2},
      {"gravity_mps2", def.gravity_mps2},
  };
  for (const auto& f : non_negative)
    if (!(f.value >= 0.0) || !std::isfinite(f.value)) return bad(f.name, ">= 0 and finite", f.value);
  const double qn = def.mounting.orientation.norm();
  if (std::abs(qn - 1.0) > 1e-9) return bad("mounting.orientation norm", "1 (unit quaternion)", qn);
  return {};
}

ImuState InitialImuState(const ImuDef& def, std::mt19937_64& rng) {
  ImuState s;
  s.gyro_bias_radps = def.gyro_initial_bias_sigma_radps * StandardNormal3(rng);
  s.accel_bias_mps2 = def.accel_initial_bias_sigma_mps2 * StandardNormal3(rng);
  return s;
}

ImuSample TrueImuSample(const KinematicState& vehicle, const ImuDef& def, const Vec3& angular_acceleration_radps2) {
  const KinematicState m = MountPointKinematics(vehicle, def.mounting, angular_acceleration_radps2);
  // World-to-sensor rotation R_SW.
  const Quat q_sw = m.pose.orientation.conjugate();
  const Vec3 gravity_w(0.0, 0.0, -def.gravity_mps2);

  ImuSample s;
  s.stamp_ns = vehicle.stamp_ns;
  s.angular_velocity_radps = q_sw * m.angular_velocity_radps;
  // Sign convention of the header: kinematic acceleration plus gravity vector, so level at rest reads -g on z.
  s.acceleration_mps2 = q_sw * (m.acceleration_mps2 + gravity_w);
  return s;
}

ImuSample Measure(const KinematicState& vehicle, const ImuDef& def, ImuState& state, std::mt19937_64& rng,
                  const Vec3& angular_acceleration_radps2) {
  assert(def.rate_hz > 0.0);
  const double dt_s = 1.0 / def.rate_hz;
  const double sqrt_dt = std::sqrt(dt_s);

  // Bias random walk, Kalibr discrete form: b_k = b_{k-1} + sigma_bc * sqrt(dt) * N(0,1).
  state.gyro_bias_radps += def.gyro_bias_random_walk_radps2_rthz * sqrt_dt * StandardNormal3(rng);
  state.accel_bias_mps2 += def.accel_bias_random_walk_mps3_rthz * sqrt_dt * StandardNormal3(rng);

  // Truth + bias + white noise with sigma_d = sigma_c / sqrt(dt) (eq. 5-6).
  ImuSample s = TrueImuSample(vehicle, def, angular_acceleration_radps2);
  s.angular_velocity_radps +=
      state.gyro_bias_radps + (def.gyro_noise_density_radps_rthz / sqrt_dt) * StandardNormal3(rng);
  s.acceleration_mps2 +=
      state.accel_bias_mps2 + (def.accel_noise_density_mps2_rthz / sqrt_dt) * StandardNormal3(rng);
  return s;
}

}  // namespace platoon::sensors
