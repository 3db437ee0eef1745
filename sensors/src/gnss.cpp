#include "platoon/sensors/gnss.hpp"
#include "platoon/sensors/noise.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

namespace platoon::sensors {
namespace {

constexpr double kDegToRad = std::numbers::pi / 180.0;
constexpr double kRadToDeg = 180.0 / std::numbers::pi;
constexpr double kA = kWgs84A_m;
constexpr double kB = kWgs84A_m * (1.0 - kWgs84F);         // semi-minor axis, m
constexpr double kE2 = kWgs84F * (2.0 - kWgs84F);          // first eccentricity squared
constexpr double kEp2 = kE2 / ((1.0 - kWgs84F) * (1.0 - kWgs84F));  // second eccentricity squared


// Rows are the east, north and up unit vectors of the tangent plane at `origin`, in ECEF.
Eigen::Matrix3d EcefToEnuRotation(const Geodetic& origin) {
  const double sl = std::sin(origin.latitude_deg * kDegToRad), cl = std::cos(origin.latitude_deg * kDegToRad);
  const double so = std::sin(origin.longitude_deg * kDegToRad), co = std::cos(origin.longitude_deg * kDegToRad);
  Eigen::Matrix3d r;
  r << -so, co, 0.0,
       -sl * co, -sl * so, cl,
       cl * co, cl * so, sl;
  return r;
}

}  // namespace

Vec3 GeodeticToEcef(const Geodetic& g) {
  const double lat = g.latitude_deg * kDegToRad, lon = g.longitude_deg * kDegToRad;
  const double sl = std::sin(lat), cl = std::cos(lat);
  // Prime-vertical radius of curvature.
  const double n = kA / std::sqrt(1.0 - kE2 * sl * sl);
  return Vec3((n + g.altitude_m) * cl * std::cos(lon), (n + g.altitude_m) * cl * std::sin(lon),
              (n * (1.0 - kE2) + g.altitude_m) * sl);
}

Geodetic EcefToGeodetic(const Vec3& ecef_m) {
  // Heikkinen (1982) closed form, as given by Zhu (1993): no iteration, exact to double rounding near the surface.
  const double x = ecef_m.x(), y = ecef_m.y(), z = ecef_m.z();
  const double a2 = kA * kA, b2 = kB * kB;
  const double p2 = x * x + y * y;
  const double p = std::sqrt(p2);
  const double f = 54.0 * b2 * z * z;
  const double g = p2 + (1.0 - kE2) * z * z - kE2 * (a2 - b2);
  const double c = kE2 * kE2 * f * p2 / (g * g * g);
  const double s = std::cbrt(1.0 + c + std::sqrt(c * c + 2.0 * c));
  const double k = s + 1.0 + 1.0 / s;
  const double pp = f / (3.0 * k * k * g * g);
  const double q = std::sqrt(1.0 + 2.0 * kE2 * kE2 * pp);
  // The radicand can round below zero on the polar axis (p = 0), where it is exactly zero.
  const double radicand = std::max(0.0, 0.5 * a2 * (1.0 + 1.0 / q) - pp * (1.0 - kE2) * z * z / (q * (1.0 + q)) -
                                            0.5 * pp * p2);
  const double r0 = -pp * kE2 * p / (1.0 + q) + std::sqrt(radicand);
  const double t = p - kE2 * r0;
  const double u = std::sqrt(t * t + z * z);
  const double v = std::sqrt(t * t + (1.0 - kE2) * z * z);
  const double z0 = b2 * z / (kA * v);

  Geodetic out;
  out.altitude_m = u * (1.0 - b2 / (kA * v));
  out.latitude_deg = std::atan2(z + kEp2 * z0, p) * kRadToDeg;
  out.longitude_deg = std::atan2(y, x) * kRadToDeg;
  return out;
}

Vec3 EcefToEnu(const Vec3& ecef_m, const Geodetic& origin) {
  return EcefToEnuRotation(origin) * (ecef_m - GeodeticToEcef(origin));
}

Vec3 EnuToEcef(const Vec3& enu_m, const Geodetic& origin) {
  return GeodeticToEcef(origin) + EcefToEnuRotation(origin).transpose() * enu_m;
}

Geodetic LocalToGeodetic(const Vec3& enu_m, const Geodetic& origin) {
  return EcefToGeodetic(EnuToEcef(enu_m, origin));
}

Vec3 GeodeticToLocal(const Geodetic& g, const Geodetic& origin) { return EcefToEnu(GeodeticToEcef(g), origin); }

Geodetic FlatLocalToGeodetic(const Vec3& enu_m, const Geodetic& origin) {
  // Seed 003 prints cos(lat_0 * 180/pi) in eq. 4; the latitude must be in radians, i.e. cos(lat_0 * pi/180).
  Geodetic g;
  g.latitude_deg = enu_m.y() / kA * kRadToDeg + origin.latitude_deg;
  g.longitude_deg = enu_m.x() / (kA * std::cos(origin.latitude_deg * kDegToRad)) * kRadToDeg + origin.longitude_deg;
  g.altitude_m = origin.altitude_m + enu_m.z();
  return g;
}

GnssDef DefaultGnssDef() { return GnssDef{}; }

std::string ValidateGnssDef(const GnssDef& def) {
  // The first bad field wins; a message names it and the offending value.
  auto bad = [](const char* name, const char* rule, double v) {
    std::ostringstream os;
    os << "gnss." << name << " must be " << rule << ", got " << v;
    return os.str();
  };
  if (!(def.rate_hz > 0.0) || !std::isfinite(def.rate_hz)) return bad("rate_hz", "> 0", def.rate_hz);
  if (!(def.horizontal_sigma_m >= 0.0)) return bad("horizontal_sigma_m", ">= 0", def.horizontal_sigma_m);
  if (!(def.vertical_sigma_m >= 0.0)) return bad("vertical_sigma_m", ">= 0", def.vertical_sigma_m);
  if (!(def.velocity_sigma_mps >= 0.0)) return bad("velocity_sigma_mps", ">= 0", def.velocity_sigma_mps);
  if (!(std::abs(def.origin.latitude_deg) < 89.0))
    return bad("origin.latitude_deg", "within (-89, 89) (no polar tangent planes)", def.origin.latitude_deg);
  if (!(std::abs(def.origin.longitude_deg) <= 180.0))
    return bad("origin.longitude_deg", "within [-180, 180]", def.origin.longitude_deg);
  if (!(std::abs(def.origin.altitude_m) < 1.0e4)) return bad("origin.altitude_m", "within +-10 km", def.origin.altitude_m);
  return {};
}

GnssFix TrueGnssFix(const KinematicState& vehicle, const GnssDef& def) {
  const KinematicState antenna = MountPointKinematics(vehicle, def.mounting);
  GnssFix fix;
  fix.stamp_ns = vehicle.stamp_ns;
  // The world frame is the ENU tangent plane at the origin, shifted by origin_world_m.
  fix.position = LocalToGeodetic(antenna.pose.position_m - def.origin_world_m, def.origin);
  fix.velocity_enu_mps = antenna.velocity_mps;
  return fix;
}

GnssFix Measure(const KinematicState& vehicle, const GnssDef& def, std::mt19937_64& rng) {
  const KinematicState antenna = MountPointKinematics(vehicle, def.mounting);

  // Noise is added in the local tangent plane, where horizontal and vertical sigmas are defined.
  const Vec3 n = StandardNormal3(rng);
  const Vec3 pos_noise(def.horizontal_sigma_m * n.x(), def.horizontal_sigma_m * n.y(), def.vertical_sigma_m * n.z());
  const Vec3 vel_noise = def.velocity_sigma_mps * StandardNormal3(rng);

  GnssFix fix;
  fix.stamp_ns = vehicle.stamp_ns;
  fix.position = LocalToGeodetic(antenna.pose.position_m - def.origin_world_m + pos_noise, def.origin);
  fix.velocity_enu_mps = antenna.velocity_mps + vel_noise;
  fix.horizontal_sigma_m = def.horizontal_sigma_m;
  fix.vertical_sigma_m = def.vertical_sigma_m;
  return fix;
}

}  // namespace platoon::sensors
