#include "platoon/viewer/vehicle_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

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
  // A wheel never takes more than a third of the height nor a quarter of the length, and fits in
  // either overhang.
  const double rear = layout.rear_overhang_fraction * size.x();
  const double front = (1.0 - layout.rear_overhang_fraction - layout.wheelbase_fraction) * size.x();
  return std::max(0.0, std::min({layout.wheel_radius_fraction * size.z(), layout.max_wheel_radius_m, size.z() / 3.0, size.x() / 4.0, rear, front}));
}

const char* ShapeName(VehicleShape shape) {
  switch (shape) {
    case VehicleShape::kCar: return "car";
    case VehicleShape::kVan: return "van";
    case VehicleShape::kTruck: return "truck";
    case VehicleShape::kBus: return "bus";
    case VehicleShape::kMotorcycle: return "motorcycle";
    case VehicleShape::kBicycle: return "bicycle";
    case VehicleShape::kPedestrian: return "pedestrian";
    case VehicleShape::kBlock: return "block";
  }
  return "block";
}

VehicleShape ShapeOf(protocol::EntityKind kind, const Vec3& size) {
  using K = protocol::EntityKind;
  switch (kind) {
    case K::kTruck: return size.x() > kBusMinLengthM ? VehicleShape::kTruck : VehicleShape::kVan;
    case K::kMotorcycle: return VehicleShape::kMotorcycle;
    case K::kBicycle: return VehicleShape::kBicycle;
    case K::kPedestrian: return VehicleShape::kPedestrian;
    case K::kStaticObject: return VehicleShape::kBlock;
    case K::kCar:
    case K::kUnknown: break;
  }
  if (size.x() > kBusMinLengthM) return VehicleShape::kBus;
  if (size.z() > kVanMinHeightM) return VehicleShape::kVan;
  return VehicleShape::kCar;
}

bool IsLamp(PartRole role) { return role >= PartRole::kHeadlamp; }

Solid BoxSolid(const LocalBox& box, PartRole role) {
  Solid s;
  s.role = role;
  for (int k = 0; k < 8; ++k)
    s.corner_m[k] = Vec3((k & 1) ? box.max_m.x() : box.min_m.x(), (k & 2) ? box.max_m.y() : box.min_m.y(),
                         (k & 4) ? box.max_m.z() : box.min_m.z());
  return s;
}

LocalBox PartsBounds(const VehicleModel& model, PartRole role) {
  LocalBox b{Vec3::Constant(std::numeric_limits<double>::infinity()), Vec3::Constant(-std::numeric_limits<double>::infinity())};
  bool any = false;
  for (const Solid& s : model.parts) {
    if (s.role != role) continue;
    any = true;
    for (const Vec3& c : s.corner_m) {
      b.min_m = b.min_m.cwiseMin(c);
      b.max_m = b.max_m.cwiseMax(c);
    }
  }
  return any ? b : LocalBox{};
}

namespace vehicle_model_detail {

// A hexahedron symmetric about y = yc: bottom face x in [xb0, xb1] with half width hb at z0, top face
// x in [xt0, xt1] with half width ht at z1 (a box when the two faces match).
Solid Frustum(double xb0, double xb1, double xt0, double xt1, double yc, double hb, double ht, double z0, double z1,
              PartRole role) {
  Solid s;
  s.role = role;
  for (int k = 0; k < 8; ++k) {
    const bool top = k & 4;
    const double x = top ? ((k & 1) ? xt1 : xt0) : ((k & 1) ? xb1 : xb0);
    const double h = top ? ht : hb;
    s.corner_m[k] = Vec3(x, yc + ((k & 2) ? h : -h), top ? z1 : z0);
  }
  return s;
}

Solid Box(double x0, double x1, double y0, double y1, double z0, double z1, PartRole role) {
  return BoxSolid(LocalBox{Vec3(x0, y0, z0), Vec3(x1, y1, z1)}, role);
}

// A thin slab laid on face (axis, side) of `s`: the part of the face between fractions [a0, a1] and
// [b0, b1] of its two other axes (in x, y, z order), `thickness` m thick outwards. Windows, doors,
// bumpers.
Solid Panel(const Solid& s, int axis, int side, double a0, double a1, double b0, double b1, double thickness,
            PartRole role) {
  const int ua = axis == 0 ? 1 : 0, ub = axis == 2 ? 1 : 2;
  auto face = [&](int ia, int ib) -> Vec3 {
    int k = 0;
    if (side) k |= 1 << axis;
    if (ia) k |= 1 << ua;
    if (ib) k |= 1 << ub;
    return s.corner_m[k];
  };
  auto at = [&](double fa, double fb) -> Vec3 {
    return (1 - fa) * (1 - fb) * face(0, 0) + fa * (1 - fb) * face(1, 0) + (1 - fa) * fb * face(0, 1) + fa * fb * face(1, 1);
  };
  // Outward normal of the face: across its diagonals, turned away from the solid's centre.
  Vec3 n = (face(1, 1) - face(0, 0)).cross(face(0, 1) - face(1, 0)).normalized();
  Vec3 centre = Vec3::Zero();
  for (const Vec3& c : s.corner_m) centre += c / 8.0;
  if (n.dot(at(0.5, 0.5) - centre) < 0) n = -n;
  Solid p;
  p.role = role;
  for (int k = 0; k < 8; ++k) {
    const double fa = (k >> ua) & 1 ? a1 : a0, fb = (k >> ub) & 1 ? b1 : b0;
    const bool outer = ((k >> axis) & 1) == side;
    p.corner_m[k] = at(fa, fb) + (outer ? thickness : 0.0) * n;
  }
  return p;
}

// Head, tail, reverse and turn lamps at both ends: front lamps in the slab x in [xf0, xf1], rear ones
// in [xr0, xr1]; the outer lamp edge at |y| = y_outer, head and tail lamps lamp_w x lamp_h with their
// top at z_top, turn lamps below them, reverse lamps inboard of the tail lamps.
void AddCornerLamps(std::vector<Solid>& out, double xf0, double xf1, double xr0, double xr1, double y_outer, double lamp_w,
                    double z_top, double lamp_h, bool reverse) {
  for (int side = -1; side <= 1; side += 2) {
    const PartRole turn = side > 0 ? PartRole::kIndicatorLeft : PartRole::kIndicatorRight;
    auto span = [&](double from_outer, double to_outer) {
      const double a = side * (y_outer - from_outer), b = side * (y_outer - to_outer);
      return std::pair{std::min(a, b), std::max(a, b)};
    };
    const auto [y0, y1] = span(0.0, lamp_w);
    const auto [i0, i1] = span(0.0, 0.6 * lamp_w);
    out.push_back(Box(xf0, xf1, y0, y1, z_top - lamp_h, z_top, PartRole::kHeadlamp));
    out.push_back(Box(xr0, xr1, y0, y1, z_top - lamp_h, z_top, PartRole::kTailLamp));
    out.push_back(Box(xf0, xf1, i0, i1, z_top - 1.75 * lamp_h, z_top - 1.1 * lamp_h, turn));
    out.push_back(Box(xr0, xr1, i0, i1, z_top - 1.75 * lamp_h, z_top - 1.1 * lamp_h, turn));
    if (reverse) {
      const auto [r0, r1] = span(1.05 * lamp_w, 1.55 * lamp_w);
      out.push_back(Box(xr0, xr1, r0, r1, z_top - lamp_h, z_top, PartRole::kReverseLamp));
    }
  }
}

// A person standing with feet at z0 and the head's top at z1, centred at (xc, yc), depth `depth` and
// shoulder width `width` (m): legs, torso in the body colour, arms, head with hair.
void AddPerson(std::vector<Solid>& out, double xc, double yc, double depth, double width, double z0, double z1) {
  const double h = z1 - z0;
  const double hd = 0.5 * depth, hw = 0.5 * width;
  const double hip = z0 + 0.47 * h, shoulder = z0 + 0.82 * h, chin = z0 + 0.85 * h;
  for (int side = -1; side <= 1; side += 2)
    out.push_back(Box(xc - 0.55 * hd, xc + 0.55 * hd, yc + side * 0.42 * hw - 0.2 * hw, yc + side * 0.42 * hw + 0.2 * hw, z0, hip,
                      PartRole::kClothes));
  out.push_back(Frustum(xc - 0.7 * hd, xc + 0.7 * hd, xc - 0.75 * hd, xc + 0.75 * hd, yc, 0.62 * hw, 0.72 * hw, hip, shoulder,
                        PartRole::kBody));
  for (int side = -1; side <= 1; side += 2) {
    const double ya = yc + side * 0.86 * hw;
    out.push_back(Box(xc - 0.35 * hd, xc + 0.35 * hd, ya - 0.14 * hw, ya + 0.14 * hw, z0 + 0.5 * h, shoulder, PartRole::kClothes));
    out.push_back(Box(xc - 0.3 * hd, xc + 0.3 * hd, ya - 0.12 * hw, ya + 0.12 * hw, z0 + 0.44 * h, z0 + 0.5 * h, PartRole::kSkin));
  }
  const double head_hd = std::min(0.6 * hd, 0.11), head_hw = std::min(0.3 * hw, 0.09);
  out.push_back(Box(xc - head_hd, xc + head_hd, yc - head_hw, yc + head_hw, chin, z1 - 0.01 * h, PartRole::kSkin));
  out.push_back(Box(xc - head_hd - 0.01, xc + 0.4 * head_hd, yc - head_hw - 0.01, yc + head_hw + 0.01, z0 + 0.94 * h, z1,
                    PartRole::kHair));
}

// A seated rider of a two-wheeler: hips at (x_hip, z_seat), hands at (x_hand, z_hand), head top at z1.
void AddRider(std::vector<Solid>& out, double x_hip, double z_seat, double x_foot, double z_foot, double x_hand, double z_hand,
              double z1, double width, double depth) {
  const double hw = 0.5 * width, hd = 0.5 * depth;
  const double h = z1 - z_seat;
  const double x_shoulder = x_hip + 0.35 * h, z_shoulder = z_seat + 0.62 * h;
  // Legs: from the seat down to the foot rests or pedals, one each side.
  for (int side = -1; side <= 1; side += 2) {
    const double y = side * 0.55 * hw;
    out.push_back(Frustum(x_foot - 0.6 * hd, x_foot + 0.6 * hd, x_hip - 0.6 * hd, x_hip + 0.6 * hd, y, 0.22 * hw, 0.25 * hw,
                          z_foot, z_seat + 0.05 * h, PartRole::kClothes));
  }
  // Torso leaning forwards to the shoulders.
  out.push_back(Frustum(x_hip - hd, x_hip + hd, x_shoulder - 0.8 * hd, x_shoulder + 0.8 * hd, 0.0, 0.7 * hw, 0.85 * hw,
                        z_seat, z_shoulder, PartRole::kBody));
  // Arms from the shoulders down to the handlebar.
  for (int side = -1; side <= 1; side += 2) {
    const double y = side * 0.85 * hw;
    out.push_back(Frustum(x_hand - 0.05, x_hand + 0.05, x_shoulder - 0.05, x_shoulder + 0.05, y, 0.12 * hw, 0.12 * hw, z_hand,
                          z_shoulder - 0.02 * h, PartRole::kClothes));
  }
  // Head (helmet).
  const double head = std::min(0.13, 0.5 * (z1 - z_shoulder));
  out.push_back(Box(x_shoulder - head, x_shoulder + head, -0.8 * head, 0.8 * head, z_shoulder + 0.02 * h, z1, PartRole::kHair));
}

}  // namespace vehicle_model_detail

VehicleModel BuildVehicleModel(protocol::EntityKind kind, const Vec3& size, const VehicleLayout& layout) {
  using namespace vehicle_model_detail;
  using R = PartRole;
  VehicleModel m;
  m.shape = ShapeOf(kind, size);
  const LocalBox whole = EntityBox(size, layout);
  const double L = size.x(), W = size.y(), H = size.z();
  const double x0 = whole.min_m.x(), x1 = whole.max_m.x();
  const double d = std::min(layout.light_depth_m, 0.1 * L);       // lamp slab at each end
  const double hw = 0.5 * W - std::min(layout.wheel_inset_m, 0.2 * W);  // half width of the painted body
  const double r = WheelRadius(size, layout);
  const double c = 0.5 * r;                                        // clearance under the body
  const double wbx = layout.wheelbase_fraction * L;                // front axle
  auto four_wheels = [&] {
    const double width = std::min(layout.wheel_width_m, 0.25 * W);
    for (int i = 0; i < 4; ++i)
      m.wheels.push_back(WheelSpec{Vec3(i >= 2 ? wbx : 0.0, (i % 2 == 0 ? 1.0 : -1.0) * (0.5 * W - 0.5 * width), r), r, width});
  };
  auto two_wheels = [&](double width) {
    for (double x : {0.0, wbx}) m.wheels.push_back(WheelSpec{Vec3(x, 0.0, r), r, width});
  };
  const double glass = 0.012;  // windows stand this far proud of the body, in m
  switch (m.shape) {
    case VehicleShape::kCar: {
      // Lower body with bumpers, greenhouse (cabin) with a sloping windscreen and rear window over the
      // bonnet and the boot, side windows split by a B-pillar.
      const double belt = 0.52 * H;
      const Solid lower = Box(x0 + d, x1 - d, -hw, hw, c, belt, R::kBody);
      const Solid cabin = Frustum(x0 + 0.12 * L, x1 - 0.30 * L, x0 + 0.22 * L, x1 - 0.42 * L, 0.0, hw - 0.03 * W,
                                  hw - 0.1 * W, belt, H, R::kBody);
      m.parts = {lower, cabin};
      m.hull_parts = m.parts.size();
      for (int side = 0; side < 2; ++side) {
        m.parts.push_back(Panel(cabin, 1, side, 0.08, 0.92, 0.12, 0.85, glass, R::kGlass));
        m.parts.push_back(Panel(cabin, 1, side, 0.47, 0.53, 0.1, 0.88, 2 * glass, R::kBody));
        m.parts.push_back(Panel(cabin, 0, side, 0.06, 0.94, 0.1, 0.88, glass, R::kGlass));
        m.parts.push_back(Panel(lower, 0, side, 0.02, 0.98, 0.0, 0.3, 0.5 * d, R::kTrim));
      }
      AddCornerLamps(m.parts, x1 - d, x1, x0, x0 + d, hw - 0.02, 0.2 * W, belt - 0.02 * H, 0.1 * H, true);
      four_wheels();
      break;
    }
    case VehicleShape::kVan: {
      // Tall box with a short sloping bonnet, a windscreen and front side windows, rear door windows.
      const double belt = 0.42 * H;
      const Solid lower = Box(x0 + d, x1 - d, -hw, hw, c, belt, R::kBody);
      const Solid upper = Frustum(x0 + d, x1 - 0.14 * L, x0 + d, x1 - 0.3 * L, 0.0, hw, hw - 0.04 * W, belt, H, R::kBody);
      m.parts = {lower, upper};
      m.hull_parts = m.parts.size();
      for (int side = 0; side < 2; ++side) {
        m.parts.push_back(Panel(upper, 1, side, 0.74, 0.96, 0.1, 0.8, glass, R::kGlass));
        m.parts.push_back(Panel(lower, 0, side, 0.02, 0.98, 0.0, 0.3, 0.5 * d, R::kTrim));
      }
      m.parts.push_back(Panel(upper, 0, 1, 0.05, 0.95, 0.08, 0.85, glass, R::kGlass));
      m.parts.push_back(Panel(upper, 0, 0, 0.08, 0.47, 0.15, 0.6, glass, R::kGlass));
      m.parts.push_back(Panel(upper, 0, 0, 0.53, 0.92, 0.15, 0.6, glass, R::kGlass));
      AddCornerLamps(m.parts, x1 - d, x1, x0, x0 + d, hw - 0.02, 0.2 * W, belt - 0.03 * H, 0.07 * H, true);
      four_wheels();
      break;
    }
    case VehicleShape::kTruck: {
      // Cab at the front (windscreen, side windows, bumper), chassis rails, cargo box behind it.
      const double cab_len = std::min(2.4, 0.25 * L);
      const double cab_back = x1 - cab_len;
      const double cab_belt = 0.45 * H, cab_top = 0.8 * H;
      const double floor = std::min(2.0 * r * 0.85, 0.4 * H);
      const Solid cab_lower = Box(cab_back, x1 - d, -hw, hw, c, cab_belt, R::kBody);
      const Solid cab_upper = Frustum(cab_back, x1 - d, cab_back, x1 - d - 0.06 * cab_len, 0.0, hw, hw - 0.02 * W, cab_belt,
                                      cab_top, R::kBody);
      m.parts = {cab_lower, cab_upper};
      m.parts.push_back(Box(x0 + d, cab_back - 0.05 * cab_len, -hw, hw, floor, H, R::kCargo));
      m.hull_parts = m.parts.size();
      m.parts.push_back(Box(x0 + d, cab_back, -0.7 * hw, 0.7 * hw, c, floor, R::kTrim));
      m.parts.push_back(Panel(cab_upper, 0, 1, 0.05, 0.95, 0.1, 0.88, glass, R::kGlass));
      m.parts.push_back(Panel(cab_lower, 0, 1, 0.02, 0.98, 0.0, 0.35, 0.5 * d, R::kTrim));
      for (int side = 0; side < 2; ++side) m.parts.push_back(Panel(cab_upper, 1, side, 0.5, 0.93, 0.1, 0.85, glass, R::kGlass));
      // Front lamps in the cab's bumper line, rear lamps under the cargo box's tail.
      const double lamp_h = 0.05 * H;
      const double z_front = c + 0.75 * (cab_belt - c);
      const double z_rear = floor - 0.01 * H;
      std::vector<Solid> front, rear;
      AddCornerLamps(front, x1 - d, x1, x0, x0 + d, hw - 0.02, 0.18 * W, z_front, lamp_h, true);
      AddCornerLamps(rear, x1 - d, x1, x0, x0 + d, hw - 0.02, 0.18 * W, z_rear, lamp_h, true);
      for (const Solid& s : front)
        if (s.corner_m[0].x() > 0) m.parts.push_back(s);
      for (const Solid& s : rear)
        if (s.corner_m[0].x() < 0) m.parts.push_back(s);
      four_wheels();
      break;
    }
    case VehicleShape::kBus: {
      // One long box with a band of side windows, a deep windscreen, a rear window and a door.
      const Solid body = Box(x0 + d, x1 - d, -hw, hw, c, H, R::kBody);
      m.parts = {body};
      m.hull_parts = m.parts.size();
      for (int side = 0; side < 2; ++side) m.parts.push_back(Panel(body, 1, side, 0.04, 0.88, 0.5, 0.88, glass, R::kGlass));
      m.parts.push_back(Panel(body, 1, 0, 0.9, 0.97, 0.03, 0.88, glass, R::kGlass));  // door, right side
      m.parts.push_back(Panel(body, 0, 1, 0.04, 0.96, 0.35, 0.92, glass, R::kGlass));
      m.parts.push_back(Panel(body, 0, 0, 0.1, 0.9, 0.6, 0.88, glass, R::kGlass));
      for (int side = 0; side < 2; ++side) m.parts.push_back(Panel(body, 0, side, 0.02, 0.98, 0.0, 0.08, 0.5 * d, R::kTrim));
      AddCornerLamps(m.parts, x1 - d, x1, x0, x0 + d, hw - 0.02, 0.15 * W, c + 0.22 * H, 0.05 * H, true);
      four_wheels();
      break;
    }
    case VehicleShape::kMotorcycle: {
      two_wheels(std::min(0.16, 0.25 * W));
      const double k = std::min(1.0, H / 1.4);  // heights scale with the box up to a 1.4 m rider's
      const double seat = std::max(2.0 * r, 0.78 * k);
      // Engine between the wheels, tank and seat above, fork up to the handlebar, rear fender.
      m.parts.push_back(Frustum(0.25 * wbx, 0.75 * wbx, 0.2 * wbx, 0.8 * wbx, 0.0, 0.16 * W, 0.18 * W, 0.6 * r, 1.7 * r, R::kTrim));
      m.parts.push_back(Frustum(0.5 * wbx, 0.85 * wbx, 0.5 * wbx, 0.75 * wbx, 0.0, 0.15 * W, 0.12 * W, 1.7 * r, seat + 0.08 * k, R::kBody));
      m.parts.push_back(Box(0.1 * wbx, 0.5 * wbx, -0.13 * W, 0.13 * W, 1.7 * r, seat, R::kTrim));
      m.parts.push_back(Frustum(-0.25 * r, 0.4 * wbx, -0.1 * r, 0.1 * wbx, 0.0, 0.1 * W, 0.1 * W, 1.6 * r, 1.9 * r, R::kBody));
      m.parts.push_back(Frustum(wbx - 0.04, wbx + 0.04, 0.86 * wbx - 0.04, 0.86 * wbx + 0.04, 0.0, 0.08 * W, 0.08 * W, r,
                                seat + 0.2 * k, R::kTrim));
      m.parts.push_back(Box(0.82 * wbx, 0.9 * wbx, -0.45 * W, 0.45 * W, seat + 0.2 * k, seat + 0.24 * k, R::kTrim));
      AddRider(m.parts, 0.3 * wbx, seat, 0.45 * wbx, 0.9 * r, 0.86 * wbx, seat + 0.22 * k, H, 0.9 * W, 0.3);
      // Lamps: one head and one tail lamp on the centre line, turn lamps on stalks either side.
      const double fx = std::min(x1, 0.86 * wbx + 0.2), tx = std::max(x0, -0.25 * r - 0.06);
      m.parts.push_back(Box(fx - 0.06, fx, -0.09, 0.09, seat + 0.02 * k, seat + 0.14 * k, R::kHeadlamp));
      m.parts.push_back(Box(tx, tx + 0.06, -0.08, 0.08, 1.9 * r - 0.08, 1.9 * r, R::kTailLamp));
      for (int side = -1; side <= 1; side += 2) {
        const PartRole turn = side > 0 ? R::kIndicatorLeft : R::kIndicatorRight;
        const double y0 = side > 0 ? 0.12 : -0.24, y1 = side > 0 ? 0.24 : -0.12;
        m.parts.push_back(Box(fx - 0.08, fx - 0.02, std::max(y0, -0.5 * W), std::min(y1, 0.5 * W), seat, seat + 0.06 * k, turn));
        m.parts.push_back(Box(tx, tx + 0.06, std::max(y0, -0.5 * W), std::min(y1, 0.5 * W), 1.9 * r - 0.07, 1.9 * r - 0.01, turn));
      }
      break;
    }
    case VehicleShape::kBicycle: {
      two_wheels(std::min(0.05, 0.1 * W));
      const double t = 0.02;  // tube half thickness, in m
      const double bb = 0.4 * wbx, head = 0.9 * wbx, saddle_x = 0.3 * wbx;
      const double bar_z = std::min(2.8 * r, 0.6 * H), saddle_z = std::min(2.7 * r, 0.57 * H);
      // Frame: chain stay, seat stay, seat tube, down tube, top tube, fork; saddle and handlebar.
      m.parts.push_back(Box(0.0, bb, -t, t, r - t, r + t, R::kBody));
      m.parts.push_back(Frustum(-t, t, saddle_x - t, saddle_x + t, 0.0, t, t, r, saddle_z - 0.1, R::kBody));
      m.parts.push_back(Frustum(bb - t, bb + t, saddle_x - t, saddle_x + t, 0.0, t, t, r, saddle_z, R::kBody));
      m.parts.push_back(Frustum(bb - t, bb + t, head - t, head + t, 0.0, t, t, r, bar_z - 0.12, R::kBody));
      m.parts.push_back(Box(saddle_x, head, -t, t, saddle_z - 0.12, saddle_z - 0.08, R::kBody));
      m.parts.push_back(Frustum(wbx - t, wbx + t, head - t, head + t, 0.0, t, t, r, bar_z, R::kTrim));
      m.parts.push_back(Box(saddle_x - 0.1, saddle_x + 0.08, -0.06, 0.06, saddle_z, saddle_z + 0.04, R::kTrim));
      m.parts.push_back(Box(head - 0.03, head + 0.03, -0.4 * W, 0.4 * W, bar_z, bar_z + 0.03, R::kTrim));
      AddRider(m.parts, saddle_x, saddle_z + 0.04, bb, 0.8 * r, head, bar_z + 0.03, H, 0.7 * W, 0.24);
      // A white lamp on the handlebar, a red one under the saddle.
      m.parts.push_back(Box(head + 0.03, head + 0.09, -0.04, 0.04, bar_z - 0.06, bar_z, R::kHeadlamp));
      m.parts.push_back(Box(saddle_x - 0.14, saddle_x - 0.1, -0.04, 0.04, saddle_z - 0.06, saddle_z, R::kTailLamp));
      break;
    }
    case VehicleShape::kPedestrian:
      AddPerson(m.parts, 0.5 * (x0 + x1), 0.0, 0.9 * L, 0.8 * W, 0.0, H);
      break;
    case VehicleShape::kBlock: m.parts.push_back(BoxSolid(whole, R::kBody)); break;
  }
  return m;
}

VehicleModel BuildFarVehicleModel(const VehicleModel& full) {
  VehicleModel far;
  far.shape = full.shape;
  if (full.hull_parts == 0) return far;
  far.parts.assign(full.parts.begin(), full.parts.begin() + static_cast<std::ptrdiff_t>(std::min(full.hull_parts, full.parts.size())));
  far.hull_parts = far.parts.size();
  // One dark box per axle (the pair of wheels at one x): tread to tread across, up to the axle.
  std::vector<WheelSpec> axles;
  for (const WheelSpec& w : full.wheels) {
    auto it = std::find_if(axles.begin(), axles.end(), [&](const WheelSpec& a) { return std::abs(a.centre_m.x() - w.centre_m.x()) < 1e-9; });
    const double y0 = w.centre_m.y() - 0.5 * w.width_m, y1 = w.centre_m.y() + 0.5 * w.width_m;
    if (it == axles.end()) {
      axles.push_back(WheelSpec{Vec3(w.centre_m.x(), y0, y1), w.radius_m, 0.0});
    } else {
      it->centre_m.y() = std::min(it->centre_m.y(), y0);
      it->centre_m.z() = std::max(it->centre_m.z(), y1);
      it->radius_m = std::max(it->radius_m, w.radius_m);
    }
  }
  for (const WheelSpec& a : axles) {
    LocalBox b;
    b.min_m = Vec3(a.centre_m.x() - a.radius_m, a.centre_m.y(), 0.0);
    b.max_m = Vec3(a.centre_m.x() + a.radius_m, a.centre_m.z(), a.radius_m);
    far.parts.push_back(BoxSolid(b, PartRole::kTyre));
  }
  // Lamps flattened onto their outer end face (front lamps at their largest x, rear ones at their
  // smallest): the side faces vanish (AddSolid skips faces shrunk to a line), 8 vertices a lamp, not 24.
  for (Solid s : full.parts) {
    if (!IsLamp(s.role)) continue;
    double lo = s.corner_m[0].x(), hi = lo, mid = 0.0;
    for (const Vec3& p : s.corner_m) lo = std::min(lo, p.x()), hi = std::max(hi, p.x()), mid += p.x() / 8.0;
    const double face = mid > 0.0 ? hi : lo;
    for (Vec3& p : s.corner_m) p.x() = face;
    far.parts.push_back(s);
  }
  return far;
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
