#include "platoon/sensors/object_list.hpp"

#include "platoon/sensors/noise.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <iterator>

namespace platoon::sensors {

namespace {

constexpr std::string_view kClassNames[] = {"unclassified", "car", "truck", "motorbike", "bicycle", "pedestrian"};

bool NonNegative(const Vec3& v) { return v.allFinite() && v.minCoeff() >= 0.0; }

}  // namespace

std::string_view ObjectClassName(ObjectClass c) {
  const auto i = static_cast<size_t>(c);
  return i < std::size(kClassNames) ? kClassNames[i] : "unclassified";
}

std::optional<ObjectClass> ObjectClassFromName(std::string_view name) {
  for (size_t i = 0; i < std::size(kClassNames); ++i)
    if (kClassNames[i] == name) return static_cast<ObjectClass>(i);
  return std::nullopt;
}

std::vector<std::string> ObjectClassNames() { return {std::begin(kClassNames), std::end(kClassNames)}; }

ObjectClass ObjectClassOf(protocol::EntityKind kind) {
  switch (kind) {
    case protocol::EntityKind::kCar: return ObjectClass::kCar;
    case protocol::EntityKind::kTruck: return ObjectClass::kTruck;
    case protocol::EntityKind::kMotorcycle: return ObjectClass::kMotorbike;
    case protocol::EntityKind::kBicycle: return ObjectClass::kBicycle;
    case protocol::EntityKind::kPedestrian: return ObjectClass::kPedestrian;
    default: return ObjectClass::kUnclassified;
  }
}

ObjectListDef DefaultObjectListDef() { return ObjectListDef{}; }

std::string ValidateObjectListDef(const ObjectListDef& def) {
  const auto& f = def.fov;
  if (!(std::isfinite(f.range_min_m) && f.range_min_m >= 0.0)) return "fov.range_min_m must be >= 0";
  if (!(std::isfinite(f.range_max_m) && f.range_max_m > f.range_min_m))
    return "fov.range_max_m must be > range_min_m (" + std::to_string(f.range_min_m) + ")";
  if (!(f.azimuth_half_rad > 0.0 && f.azimuth_half_rad <= M_PI)) return "fov.azimuth_half_rad must be in (0, pi]";
  auto probability_ok = [](double p) { return p >= 0.0 && p <= 1.0; };
  if (!probability_ok(def.detection.default_probability)) return "detection.default_probability must be in [0, 1]";
  for (const auto& [c, p] : def.detection.probability)
    if (!probability_ok(p)) return "detection.probability[" + std::string(ObjectClassName(c)) + "] must be in [0, 1]";
  const auto& n = def.noise;
  if (!NonNegative(n.position_sigma_m) || !NonNegative(n.position_offset_sigma_m) || !NonNegative(n.velocity_sigma_mps) ||
      !NonNegative(n.velocity_offset_sigma_mps))
    return "noise sigmas must be finite and >= 0";
  for (const auto& r : def.classes.rules)
    if (!(std::isfinite(r.length_threshold_m) && std::isfinite(r.width_threshold_m)))
      return "classes.rules: thresholds must be finite";
  if (!(std::isfinite(def.rate_hz) && def.rate_hz > 0.0)) return "rate_hz must be > 0";
  return "";
}

void FieldOfViewModule::Apply(std::vector<SensedObject>& objects, const std::vector<SensedObject>&,
                              std::mt19937_64&) {
  std::erase_if(objects, [this](const SensedObject& o) {
    const double r = o.position_m.norm();
    const double az = std::atan2(o.position_m.y(), o.position_m.x());
    return r < def_.range_min_m || r > def_.range_max_m || std::abs(az) > def_.azimuth_half_rad;
  });
}

void DetectionModule::Apply(std::vector<SensedObject>& objects, const std::vector<SensedObject>&,
                            std::mt19937_64& rng) {
  // One draw per object, whatever its probability, so the stream does not depend on the configuration.
  std::erase_if(objects, [this, &rng](const SensedObject& o) {
    const auto it = def_.probability.find(o.truth_class);
    const double p = it != def_.probability.end() ? it->second : def_.default_probability;
    return UniformOpenZero(rng) > p;  // u in (0, 1]: p = 1 always keeps, p = 0 always drops
  });
}

void GaussianNoiseModule::Apply(std::vector<SensedObject>& objects, const std::vector<SensedObject>&,
                                std::mt19937_64& rng) {
  // Age all tracks; the ones present this frame are reset below.
  for (auto& [id, track] : tracks_) ++track.unseen_frames;
  for (SensedObject& o : objects) {
    // New tracking series: draw its offsets once (seed 002 Fig. 3.13: mean error per series).
    auto [it, inserted] = tracks_.try_emplace(o.id);
    Track& track = it->second;
    if (inserted) {
      track.position_offset_m = def_.position_offset_sigma_m.cwiseProduct(StandardNormal3(rng));
      track.velocity_offset_mps = def_.velocity_offset_sigma_mps.cwiseProduct(StandardNormal3(rng));
    }
    track.unseen_frames = 0;
    // Per-frame white noise on top (seed 002 eq. 3.5, zero-mean residual of Fig. 3.14/3.19).
    o.position_m += track.position_offset_m + def_.position_sigma_m.cwiseProduct(StandardNormal3(rng));
    o.velocity_mps += track.velocity_offset_mps + def_.velocity_sigma_mps.cwiseProduct(StandardNormal3(rng));
  }
  // Forget lost tracks so a re-appearing id starts a new series.
  std::erase_if(tracks_, [this](const auto& kv) { return kv.second.unseen_frames > def_.track_timeout_frames; });
}

void ClassTransitionModule::Apply(std::vector<SensedObject>& objects, const std::vector<SensedObject>&,
                                  std::mt19937_64&) {
  for (auto& [id, unseen] : triggered_) ++unseen;
  for (SensedObject& o : objects) {
    const auto rule = std::find_if(def_.rules.begin(), def_.rules.end(),
                                   [&o](const ClassTransitionRule& r) { return r.truth_class == o.truth_class; });
    if (rule == def_.rules.end()) {
      o.object_class = o.truth_class;
      continue;
    }
    // Trigger: length (or width) exceeds its threshold for the first time; the transition then sticks.
    auto it = triggered_.find(o.id);
    const bool trigger = o.size_m.x() > rule->length_threshold_m ||
                         (rule->width_threshold_m > 0.0 && o.size_m.y() > rule->width_threshold_m);
    if (it == triggered_.end() && trigger) it = triggered_.emplace(o.id, 0u).first;
    if (it != triggered_.end()) {
      it->second = 0;
      o.object_class = rule->final_class;
    } else {
      o.object_class = rule->initial_class;
    }
  }
  std::erase_if(triggered_, [this](const auto& kv) { return kv.second > def_.track_timeout_frames; });
}

ObjectListChain::ObjectListChain(ObjectListDef def) {
  modules_.push_back(std::make_unique<FieldOfViewModule>(def.fov));
  modules_.push_back(std::make_unique<DetectionModule>(std::move(def.detection)));
  modules_.push_back(std::make_unique<GaussianNoiseModule>(def.noise));
  modules_.push_back(std::make_unique<ClassTransitionModule>(std::move(def.classes)));
}

ObjectListChain::ObjectListChain(std::vector<std::unique_ptr<ObjectListModule>> modules)
    : modules_(std::move(modules)) {}

std::vector<SensedObject> ObjectListChain::Process(const std::vector<GroundTruthObject>& truth,
                                                   std::mt19937_64& rng) {
  // M^(1): ground truth to the common object format; the class is decided by the class module (if any).
  std::vector<SensedObject> objects;
  objects.reserve(truth.size());
  for (const GroundTruthObject& g : truth) {
    SensedObject o;
    o.id = g.id;
    o.object_class = g.object_class;
    o.truth_class = g.object_class;
    o.position_m = g.position_m;
    o.velocity_mps = g.velocity_mps;
    o.size_m = g.size_m;
    objects.push_back(o);
  }
  // M^(2..n) in order; each may look at last frame's output Z_{t-1}.
  for (const auto& m : modules_) {
    assert(m != nullptr);
    m->Apply(objects, previous_, rng);
  }
  previous_ = objects;
  return objects;
}

}  // namespace platoon::sensors
