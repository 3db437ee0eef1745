#include "platoon/viewer/vehicle_model.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::viewer {

VehicleLayout DefaultVehicleLayout() { return VehicleLayout{}; }

LocalBox EntityBox(const Vec3& size, const VehicleLayout& layout) {
  const double rear = layout.rear_overhang_fraction * size.x();
  return LocalBox{Vec3(-rear, -0.5 * size.y(), 0.0), Vec3(size.x() - rear, 0.5 * size.y(), size.z())};
}

bool HasWheels(protocol::EntityKind kind) {
  using K = protocol::EntityKind;
  return kind == K::kCar || kind == K::kTruck || kind == K::kMotorcycle || kind == K::kBicycle ||
         kind == K::kUnknown;
}

double WheelRadius(const Vec3& size, const VehicleLayout& layout) {
  // A wheel never takes more than a third of the height nor a quarter of the length.
  return std::min({layout.wheel_radius_fraction * size.z(), size.z() / 3.0, size.x() / 4.0});
}

LocalBox BodyBox(const Vec3& size, protocol::EntityKind kind, const VehicleLayout& layout) {
  LocalBox box = EntityBox(size, layout);
  if (!HasWheels(kind)) return box;
  const double lamp = std::min(layout.light_depth_m, 0.1 * size.x());
  const double inset = std::min(layout.wheel_inset_m, 0.2 * size.y());
  box.min_m += Vec3(lamp, inset, 0.5 * WheelRadius(size, layout));
  box.max_m -= Vec3(lamp, inset, 0.0);
  return box;
}

Vec3 WheelCentre(const Vec3& size, const VehicleLayout& layout, int i) {
  const double r = WheelRadius(size, layout);
  const double width = std::min(layout.wheel_width_m, 0.25 * size.y());
  const double x = (i >= 2) ? layout.wheelbase_fraction * size.x() : 0.0;
  const double y = (i % 2 == 0 ? 1.0 : -1.0) * (0.5 * size.y() - 0.5 * width);
  return Vec3(x, y, r);
}

Pose BoxCentreInWorld(const Pose& entity_world, const LocalBox& box) {
  Pose p;
  p.orientation = entity_world.orientation;
  p.position_m = entity_world.position_m + entity_world.orientation * box.Centre();
  return p;
}

Rgb EntityColour(uint64_t id) {
  // SplitMix64 finaliser: neighbouring ids get unrelated hues.
  uint64_t z = id + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  // Hue bands that keep clear of grass green (80-155 deg), sky blue (185-235 deg) and magenta (265-335 deg).
  static constexpr double kBands[][2] = {{0, 80}, {155, 185}, {235, 265}, {335, 360}};
  const double total = 80 + 30 + 30 + 25;
  double h = static_cast<double>(z % 10000) / 10000.0 * total;
  double hue = 0;
  for (const auto& band : kBands) {
    const double w = band[1] - band[0];
    if (h < w) {
      hue = band[0] + h;
      break;
    }
    h -= w;
  }
  const double s = 0.55 + 0.35 * static_cast<double>((z >> 20) % 100) / 100.0;
  const double v = 0.65 + 0.3 * static_cast<double>((z >> 40) % 100) / 100.0;
  // HSV -> RGB.
  const double c = v * s;
  const double hp = hue / 60.0;
  const double x = c * (1.0 - std::abs(std::fmod(hp, 2.0) - 1.0));
  double r = 0, g = 0, b = 0;
  if (hp < 1) r = c, g = x;
  else if (hp < 2) r = x, g = c;
  else if (hp < 3) g = c, b = x;
  else if (hp < 4) g = x, b = c;
  else if (hp < 5) r = x, b = c;
  else r = c, b = x;
  const double m = v - c;
  return Rgb{static_cast<float>(r + m), static_cast<float>(g + m), static_cast<float>(b + m)};
}

}  // namespace platoon::viewer
