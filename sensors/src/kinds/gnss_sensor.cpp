// The GNSS kind: [[node.sensor]] keys (docs/SENSORS.md) and one WGS-84 fix per measurement.
#include "sensor_kinds.hpp"

#include "platoon/sensors/gnss.hpp"

#include <random>

namespace platoon::sensors::kinds {
namespace {

// Bounds of the noise keys, for the config reader and the live parameters alike.
constexpr config::Range kHorizontalSigmaM{0, 1000}, kVerticalSigmaM{0, 1000}, kVelocitySigmaMps{0, 100};

class GnssSensor final : public SensorInstance {
 public:
  explicit GnssSensor(const SensorSpec& spec) : spec_(spec), rng_(spec.seed) {}

  std::optional<Measurement> Measure(const SensorWorldView& world, int64_t t_ns) override {
    const auto fix = sensors::Measure(world.EgoAt(t_ns), spec_.gnss, rng_);
    protocol::GnssMeasurement msg;
    msg.header.stamp_ns = t_ns;
    msg.latitude_deg = fix.position.latitude_deg;
    msg.longitude_deg = fix.position.longitude_deg;
    msg.altitude_m = fix.position.altitude_m;
    msg.velocity_enu_mps = fix.velocity_enu_mps;
    msg.horizontal_sigma_m = fix.horizontal_sigma_m;
    msg.vertical_sigma_m = fix.vertical_sigma_m;
    return Measurement{std::move(msg), 0};
  }

  void Params(config::ParamRegistry& r, const std::string& prefix) override {
    auto& g = spec_.gnss;
    r.AddFloat(prefix + "horizontal_sigma_m", "m", kHorizontalSigmaM, "Position noise sigma per horizontal axis",
               [&g] { return g.horizontal_sigma_m; }, [&g](double v) { g.horizontal_sigma_m = v; });
    r.AddFloat(prefix + "vertical_sigma_m", "m", kVerticalSigmaM, "Position noise sigma on up",
               [&g] { return g.vertical_sigma_m; }, [&g](double v) { g.vertical_sigma_m = v; });
    r.AddFloat(prefix + "velocity_sigma_mps", "m/s", kVelocitySigmaMps, "Velocity noise sigma per axis",
               [&g] { return g.velocity_sigma_mps; }, [&g](double v) { g.velocity_sigma_mps = v; });
  }

 private:
  SensorSpec spec_;
  std::mt19937_64 rng_;
};

}  // namespace

void ReadGnss(const config::Table& t, SensorSpec& s) {
  GnssDef d = DefaultGnssDef();
  d.rate_hz = t.GetDouble("rate_hz", d.rate_hz, 0.01, 1000);
  d.horizontal_sigma_m = t.GetDouble("horizontal_sigma_m", d.horizontal_sigma_m, kHorizontalSigmaM.min, kHorizontalSigmaM.max);
  d.vertical_sigma_m = t.GetDouble("vertical_sigma_m", d.vertical_sigma_m, kVerticalSigmaM.min, kVerticalSigmaM.max);
  d.velocity_sigma_mps = t.GetDouble("velocity_sigma_mps", d.velocity_sigma_mps, kVelocitySigmaMps.min, kVelocitySigmaMps.max);
  d.origin.latitude_deg = t.GetDouble("origin_lat_deg", d.origin.latitude_deg, -90, 90);
  d.origin.longitude_deg = t.GetDouble("origin_lon_deg", d.origin.longitude_deg, -180, 180);
  d.origin.altitude_m = t.GetDouble("origin_alt_m", d.origin.altitude_m, -1e4, 1e5);
  if (const std::string why = ValidateGnssDef(d); !why.empty()) t.Fail("type", "invalid gnss: " + why);
  d.mounting = s.mounting;
  s.gnss = d;
  s.rate_hz = d.rate_hz;
}

std::unique_ptr<SensorInstance> MakeGnss(const SensorSpec& spec, const SensorServices&) {
  return std::make_unique<GnssSensor>(spec);
}

}  // namespace platoon::sensors::kinds
