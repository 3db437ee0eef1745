// The IMU kind: [[node.sensor]] keys (docs/SENSORS.md) and one sample per measurement, biases walking.
#include "sensor_kinds.hpp"

#include "platoon/sensors/imu.hpp"

#include <random>

namespace platoon::sensors::kinds {
namespace {

class ImuSensor final : public SensorInstance {
 public:
  explicit ImuSensor(const SensorSpec& spec) : spec_(spec), rng_(spec.seed), state_(InitialImuState(spec.imu, rng_)) {}

  std::optional<Measurement> Measure(const SensorWorldView& world, int64_t t_ns) override {
    const auto sample = sensors::Measure(world.EgoAt(t_ns), spec_.imu, state_, rng_);
    protocol::ImuMeasurement msg;
    msg.header.stamp_ns = t_ns;
    msg.angular_velocity_radps = sample.angular_velocity_radps;
    msg.acceleration_mps2 = sample.acceleration_mps2;
    return Measurement{std::move(msg), 0};
  }

 private:
  SensorSpec spec_;
  std::mt19937_64 rng_;
  ImuState state_;  // bias random walk, advanced by every measurement
};

}  // namespace

void ReadImu(const config::Table& t, SensorSpec& s) {
  ImuDef d = DefaultImuDef();
  d.rate_hz = t.GetDouble("rate_hz", d.rate_hz, 0.1, 10000);
  d.gyro_noise_density_radps_rthz = t.GetDouble("gyro_noise_density", d.gyro_noise_density_radps_rthz, 0, 1);
  d.gyro_bias_random_walk_radps2_rthz = t.GetDouble("gyro_bias_random_walk", d.gyro_bias_random_walk_radps2_rthz, 0, 1);
  d.accel_noise_density_mps2_rthz = t.GetDouble("accel_noise_density", d.accel_noise_density_mps2_rthz, 0, 10);
  d.accel_bias_random_walk_mps3_rthz = t.GetDouble("accel_bias_random_walk", d.accel_bias_random_walk_mps3_rthz, 0, 10);
  if (const std::string why = ValidateImuDef(d); !why.empty()) t.Fail("type", "invalid imu: " + why);
  d.mounting = s.mounting;
  s.imu = d;
  s.rate_hz = d.rate_hz;
}

std::unique_ptr<SensorInstance> MakeImu(const SensorSpec& spec, const SensorServices&) {
  return std::make_unique<ImuSensor>(spec);
}

}  // namespace platoon::sensors::kinds
