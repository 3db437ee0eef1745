#pragma once
/// GNSS receiver: the antenna's world position mapped to WGS-84 latitude, longitude and ellipsoidal height,
/// plus Gaussian noise (docs/SENSORS.md, "GNSS").
///
/// platoon's world frame (x east, y north, z up) is taken to be the local ENU tangent plane at a configured
/// geodetic origin. World -> geodetic goes through ECEF:
///   ENU -> ECEF: X = X_0 + R^T * (e, n, u)                (R: ECEF-to-ENU rotation at the origin)
///   ECEF -> geodetic: closed form of Heikkinen (1982) / Zhu (1993), exact to well below a millimetre.
/// Seed 003 eq. 3-4 is the flat, spherical-Earth form of the same map (lat = dy / er + lat_0,
/// lon = dx / (er cos lat_0) + lon_0); it errs by ~0.2 % of the offset and ignores height. This is the exact form.

#include "platoon/geometry.hpp"
#include "platoon/sensors/mounting.hpp"

#include <cstdint>
#include <random>
#include <string>

namespace platoon::sensors {

/// WGS-84 semi-major axis a, in m.
inline constexpr double kWgs84A_m = 6378137.0;
/// WGS-84 flattening f.
inline constexpr double kWgs84F = 1.0 / 298.257223563;

/// A point given by WGS-84 geodetic coordinates.
struct Geodetic {
  double latitude_deg = 0.0;   ///< Geodetic latitude, in degrees, north positive, [-90, 90].
  double longitude_deg = 0.0;  ///< Longitude, in degrees, east positive, (-180, 180].
  double altitude_m = 0.0;     ///< Height above the WGS-84 ellipsoid, in m.
  bool operator==(const Geodetic&) const = default;
};

/// Geodetic -> Earth-centred Earth-fixed coordinates, in m.
Vec3 GeodeticToEcef(const Geodetic& g);
/// ECEF (m) -> geodetic, exact closed form (Heikkinen / Zhu). Valid away from the Earth's centre (|X| > 50 km).
Geodetic EcefToGeodetic(const Vec3& ecef_m);

/// ECEF point (m) -> local east, north, up (m) of the tangent plane at `origin`.
Vec3 EcefToEnu(const Vec3& ecef_m, const Geodetic& origin);
/// Local east, north, up (m) at `origin` -> ECEF (m).
Vec3 EnuToEcef(const Vec3& enu_m, const Geodetic& origin);

/// Local ENU (m) at `origin` -> geodetic.
Geodetic LocalToGeodetic(const Vec3& enu_m, const Geodetic& origin);
/// Geodetic -> local ENU (m) at `origin`.
Vec3 GeodeticToLocal(const Geodetic& g, const Geodetic& origin);

/// Seed 003 eq. 3-4, the flat spherical-Earth approximation (for comparison only; height passes through):
/// lat = dn / er * 180/pi + lat_0, lon = de / (er cos lat_0) * 180/pi + lon_0, er = kWgs84A_m.
Geodetic FlatLocalToGeodetic(const Vec3& enu_m, const Geodetic& origin);

/// Configuration of one GNSS receiver (read-only while the simulation runs).
struct GnssDef {
  double rate_hz = 10.0;                 ///< Fix rate, in Hz. Typical 1-20; seed 003's unit reaches 100.
  double horizontal_sigma_m = 1.5;       ///< Position noise sigma per horizontal axis (east, north), in m. SPS 1-3, RTK 0.01-0.03.
  double vertical_sigma_m = 3.0;         ///< Position noise sigma on up, in m. Typically 1.5-2x horizontal.
  double velocity_sigma_mps = 0.05;      ///< Velocity noise sigma per axis (ENU), in m/s. Typical 0.03-0.1.
  Geodetic origin{52.1670, 10.5490, 80.0};   ///< Geodetic point at the world-frame point `origin_world_m`.
  Vec3 origin_world_m = Vec3::Zero();        ///< World point that sits at `origin` (seed 003's P_0^VE), in m.
  Mounting mounting{Vec3(1.0, 0.0, 1.5), Quat::Identity()};  ///< Antenna phase centre on the vehicle (orientation unused).
};

/// Roof antenna at (1.0, 0, 1.5) m, 10 Hz, 1.5 m horizontal / 3 m vertical sigma, origin at Wolfenbüttel
/// (52.1670 N, 10.5490 E, 80 m), the site of seed 003's test system.
GnssDef DefaultGnssDef();

/// Checks a GnssDef; returns an empty string when valid, else a message naming the bad field.
std::string ValidateGnssDef(const GnssDef& def);

/// One GNSS output.
struct GnssFix {
  int64_t stamp_ns = 0;                 ///< Sim time of the fix, in ns (the vehicle state's stamp).
  Geodetic position;                    ///< Noisy antenna position, WGS-84.
  Vec3 velocity_enu_mps = Vec3::Zero(); ///< Noisy antenna velocity in local east, north, up, in m/s.
  double horizontal_sigma_m = 0.0;      ///< Sigma used for east/north, in m (what a receiver reports as accuracy).
  double vertical_sigma_m = 0.0;        ///< Sigma used for up, in m.
  bool operator==(const GnssFix&) const = default;
};

/// The antenna's true position and velocity (noise-free fix).
GnssFix TrueGnssFix(const KinematicState& vehicle, const GnssDef& def);

/// One fix: TrueGnssFix plus independent white Gaussian noise on east, north, up and on velocity.
/// Deterministic for a given rng state.
GnssFix Measure(const KinematicState& vehicle, const GnssDef& def, std::mt19937_64& rng);

}  // namespace platoon::sensors
