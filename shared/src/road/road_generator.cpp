#include "platoon/road/road_generator.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <sstream>

namespace platoon::road {

RoadGeneratorDef DefaultRoadGeneratorDef() { return RoadGeneratorDef{}; }

std::string ValidateRoadGeneratorDef(const RoadGeneratorDef& d) {
  auto range = [](const char* name, double lo, double hi, double min) -> std::string {
    std::ostringstream os;
    if (!(lo >= min) || !(hi >= lo) || !std::isfinite(hi))
      os << name << ": expected " << min << " <= min <= max, got [" << lo << ", " << hi << "]";
    return os.str();
  };
  if (!(d.straight_probability >= 0 && d.straight_probability <= 1)) return "straight_probability must be in [0, 1]";
  if (!(d.left_turn_probability >= 0 && d.left_turn_probability <= 1)) return "left_turn_probability must be in [0, 1]";
  if (auto e = range("straight_length_m", d.straight_length_min_m, d.straight_length_max_m, 1.0); !e.empty()) return e;
  if (auto e = range("arc_length_m", d.arc_length_min_m, d.arc_length_max_m, 1.0); !e.empty()) return e;
  if (auto e = range("curvature_1pm", d.curvature_min_1pm, d.curvature_max_1pm, 0.0); !e.empty()) return e;
  if (d.curvature_max_1pm > 1.0) return "curvature_max_1pm must be <= 1 (radius >= 1 m)";
  if (!(d.curvature_shape > 0) || !std::isfinite(d.curvature_shape)) return "curvature_shape must be > 0";
  if (!(d.max_curvature_rate_1pm2 > 0) || !std::isfinite(d.max_curvature_rate_1pm2))
    return "max_curvature_rate_1pm2 must be > 0";
  if (!(d.transition_min_length_m > 0) || !std::isfinite(d.transition_min_length_m))
    return "transition_min_length_m must be > 0";
  RoadDef layout = d.layout;
  layout.sections = {LineSection(1.0)};
  if (auto e = ValidateRoadDef(layout); !e.empty()) return "layout: " + e;
  return {};
}

RoadGenerator::RoadGenerator(const RoadGeneratorDef& def) : def_(def), rng_(def.seed) {
  assert(ValidateRoadGeneratorDef(def_).empty());
}

double RoadGenerator::Uniform(double lo, double hi) {
  // 53 random bits to [0, 1): identical on every standard library, unlike std::uniform_real_distribution.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

std::vector<SectionDef> RoadGenerator::Next(double length_m) {
  std::vector<SectionDef> out;
  double made = 0.0;
  while (made < length_m) {
    // Draw the next element: a straight, or a curve with its side and curvature (eq. 11).
    double k = 0.0, len = 0.0;
    if (Uniform(0, 1) < def_.straight_probability) {
      len = Uniform(def_.straight_length_min_m, def_.straight_length_max_m);
    } else {
      const double u = std::pow(Uniform(0, 1), def_.curvature_shape);
      const double sign = Uniform(0, 1) < def_.left_turn_probability ? 1.0 : -1.0;
      k = sign * (def_.curvature_min_1pm + (def_.curvature_max_1pm - def_.curvature_min_1pm) * u);
      len = Uniform(def_.arc_length_min_m, def_.arc_length_max_m);
    }
    // Clothoid transition from the current curvature, no steeper than the configured rate (eq. 12).
    const double dk = k - curvature_1pm_;
    if (dk != 0.0) {
      const double lt = std::max(def_.transition_min_length_m, std::abs(dk) / def_.max_curvature_rate_1pm2);
      out.push_back(ClothoidSection(lt, curvature_1pm_, k));
      made += lt;
    }
    out.push_back(k == 0.0 ? LineSection(len) : ArcSection(len, k));
    made += len;
    curvature_1pm_ = k;
  }
  generated_m_ += made;
  return out;
}

RoadDef GenerateRoad(const RoadGeneratorDef& def, double length_m) {
  RoadGenerator gen(def);
  RoadDef road = def.layout;
  road.sections = gen.Next(length_m);
  return road;
}

std::vector<RoadDef> GenerateRoadChain(const RoadGeneratorDef& def, int count, double length_m, int first_id) {
  RoadGenerator gen(def);
  std::vector<RoadDef> defs;
  for (int k = 0; k < count; ++k) {
    RoadDef d = def.layout;
    d.id = first_id + k;
    d.sections = gen.Next(length_m);
    if (k > 0) {
      const Road prev(defs.back());
      const RoadPoint end = prev.Evaluate(prev.Length());
      d.start_x_m = end.position_m.x();
      d.start_y_m = end.position_m.y();
      d.start_heading_rad = end.heading_rad;
      d.predecessor_id = defs.back().id;
      defs.back().successor_id = d.id;
    }
    defs.push_back(d);
  }
  return defs;
}

}  // namespace platoon::road
