#include "platoon/data/standard_tasks.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <fmt/format.h>
#include <numbers>
#include <stdexcept>

namespace platoon::data {

namespace standard_tasks_detail {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
// Onsets and responses computed as onset + delay in floating point land a few ulps off the window edges; a
// response this close to an edge counts as on it, in s.
constexpr double kEdgeTolS = 1e-9;

// SplitMix64 (Steele, Lea & Flood 2014): a tiny generator with the same stream on every platform.
uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Integral over [a, b] of |d| where d is linear from da to db.
double AbsLinearIntegral(double da, double db, double a, double b) {
  const double w = b - a;
  if ((da >= 0 && db >= 0) || (da <= 0 && db <= 0)) return 0.5 * (std::fabs(da) + std::fabs(db)) * w;
  // The line crosses zero at a + w |da| / (|da| + |db|): two triangles.
  return 0.5 * (da * da + db * db) / (std::fabs(da) + std::fabs(db)) * w;
}

// The trace without points whose s does not increase (a car standing, or reversing).
std::vector<LateralPoint> Increasing(const std::vector<LateralPoint>& trace) {
  std::vector<LateralPoint> out;
  out.reserve(trace.size());
  for (const auto& p : trace)
    if (std::isfinite(p.s_m) && std::isfinite(p.lateral_m) && (out.empty() || p.s_m > out.back().s_m)) out.push_back(p);
  return out;
}

// Mean over [a, b] of a piecewise linear signal (t, x) (held outside its samples) and its Fourier coefficient at
// angular frequency w: (2 / T) * integral of (x - mean) e^{-i w t} dt, by trapezoids on the samples inside and the
// interpolated ends.
struct SegmentSpectrum {
  std::complex<double> lead, follower;
};

SegmentSpectrum SegmentCoefficients(const std::vector<SpeedPair>& s, double a, double b, double w) {
  // The samples of [a, b] with interpolated ends.
  std::vector<SpeedPair> seg;
  auto at = [&](double t) {
    auto it = std::lower_bound(s.begin(), s.end(), t, [](const SpeedPair& p, double v) { return p.t_s < v; });
    if (it == s.begin()) return SpeedPair{t, it->lead_mps, it->follower_mps};
    if (it == s.end()) return SpeedPair{t, s.back().lead_mps, s.back().follower_mps};
    const auto& p0 = *(it - 1);
    const auto& p1 = *it;
    const double u = (t - p0.t_s) / (p1.t_s - p0.t_s);
    return SpeedPair{t, p0.lead_mps + u * (p1.lead_mps - p0.lead_mps),
                     p0.follower_mps + u * (p1.follower_mps - p0.follower_mps)};
  };
  seg.push_back(at(a));
  for (const auto& p : s)
    if (p.t_s > a && p.t_s < b) seg.push_back(p);
  seg.push_back(at(b));
  // Means by trapezoids.
  const double len = b - a;
  double mean_l = 0, mean_f = 0;
  for (size_t i = 1; i < seg.size(); ++i) {
    const double dt = seg[i].t_s - seg[i - 1].t_s;
    mean_l += 0.5 * (seg[i].lead_mps + seg[i - 1].lead_mps) * dt;
    mean_f += 0.5 * (seg[i].follower_mps + seg[i - 1].follower_mps) * dt;
  }
  mean_l /= len;
  mean_f /= len;
  // Fourier coefficients at w by trapezoids on (x - mean) e^{-i w t}, t from the segment start.
  std::complex<double> cl{0, 0}, cf{0, 0};
  auto phasor = [&](double t) { return std::polar(1.0, -w * (t - a)); };
  for (size_t i = 1; i < seg.size(); ++i) {
    const double dt = seg[i].t_s - seg[i - 1].t_s;
    const auto e0 = phasor(seg[i - 1].t_s), e1 = phasor(seg[i].t_s);
    cl += 0.5 * dt * ((seg[i - 1].lead_mps - mean_l) * e0 + (seg[i].lead_mps - mean_l) * e1);
    cf += 0.5 * dt * ((seg[i - 1].follower_mps - mean_f) * e0 + (seg[i].follower_mps - mean_f) * e1);
  }
  return {cl * (2.0 / len), cf * (2.0 / len)};
}

}  // namespace standard_tasks_detail

// ---------------------------------------------------------------------------------------------------------------
// Lane change test

LctDef DefaultLctDef() { return LctDef{}; }

std::string ValidateLctDef(const LctDef& def) {
  if (!(def.lane_width_m > 0) || !std::isfinite(def.lane_width_m))
    return fmt::format("lane_width_m: expected > 0, got {}", def.lane_width_m);
  if (!std::isfinite(def.onset_before_sign_m))
    return fmt::format("onset_before_sign_m: expected a finite distance, got {}", def.onset_before_sign_m);
  if (!(def.change_length_m > 0) || !std::isfinite(def.change_length_m))
    return fmt::format("change_length_m: expected > 0, got {}", def.change_length_m);
  if (def.start_lane == 0) return "start_lane: expected a lane index other than 0 (-1, -2, ... or 1, 2, ...), got 0";
  return "";
}

double LaneCentreLateral(int lane, double lane_width_m) {
  // Lane -k spans [-k w, -(k-1) w]; lane +k spans [(k-1) w, k w].
  return lane < 0 ? -(-lane - 0.5) * lane_width_m : (lane - 0.5) * lane_width_m;
}

std::vector<LateralPoint> LctNormativePath(const LctDef& def, const std::vector<LctSign>& signs) {
  if (auto e = ValidateLctDef(def); !e.empty()) throw std::invalid_argument("lane change test: " + e);
  std::vector<LateralPoint> path;
  int lane = def.start_lane;
  double free_from_s = -std::numeric_limits<double>::infinity();  // where the previous change ended
  for (size_t i = 0; i < signs.size(); ++i) {
    const auto& sign = signs[i];
    if (sign.lane == 0 || !std::isfinite(sign.s_m))
      throw std::invalid_argument(fmt::format("lane change test: sign {}: expected a finite s and a lane other than 0, "
                                              "got s {} lane {}", i + 1, sign.s_m, sign.lane));
    if (i > 0 && !(sign.s_m > signs[i - 1].s_m))
      throw std::invalid_argument(fmt::format("lane change test: sign {}: expected signs sorted by s, got {} m after {} m",
                                              i + 1, sign.s_m, signs[i - 1].s_m));
    if (sign.lane == lane) continue;
    // The change: hold the lane up to the onset, then straight to the next lane centre.
    const double start = sign.s_m - def.onset_before_sign_m;
    if (start < free_from_s)
      throw std::invalid_argument(fmt::format("lane change test: sign {} at {} m: its change would start at {} m, "
                                              "before the previous one ends at {} m", i + 1, sign.s_m, start, free_from_s));
    path.push_back({start, LaneCentreLateral(lane, def.lane_width_m)});
    path.push_back({start + def.change_length_m, LaneCentreLateral(sign.lane, def.lane_width_m)});
    free_from_s = start + def.change_length_m;
    lane = sign.lane;
  }
  if (path.empty()) path.push_back({0.0, LaneCentreLateral(lane, def.lane_width_m)});
  return path;
}

double PathLateralAt(const std::vector<LateralPoint>& path, double s_m) {
  if (path.empty()) return standard_tasks_detail::kNan;
  if (s_m <= path.front().s_m) return path.front().lateral_m;
  if (s_m >= path.back().s_m) return path.back().lateral_m;
  auto it = std::upper_bound(path.begin(), path.end(), s_m, [](double v, const LateralPoint& p) { return v < p.s_m; });
  const auto& p0 = *(it - 1);
  const auto& p1 = *it;
  if (!(p1.s_m > p0.s_m)) return p1.lateral_m;
  return p0.lateral_m + (s_m - p0.s_m) / (p1.s_m - p0.s_m) * (p1.lateral_m - p0.lateral_m);
}

LctScore ScoreLct(const std::vector<LateralPoint>& raw_trace, const std::vector<LateralPoint>& path, double from_s_m,
                  double to_s_m) {
  LctScore score;
  const auto trace = standard_tasks_detail::Increasing(raw_trace);
  if (trace.size() < 2 || path.empty()) return score;
  // The stretch both the request and the trace cover.
  const double a = std::max(from_s_m, trace.front().s_m);
  const double b = std::min(to_s_m, trace.back().s_m);
  if (!(b - a >= 1.0)) return score;
  // Breakpoints of both piecewise linear curves inside [a, b]: |trace - path| is linear between them but for a
  // sign change, which AbsLinearIntegral handles.
  std::vector<double> cuts{a, b};
  for (const auto& p : trace) {
    if (p.s_m > a && p.s_m < b) cuts.push_back(p.s_m);
    if (p.s_m >= a && p.s_m <= b) ++score.samples;
  }
  for (const auto& p : path)
    if (p.s_m > a && p.s_m < b) cuts.push_back(p.s_m);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  double integral = 0;
  double d_prev = PathLateralAt(trace, cuts[0]) - PathLateralAt(path, cuts[0]);
  for (size_t i = 1; i < cuts.size(); ++i) {
    const double d = PathLateralAt(trace, cuts[i]) - PathLateralAt(path, cuts[i]);
    integral += standard_tasks_detail::AbsLinearIntegral(d_prev, d, cuts[i - 1], cuts[i]);
    d_prev = d;
  }
  score.length_m = b - a;
  score.mean_deviation_m = integral / score.length_m;
  return score;
}

// ---------------------------------------------------------------------------------------------------------------
// Detection response task

DrtDef DefaultDrtDef() { return DrtDef{}; }

std::string ValidateDrtDef(const DrtDef& def) {
  if (!(def.min_response_s >= 0) || !std::isfinite(def.min_response_s))
    return fmt::format("min_response_s: expected >= 0, got {}", def.min_response_s);
  if (!(def.max_response_s > def.min_response_s) || !std::isfinite(def.max_response_s))
    return fmt::format("max_response_s: expected > min_response_s ({}), got {}", def.min_response_s, def.max_response_s);
  if (!(def.min_interval_s > 0) || !std::isfinite(def.min_interval_s))
    return fmt::format("min_interval_s: expected > 0, got {}", def.min_interval_s);
  if (!(def.max_interval_s >= def.min_interval_s) || !std::isfinite(def.max_interval_s))
    return fmt::format("max_interval_s: expected >= min_interval_s ({}), got {}", def.min_interval_s, def.max_interval_s);
  if (!(def.stimulus_s > 0) || !std::isfinite(def.stimulus_s))
    return fmt::format("stimulus_s: expected > 0, got {}", def.stimulus_s);
  return "";
}

std::vector<double> DrtSchedule(const DrtDef& def, uint64_t seed, double from_s, double to_s) {
  if (auto e = ValidateDrtDef(def); !e.empty()) throw std::invalid_argument("detection response task: " + e);
  std::vector<double> onsets;
  uint64_t state = seed;
  for (double t = from_s; t < to_s;) {
    onsets.push_back(t);
    const double u = static_cast<double>(standard_tasks_detail::SplitMix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
    t += def.min_interval_s + u * (def.max_interval_s - def.min_interval_s);
  }
  return onsets;
}

DrtScore ScoreDrt(const DrtDef& def, const std::vector<double>& onsets, const std::vector<double>& responses) {
  using standard_tasks_detail::kEdgeTolS;
  if (auto e = ValidateDrtDef(def); !e.empty()) throw std::invalid_argument("detection response task: " + e);
  if (!std::is_sorted(onsets.begin(), onsets.end()))
    throw std::invalid_argument("detection response task: expected stimulus onsets sorted by time");
  if (!std::is_sorted(responses.begin(), responses.end()))
    throw std::invalid_argument("detection response task: expected responses sorted by time");
  DrtScore score;
  score.trials.reserve(onsets.size());
  for (double t : onsets) score.trials.push_back(DrtTrial{t});
  for (double r : responses) {
    // The latest onset at or before the response.
    auto it = std::upper_bound(onsets.begin(), onsets.end(), r + kEdgeTolS);
    if (it == onsets.begin()) {
      ++score.extra;
      continue;
    }
    auto& trial = score.trials[static_cast<size_t>(it - onsets.begin()) - 1];
    const double rt = r - trial.onset_s;
    if (rt < def.min_response_s - kEdgeTolS) {
      ++trial.premature;
      ++score.premature;
    } else if (rt <= def.max_response_s + kEdgeTolS && !trial.hit) {
      trial.hit = true;
      trial.response_time_s = rt;
    } else {
      ++score.extra;
    }
  }
  // Rates and response times of the hits.
  std::vector<double> rts;
  for (const auto& t : score.trials)
    if (t.hit) rts.push_back(t.response_time_s);
  score.hits = static_cast<uint32_t>(rts.size());
  score.misses = static_cast<uint32_t>(score.trials.size() - rts.size());
  if (!score.trials.empty()) score.hit_rate = static_cast<double>(score.hits) / static_cast<double>(score.trials.size());
  if (!rts.empty()) {
    double sum = 0;
    for (double v : rts) sum += v;
    score.mean_rt_s = sum / static_cast<double>(rts.size());
    std::sort(rts.begin(), rts.end());
    const size_t n = rts.size();
    score.median_rt_s = n % 2 ? rts[n / 2] : 0.5 * (rts[n / 2 - 1] + rts[n / 2]);
  }
  return score;
}

// ---------------------------------------------------------------------------------------------------------------
// Car following

std::string ValidateCarFollowingDef(const CarFollowingDef& def) {
  if (!(def.frequency_hz > 0) || !std::isfinite(def.frequency_hz))
    return fmt::format("frequency_hz: expected > 0, got {}", def.frequency_hz);
  if (def.periods_per_segment < 1) return "periods_per_segment: expected >= 1, got 0";
  return "";
}

CarFollowingScore ScoreCarFollowing(const CarFollowingDef& def, const std::vector<SpeedPair>& raw) {
  if (auto e = ValidateCarFollowingDef(def); !e.empty()) throw std::invalid_argument("car following: " + e);
  // Finite samples with increasing time.
  std::vector<SpeedPair> s;
  s.reserve(raw.size());
  for (const auto& p : raw)
    if (std::isfinite(p.t_s) && std::isfinite(p.lead_mps) && std::isfinite(p.follower_mps) &&
        (s.empty() || p.t_s > s.back().t_s))
      s.push_back(p);
  CarFollowingScore score;
  if (s.size() < 2) return score;
  const double w = 2.0 * std::numbers::pi * def.frequency_hz;
  const double seg_len = def.periods_per_segment / def.frequency_hz;
  // Spectra averaged over whole segments (Welch without overlap or window: whole periods need none).
  double s_ll = 0, s_ff = 0;
  std::complex<double> s_lf{0, 0};
  const double t0 = s.front().t_s;
  // A segment ends at most a millionth of its length past the last sample (rounding of sample times).
  for (uint32_t k = 0; t0 + (k + 1) * seg_len <= s.back().t_s + 1e-6 * seg_len; ++k) {
    const auto c = standard_tasks_detail::SegmentCoefficients(s, t0 + k * seg_len, t0 + (k + 1) * seg_len, w);
    s_ll += std::norm(c.lead);
    s_ff += std::norm(c.follower);
    s_lf += std::conj(c.lead) * c.follower;
    ++score.segments;
  }
  if (score.segments == 0 || !(s_ll > 0)) return score;
  const double n = score.segments;
  s_ll /= n;
  s_ff /= n;
  s_lf /= n;
  score.gain = std::abs(s_lf) / s_ll;
  // The follower's coefficient is G L e^{-i w d}: the lag is minus the cross-spectrum's angle.
  double phase = -std::arg(s_lf);
  if (phase < 0) phase += 2.0 * std::numbers::pi;
  score.phase_rad = phase;
  score.delay_s = phase / w;
  score.coherence = s_ff > 0 ? std::norm(s_lf) / (s_ll * s_ff) : standard_tasks_detail::kNan;
  score.lead_amplitude_mps = std::sqrt(s_ll);
  score.follower_amplitude_mps = std::sqrt(s_ff);
  return score;
}

}  // namespace platoon::data
