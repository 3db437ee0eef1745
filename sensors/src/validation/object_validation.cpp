#include "platoon/validation/object_validation.hpp"

#include "platoon/sensors/radar.hpp"
#include "platoon/sensors/sensor_instance.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <unordered_map>

namespace platoon::validation {
namespace {

using sensors::ObjectClass;

constexpr double kZ95 = 1.959963984540054;  // two-sided 95 % normal quantile
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double HorizontalRange(const Vec3& p) { return std::hypot(p.x(), p.y()); }
double Azimuth(const Vec3& p) { return std::atan2(p.y(), p.x()); }

// Regularized lower incomplete gamma P(a, x) by its power series (a <= 50 and x <= 300 here).
double GammaP(double a, double x) {
  if (x <= 0) return 0.0;
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 100000 && term > 1e-17 * sum; ++n) {
    term *= x / (a + n);
    sum += term;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Chi-square quantile for `dof` degrees of freedom at the two-sided 95 % points: upper = 0.975, else
// 0.025. Exact (bisection on P(dof/2, x/2)) up to 100 dof; Wilson-Hilferty above, within 0.01 % there.
double ChiSquareQuantile(double dof, bool upper) {
  const double z = upper ? kZ95 : -kZ95;
  const double a = 2.0 / (9.0 * dof);
  const double c = 1.0 - a + z * std::sqrt(a);
  const double approx = dof * c * c * c;
  if (dof > 100) return approx;
  const double p = upper ? 0.975 : 0.025;
  double lo = 0.0, hi = std::max(4.0 * dof, 2.0 * approx) + 40.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (GammaP(0.5 * dof, 0.5 * mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

ObjectClass ClassOfRadar(uint8_t radar_class) {
  switch (static_cast<sensors::RadarClass>(radar_class)) {
    case sensors::RadarClass::kCar: return ObjectClass::kCar;
    case sensors::RadarClass::kTruck: return ObjectClass::kTruck;
    case sensors::RadarClass::kPedestrian: return ObjectClass::kPedestrian;
    case sensors::RadarClass::kMotorcycle: return ObjectClass::kMotorbike;
    case sensors::RadarClass::kBicycle: return ObjectClass::kBicycle;
    default: return ObjectClass::kUnclassified;
  }
}

sensors::Mounting MountOf(const protocol::SensorHeader& h) {
  return sensors::Mounting{h.mount_position_m, h.mount_orientation.normalized()};
}

// CSV number: %.6g, "nan" for NaN.
std::string Num(double v) {
  if (std::isnan(v)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string RateColumns(const Rate& r) { return Num(r.value) + "," + Num(r.lower) + "," + Num(r.upper); }

std::string ErrorColumns(const ErrorStats& e) {
  return std::to_string(e.n) + "," + Num(e.mean_x_m) + "," + Num(e.mean_y_m) + "," + Num(e.sigma_x_m) + "," +
         Num(e.sigma_x_lower_m) + "," + Num(e.sigma_x_upper_m) + "," + Num(e.sigma_y_m) + "," + Num(e.sigma_y_lower_m) +
         "," + Num(e.sigma_y_upper_m) + "," + Num(e.rmse_m);
}

constexpr const char* kFigureHeader =
    "truth,detected,detection_rate,detection_rate_lo95,detection_rate_hi95,matched,mean_x_m,mean_y_m,sigma_x_m,"
    "sigma_x_lo95_m,sigma_x_hi95_m,sigma_y_m,sigma_y_lo95_m,sigma_y_hi95_m,rmse_m,false_positives,fp_per_frame,"
    "fp_per_frame_lo95,fp_per_frame_hi95,class_correct_rate,class_correct_lo95,class_correct_hi95";

std::string FigureColumns(const Figures& f) {
  return std::to_string(f.truth) + "," + std::to_string(f.detection.count) + "," + RateColumns(f.detection) + "," +
         ErrorColumns(f.error) + "," + std::to_string(f.false_positives) + "," + RateColumns(f.false_positives_per_frame) +
         "," + RateColumns(f.class_correct);
}

std::string BinLabel(double lo, double hi) { return Num(lo) + "-" + Num(hi); }

}  // namespace

// --- inputs ---

SensorFrame FrameOf(const protocol::ObjectList& list) {
  SensorFrame f{list.header.stamp_ns, list.header.entity_id, MountOf(list.header), {}};
  f.objects.reserve(list.objects.size());
  for (const auto& o : list.objects)
    f.objects.push_back(ReportedObject{o.track_id, o.position_m,
                                       o.object_class <= static_cast<uint8_t>(ObjectClass::kPedestrian)
                                           ? std::optional(static_cast<ObjectClass>(o.object_class))
                                           : std::nullopt});
  return f;
}

SensorFrame FrameOf(const protocol::RadarScan& scan) {
  SensorFrame f{scan.header.stamp_ns, scan.header.entity_id, MountOf(scan.header), {}};
  f.objects.reserve(scan.detections.size());
  for (const auto& d : scan.detections)
    f.objects.push_back(ReportedObject{d.false_positive ? 0u : d.entity_id, Vec3(d.x_m, d.y_m, 0.0),
                                       ClassOfRadar(d.object_class)});
  return f;
}

std::vector<TruthObject> TruthInSensorFrame(const Pose& ego, const sensors::Mounting& mount,
                                            const std::vector<protocol::EntityState>& others) {
  const Pose sensor = sensors::SensorPoseInWorld(ego, mount);
  const Quat to_sensor = sensor.orientation.conjugate();
  std::vector<TruthObject> out;
  out.reserve(others.size());
  for (const auto& e : others) {
    const Pose box = sensors::EntityBoxPose(e.kinematics, e.box_size_m);
    out.push_back(TruthObject{sensors::TruthLabel(e.id), sensors::ObjectClassOf(e.kind),
                              to_sensor * (box.position_m - sensor.position_m)});
  }
  return out;
}

std::string ValidateValidationDef(const ValidationDef& def) {
  const auto& b = def.range_bins_m;
  if (b.size() < 2) return "range bins: need at least two edges";
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(b[i]) || b[i] < 0) return "range bins: edges must be finite and >= 0, got " + Num(b[i]);
    if (i > 0 && !(b[i] > b[i - 1])) return "range bins: edges must increase, got " + Num(b[i - 1]) + " then " + Num(b[i]);
  }
  if (!(std::isfinite(def.gate_m) && def.gate_m > 0)) return "gate must be > 0 m, got " + Num(def.gate_m);
  if (!(def.azimuth_half_rad > 0 && def.azimuth_half_rad <= M_PI)) return "azimuth half-angle must be in (0, 180] deg";
  return "";
}

// --- statistics ---

Rate BinomialRate(uint64_t k, uint64_t n) {
  Rate r{k, n, kNaN, kNaN, kNaN};
  if (n == 0) return r;
  const double nn = static_cast<double>(n), p = static_cast<double>(k) / nn, z2 = kZ95 * kZ95;
  const double denom = 1.0 + z2 / nn;
  const double centre = (p + z2 / (2 * nn)) / denom;
  const double half = kZ95 * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / denom;
  r.value = p;
  r.lower = k == 0 ? 0.0 : std::max(0.0, centre - half);
  r.upper = k == n ? 1.0 : std::min(1.0, centre + half);
  return r;
}

Rate PoissonRate(uint64_t k, uint64_t frames) {
  Rate r{k, frames, kNaN, kNaN, kNaN};
  if (frames == 0) return r;
  const double f = static_cast<double>(frames), kk = static_cast<double>(k);
  // Garwood's exact interval 0.5 chi2(2k, 0.025) .. 0.5 chi2(2k + 2, 0.975).
  const double lower = k == 0 ? 0.0 : 0.5 * ChiSquareQuantile(2 * kk, false);
  const double upper = 0.5 * ChiSquareQuantile(2 * kk + 2, true);
  r.value = kk / f;
  r.lower = std::max(0.0, lower) / f;
  r.upper = upper / f;
  return r;
}

// --- the validator ---

void Validator::Sums::AddError(const Vec3& d) {
  ++n;
  sx += d.x();
  sy += d.y();
  sxx += d.x() * d.x();
  syy += d.y() * d.y();
}

Validator::Validator(ValidationDef def) : def_(std::move(def)), bins_(def_.range_bins_m.size() - 1) {}

int Validator::BinOf(double range_m) const {
  const auto& b = def_.range_bins_m;
  if (range_m < b.front() || range_m >= b.back()) return -1;
  return static_cast<int>(std::upper_bound(b.begin(), b.end(), range_m) - b.begin()) - 1;
}

void Validator::Add(const SensorFrame& frame, const std::vector<TruthObject>& truth) {
  ++frames_;
  reported_ += frame.objects.size();
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> truth_match(truth.size(), kNone), report_match(frame.objects.size(), kNone);
  std::vector<bool> by_id(frame.objects.size(), false);
  // 1. By track id: the sensor names the entity it follows.
  if (def_.use_track_ids) {
    std::unordered_map<uint32_t, size_t> by_label;
    for (size_t i = 0; i < truth.size(); ++i) by_label.emplace(truth[i].label, i);
    for (size_t j = 0; j < frame.objects.size(); ++j) {
      const uint32_t id = frame.objects[j].track_id;
      if (id == 0) continue;
      const auto it = by_label.find(id);
      if (it == by_label.end() || truth_match[it->second] != kNone) continue;
      truth_match[it->second] = j;
      report_match[j] = it->second;
      by_id[j] = true;
    }
  }
  // 2. The rest by nearest neighbour within the gate, closest pairs first (greedy global nearest neighbour).
  struct Pair {
    double d;
    size_t t, r;
  };
  std::vector<Pair> pairs;
  for (size_t j = 0; j < frame.objects.size(); ++j) {
    if (report_match[j] != kNone) continue;
    for (size_t i = 0; i < truth.size(); ++i) {
      if (truth_match[i] != kNone) continue;
      const Vec3 d = frame.objects[j].position_m - truth[i].position_m;
      const double dist = std::hypot(d.x(), d.y());
      if (dist <= def_.gate_m) pairs.push_back(Pair{dist, i, j});
    }
  }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
    return a.d != b.d ? a.d < b.d : (a.t != b.t ? a.t < b.t : a.r < b.r);
  });
  for (const Pair& p : pairs) {
    if (truth_match[p.t] != kNone || report_match[p.r] != kNone) continue;
    truth_match[p.t] = p.r;
    report_match[p.r] = p.t;
  }
  // 3. Every truth object in the region is a trial: detected if associated.
  auto in_region = [&](const Vec3& p) {
    return BinOf(HorizontalRange(p)) >= 0 && std::abs(Azimuth(p)) <= def_.azimuth_half_rad;
  };
  for (size_t i = 0; i < truth.size(); ++i) {
    const TruthObject& t = truth[i];
    if (!in_region(t.position_m)) continue;
    Sums* rows[] = {&all_, &bins_[BinOf(HorizontalRange(t.position_m))], &classes_[t.truth_class]};
    for (Sums* s : rows) ++s->truth;
    if (truth_match[i] == kNone) continue;
    const ReportedObject& r = frame.objects[truth_match[i]];
    ++(by_id[truth_match[i]] ? by_id_ : by_distance_);
    const Vec3 d = r.position_m - t.position_m;
    for (Sums* s : rows) {
      ++s->detected;
      s->AddError(d);
      if (r.reported_class) {
        ++s->classified;
        s->class_correct += *r.reported_class == t.truth_class;
      }
    }
  }
  // 4. Reported objects: associated ones were counted above (or belong to truth outside the region);
  //    the others are false positives where they claim to be, if that is in the region.
  for (size_t j = 0; j < frame.objects.size(); ++j) {
    const ReportedObject& r = frame.objects[j];
    const bool truth_in_region = report_match[j] != kNone && in_region(truth[report_match[j]].position_m);
    if (report_match[j] != kNone ? !truth_in_region : !in_region(r.position_m)) {
      ++outside_;
      continue;
    }
    ++reported_in_region_;
    if (report_match[j] != kNone) continue;
    ++all_.fp;
    ++bins_[BinOf(HorizontalRange(r.position_m))].fp;
    ++classes_[r.reported_class.value_or(ObjectClass::kUnclassified)].fp;
  }
}

Figures Validator::Make(const Sums& s) const {
  Figures f;
  f.truth = s.truth;
  f.detection = BinomialRate(s.detected, s.truth);
  f.false_positives = s.fp;
  f.false_positives_per_frame = PoissonRate(s.fp, frames_);
  f.class_correct = BinomialRate(s.class_correct, s.classified);
  ErrorStats& e = f.error;
  e.n = s.n;
  e.mean_x_m = e.mean_y_m = e.sigma_x_m = e.sigma_y_m = e.rmse_m = kNaN;
  e.sigma_x_lower_m = e.sigma_x_upper_m = e.sigma_y_lower_m = e.sigma_y_upper_m = kNaN;
  if (s.n == 0) return f;
  const double n = static_cast<double>(s.n);
  e.mean_x_m = s.sx / n;
  e.mean_y_m = s.sy / n;
  e.rmse_m = std::sqrt((s.sxx + s.syy) / n);
  if (s.n < 2) return f;
  // Sample standard deviation, and its 95 % interval from the chi-square law with n - 1 dof.
  const double dof = n - 1;
  e.sigma_x_m = std::sqrt(std::max(0.0, (s.sxx - n * e.mean_x_m * e.mean_x_m) / dof));
  e.sigma_y_m = std::sqrt(std::max(0.0, (s.syy - n * e.mean_y_m * e.mean_y_m) / dof));
  const double lo = std::sqrt(dof / ChiSquareQuantile(dof, true)), hi = std::sqrt(dof / ChiSquareQuantile(dof, false));
  e.sigma_x_lower_m = e.sigma_x_m * lo;
  e.sigma_x_upper_m = e.sigma_x_m * hi;
  e.sigma_y_lower_m = e.sigma_y_m * lo;
  e.sigma_y_upper_m = e.sigma_y_m * hi;
  return f;
}

Report Validator::Finish() const {
  Report r;
  r.def = def_;
  r.frames = frames_;
  r.frames_without_ego = frames_without_ego_;
  r.reported = reported_;
  r.matched_by_id = by_id_;
  r.matched_by_distance = by_distance_;
  r.outside_region = outside_;
  r.all = Make(all_);
  r.false_positive_fraction = BinomialRate(all_.fp, reported_in_region_);
  for (size_t i = 0; i < bins_.size(); ++i)
    r.by_range.push_back(RangeBin{def_.range_bins_m[i], def_.range_bins_m[i + 1], Make(bins_[i])});
  for (const auto& [c, s] : classes_) r.by_class.push_back(ClassRow{c, Make(s)});
  return r;
}

Report Compare(const RecordedWorld& world, std::span<const SensorFrame> frames, const ValidationDef& def,
               const std::function<void(size_t, size_t)>& progress) {
  Validator v(def);
  for (size_t i = 0; i < frames.size(); ++i) {
    const SensorFrame& f = frames[i];
    const auto ego = world.StateAt(f.ego_id, f.stamp_ns, def.truth);
    if (!ego) {
      v.SkipWithoutEgo();
    } else {
      v.Add(f, TruthInSensorFrame(ego->kinematics.pose, f.mount, world.EntitiesAt(f.stamp_ns, def.truth, f.ego_id)));
    }
    if (progress && (i % 256 == 255 || i + 1 == frames.size())) progress(i + 1, frames.size());
  }
  return v.Finish();
}

// --- output ---

std::string SummaryCsv(const Report& r, std::string_view sensor_id, std::string_view kind) {
  std::string bins;
  for (double b : r.def.range_bins_m) bins += (bins.empty() ? "" : " ") + Num(b);
  std::ostringstream os;
  os << "sensor,kind,frames,frames_without_ego,reported,matched_by_id,matched_by_distance,outside_region,"
     << kFigureHeader << ",fp_fraction,fp_fraction_lo95,fp_fraction_hi95,gate_m,azimuth_half_deg,bins_m,truth_method,association\n";
  os << sensor_id << "," << kind << "," << r.frames << "," << r.frames_without_ego << "," << r.reported << ","
     << r.matched_by_id << "," << r.matched_by_distance << "," << r.outside_region << "," << FigureColumns(r.all) << ","
     << RateColumns(r.false_positive_fraction) << "," << Num(r.def.gate_m) << "," << Num(r.def.azimuth_half_rad * 180 / M_PI)
     << "," << bins << "," << TruthMethodName(r.def.truth) << "," << (r.def.use_track_ids ? "id" : "nearest") << "\n";
  return os.str();
}

std::string ByRangeCsv(const Report& r) {
  std::ostringstream os;
  os << "bin,range_lo_m,range_hi_m," << kFigureHeader << "\n";
  for (const auto& b : r.by_range)
    os << BinLabel(b.lower_m, b.upper_m) << "," << Num(b.lower_m) << "," << Num(b.upper_m) << "," << FigureColumns(b.figures)
       << "\n";
  os << "all," << Num(r.def.range_bins_m.front()) << "," << Num(r.def.range_bins_m.back()) << "," << FigureColumns(r.all)
     << "\n";
  return os.str();
}

std::string ByClassCsv(const Report& r) {
  std::ostringstream os;
  os << "class," << kFigureHeader << "\n";
  for (const auto& c : r.by_class) os << sensors::ObjectClassName(c.object_class) << "," << FigureColumns(c.figures) << "\n";
  return os.str();
}

std::string FormatTable(const Report& r, std::string_view sensor_id, std::string_view kind) {
  auto pct = [](const Rate& x) {
    char buf[64];
    if (x.trials == 0) return std::string("      -            ");
    std::snprintf(buf, sizeof buf, "%6.2f%% [%5.1f, %5.1f]", 100 * x.value, 100 * x.lower, 100 * x.upper);
    return std::string(buf);
  };
  auto row = [&](const std::string& name, const Figures& f) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-14s %7llu %s %7llu %7.3f %7.3f %7.3f %7.3f %7.3f %6llu %8.4f\n", name.c_str(),
                  static_cast<unsigned long long>(f.truth), pct(f.detection).c_str(),
                  static_cast<unsigned long long>(f.error.n), f.error.mean_x_m, f.error.mean_y_m, f.error.sigma_x_m,
                  f.error.sigma_y_m, f.error.rmse_m, static_cast<unsigned long long>(f.false_positives),
                  f.false_positives_per_frame.value);
    return std::string(buf);
  };
  const char* head =
      "                   truth  detection rate [95 %]    matched  mean x  mean y sigma x sigma y    rmse     FP  FP/frame\n";
  std::ostringstream os;
  os << "sensor " << sensor_id << " (" << kind << "): " << r.frames << " frames";
  if (r.frames_without_ego) os << " (+" << r.frames_without_ego << " without the ego in the recorded world)";
  os << ", " << r.reported << " reported objects, " << r.all.truth << " truth objects in the region; associated "
     << r.matched_by_id << " by track id, " << r.matched_by_distance << " by distance (gate " << Num(r.def.gate_m)
     << " m); " << r.outside_region << " reported outside the region\n";
  os << "by range (m)\n" << head;
  for (const auto& b : r.by_range) os << row(BinLabel(b.lower_m, b.upper_m), b.figures);
  os << row("all", r.all);
  os << "by true class (false positives by reported class)\n" << head;
  for (const auto& c : r.by_class) os << row(std::string(sensors::ObjectClassName(c.object_class)), c.figures);
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "false positives: %llu, %.4f per frame [%.4f, %.4f], %.2f%% of reported objects in the region\n",
                static_cast<unsigned long long>(r.all.false_positives), r.all.false_positives_per_frame.value,
                r.all.false_positives_per_frame.lower, r.all.false_positives_per_frame.upper,
                100 * r.false_positive_fraction.value);
  os << buf;
  os << "position errors are reported minus truth in the sensor frame (x forward, y left), box centres; truth by "
     << TruthMethodName(r.def.truth) << "\n";
  return os.str();
}

}  // namespace platoon::validation
