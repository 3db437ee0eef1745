// The IMU kind: [[node.sensor]] keys (docs/SENSORS.md) and one sample per measurement, biases walking.
#include "sensor_kinds.hpp"

#include "platoon/sensors/imu.hpp"

#include <random>

namespace platoon::sensors::kinds {
namespace {

// Bounds of the noise keys, for the config reader and the live parameters alike.
constexpr config::Range kGyroNoise{0, 1}, kGyroWalk{0, 1}, kAccelNoise{0, 10}, kAccelWalk{0, 10};

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

  void Params(config::ParamRegistry& r, const std::string& prefix) override {
    auto& d = spec_.imu;
    r.AddFloat(prefix + "gyro_noise_density", "rad/s/sqrt(Hz)", kGyroNoise, "Gyro white noise density",
               [&d] { return d.gyro_noise_density_radps_rthz; }, [&d](double v) { d.gyro_noise_density_radps_rthz = v; });
    r.AddFloat(prefix + "gyro_bias_random_walk", "rad/s^2/sqrt(Hz)", kGyroWalk, "Gyro bias random walk",
               [&d] { return d.gyro_bias_random_walk_radps2_rthz; },
               [&d](double v) { d.gyro_bias_random_walk_radps2_rthz = v; });
    r.AddFloat(prefix + "accel_noise_density", "m/s^2/sqrt(Hz)", kAccelNoise, "Accelerometer white noise density",
               [&d] { return d.accel_noise_density_mps2_rthz; }, [&d](double v) { d.accel_noise_density_mps2_rthz = v; });
    r.AddFloat(prefix + "accel_bias_random_walk", "m/s^3/sqrt(Hz)", kAccelWalk, "Accelerometer bias random walk",
               [&d] { return d.accel_bias_random_walk_mps3_rthz; },
               [&d](double v) { d.accel_bias_random_walk_mps3_rthz = v; });
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
  d.gyro_noise_density_radps_rthz = t.GetDouble("gyro_noise_density", d.gyro_noise_density_radps_rthz, kGyroNoise.min, kGyroNoise.max);
  d.gyro_bias_random_walk_radps2_rthz = t.GetDouble("gyro_bias_random_walk", d.gyro_bias_random_walk_radps2_rthz, kGyroWalk.min, kGyroWalk.max);
  d.accel_noise_density_mps2_rthz = t.GetDouble("accel_noise_density", d.accel_noise_density_mps2_rthz, kAccelNoise.min, kAccelNoise.max);
  d.accel_bias_random_walk_mps3_rthz = t.GetDouble("accel_bias_random_walk", d.accel_bias_random_walk_mps3_rthz, kAccelWalk.min, kAccelWalk.max);
  if (const std::string why = ValidateImuDef(d); !why.empty()) t.Fail("type", "invalid imu: " + why);
  d.mounting = s.mounting;
  s.imu = d;
  s.rate_hz = d.rate_hz;
}

std::unique_ptr<SensorInstance> MakeImu(const SensorSpec& spec, const SensorServices&) {
  return std::make_unique<ImuSensor>(spec);
}

}  // namespace platoon::sensors::kinds
