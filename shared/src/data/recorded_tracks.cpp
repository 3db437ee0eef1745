#include "platoon/data/recorded_tracks.hpp"

#include "platoon/dead_reckoning_kinds.hpp"
#include "platoon/state_interpolation.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <thread>

namespace platoon::data {
namespace {

// Fewer rows than this per thread are not worth a thread (a row with a leader search: 10-200 us).
constexpr size_t kMinRowsPerThread = 16;

}  // namespace

std::string_view TrackMethodName(TrackMethod m) { return m == TrackMethod::kInterpolate ? "interpolate" : "dead_reckon"; }

std::optional<TrackMethod> TrackMethodFromName(std::string_view name) {
  if (name == "interpolate") return TrackMethod::kInterpolate;
  if (name == "dead_reckon") return TrackMethod::kDeadReckon;
  return std::nullopt;
}

RecordedTracks::RecordedTracks(std::vector<protocol::EntityState> states, std::span<const TrackRemoval> removals,
                               int64_t end_ns) {
  // By (entity, stamp), recorded order kept among copies of one stamp: the first copy stays.
  std::stable_sort(states.begin(), states.end(), [](const protocol::EntityState& a, const protocol::EntityState& b) {
    if (a.id != b.id) return a.id < b.id;
    return a.kinematics.stamp_ns < b.kinematics.stamp_ns;
  });
  for (auto& e : states) {
    if (tracks_.empty() || tracks_.back().id != e.id) {
      tracks_.emplace_back();
      tracks_.back().id = e.id;
    }
    Track& t = tracks_.back();
    if (!t.states.empty() && t.states.back().kinematics.stamp_ns == e.kinematics.stamp_ns) continue;
    t.states.push_back(std::move(e));
  }
  // Removals of recorded entities, in time order per entity.
  for (const TrackRemoval& r : removals)
    if (auto i = Find(r.id)) tracks_[*i].removed_ns.push_back(r.sim_ns);
  for (Track& t : tracks_) {
    std::sort(t.removed_ns.begin(), t.removed_ns.end());
    t.kind = t.states.back().kind;
    t.owner_node = t.states.back().owner_node;
    // It exists until its removal after its newest state, else until the recording ends.
    const auto after_last = std::upper_bound(t.removed_ns.begin(), t.removed_ns.end(), t.LastStateNs());
    t.end_ns = after_last != t.removed_ns.end() ? *after_last : std::max(end_ns, t.LastStateNs());
  }
}

std::optional<size_t> RecordedTracks::Find(uint64_t id) const {
  const auto it = std::lower_bound(tracks_.begin(), tracks_.end(), id, [](const Track& t, uint64_t v) { return t.id < v; });
  if (it == tracks_.end() || it->id != id) return std::nullopt;
  return static_cast<size_t>(it - tracks_.begin());
}

namespace {

// The newest state at or before t (nullptr before the first), and whether the entity was removed
// between that state and t.
struct Bracket {
  const protocol::EntityState* a = nullptr;
  const protocol::EntityState* b = nullptr;  // the next state, if any
  bool removed = false;                      // removed after a, at or before t
  bool removed_before_b = false;             // removed after a, at or before b
};

Bracket BracketOf(const Track& track, int64_t t_ns) {
  Bracket out;
  if (track.states.empty() || t_ns < track.FirstNs() || t_ns > track.end_ns) return out;
  const auto after = std::upper_bound(track.states.begin(), track.states.end(), t_ns,
                                      [](int64_t t, const protocol::EntityState& e) { return t < e.kinematics.stamp_ns; });
  out.a = &*(after - 1);
  if (after != track.states.end()) out.b = &*after;
  const auto removal = std::upper_bound(track.removed_ns.begin(), track.removed_ns.end(), out.a->kinematics.stamp_ns);
  out.removed = removal != track.removed_ns.end() && *removal <= t_ns;
  out.removed_before_b = removal != track.removed_ns.end() && (!out.b || *removal <= out.b->kinematics.stamp_ns);
  return out;
}

}  // namespace

bool RecordedTracks::ExistsAt(size_t i, int64_t t_ns) const {
  assert(i < tracks_.size());
  const Bracket br = BracketOf(tracks_[i], t_ns);
  return br.a && !br.removed;
}

std::optional<protocol::EntityState> RecordedTracks::StateAt(size_t i, int64_t t_ns, TrackMethod method) const {
  assert(i < tracks_.size());
  const Bracket br = BracketOf(tracks_[i], t_ns);
  if (!br.a || br.removed) return std::nullopt;
  protocol::EntityState out = *br.a;
  // At a recorded stamp: the recorded state itself.
  if (t_ns == br.a->kinematics.stamp_ns) return out;
  if (method == TrackMethod::kInterpolate && br.b && !br.removed_before_b && !IsJump(br.a->kinematics, br.b->kinematics)) {
    out.kinematics = InterpolateKinematics(br.a->kinematics, br.b->kinematics, t_ns, dr::ModelForKind(br.a->kind));
    // A state carries the commands of the step that ended at its stamp: those that led to b.
    out.controls = br.b->controls;
  } else {
    out.kinematics = dr::ExtrapolateState(dr::ModelForKind(br.a->kind), br.a->kinematics, t_ns);
  }
  return out;
}

int64_t RowTimeNs(int64_t k, double rate_hz) {
  assert(rate_hz > 0);
  const double period_ns = 1e9 / rate_hz;
  // A whole period in ns (1 Hz .. 1 GHz divisors): exact integer multiples.
  if (std::abs(period_ns - std::round(period_ns)) < 1e-6) return k * static_cast<int64_t>(std::llround(period_ns));
  return static_cast<int64_t>(std::llround(static_cast<long double>(k) * 1e9L / static_cast<long double>(rate_hz)));
}

int64_t FirstRowAtOrAfter(int64_t t_ns, double rate_hz) {
  int64_t k = static_cast<int64_t>(std::ceil(static_cast<long double>(t_ns) * rate_hz / 1e9L));
  // Rounding of either expression may leave k one off.
  while (RowTimeNs(k, rate_hz) < t_ns) ++k;
  while (RowTimeNs(k - 1, rate_hz) >= t_ns) --k;
  return k;
}

ExportDef DefaultExportDef() { return ExportDef{}; }

std::optional<std::pair<int64_t, int64_t>> RowSpan(const Track& track, const ExportDef& def) {
  if (track.states.empty()) return std::nullopt;
  const int64_t from = std::max(track.FirstNs(), def.from_ns);
  const int64_t to = std::min(track.end_ns, def.to_ns);
  if (to < from) return std::nullopt;
  const int64_t k0 = FirstRowAtOrAfter(from, def.rate_hz);
  const int64_t k1 = FirstRowAtOrAfter(to, def.rate_hz);
  const int64_t last = RowTimeNs(k1, def.rate_hz) == to ? k1 : k1 - 1;
  if (last < k0) return std::nullopt;
  return std::make_pair(k0, last);
}

uint64_t ExportRows(const RecordedTracks& tracks, std::span<const size_t> selected, const road::RoadNetwork& roads,
                    const ExportDef& def, const std::function<void(size_t, const MetricsRow&)>& on_row,
                    const std::function<void(int64_t, int64_t)>& progress) {
  const auto& all = tracks.Tracks();
  // The row indices where any selected track has rows.
  std::vector<std::optional<std::pair<int64_t, int64_t>>> spans(all.size());
  int64_t k_first = INT64_MAX, k_last = INT64_MIN;
  for (size_t i : selected) {
    spans[i] = RowSpan(all[i], def);
    if (!spans[i]) continue;
    k_first = std::min(k_first, spans[i]->first);
    k_last = std::max(k_last, spans[i]->second);
  }
  if (k_first > k_last) return 0;

  struct Existing {
    size_t track;
    protocol::EntityState state;
  };
  std::vector<Existing> existing;
  std::vector<VehicleSample> vehicles;  // the existing vehicles, by x, for the leader search
  uint64_t rows = 0;
  const int64_t total = k_last - k_first + 1;
  const size_t threads = def.threads > 0 ? static_cast<size_t>(def.threads) : std::max(1u, std::thread::hardware_concurrency());
  std::vector<size_t> due;
  std::vector<std::optional<MetricsRow>> rows_at;
  double longest_m = 0;
  // The row of track i at t from the states found for t (nullopt when it does not exist then).
  auto RowAt = [&](size_t i, int64_t t) -> std::optional<MetricsRow> {
    std::optional<protocol::EntityState> own;
    if (def.metrics.leader) {
      const auto it = std::lower_bound(existing.begin(), existing.end(), i, [](const Existing& e, size_t v) { return e.track < v; });
      if (it != existing.end() && it->track == i) own = it->state;
    } else {
      own = tracks.StateAt(i, t, def.method);
    }
    if (!own) return std::nullopt;
    const VehicleSample me = SampleOf(*own);
    // Only vehicles whose x lies within the leader search's own straight-line reach (ComputeMetrics
    // checks the distance itself; this only spares it the far ones).
    std::span<const VehicleSample> others;
    if (def.metrics.leader) {
      const double reach = def.metrics.leader_range_m + me.length_m + longest_m;
      const auto lo = std::lower_bound(vehicles.begin(), vehicles.end(), me.position_m.x() - reach,
                                       [](const VehicleSample& v, double x) { return v.position_m.x() < x; });
      const auto hi = std::upper_bound(vehicles.begin(), vehicles.end(), me.position_m.x() + reach,
                                       [](double x, const VehicleSample& v) { return x < v.position_m.x(); });
      others = std::span<const VehicleSample>(vehicles.data() + (lo - vehicles.begin()), static_cast<size_t>(hi - lo));
    }
    return ComputeMetrics(t, me, others, roads, def.metrics);
  };
  for (int64_t k = k_first; k <= k_last; ++k) {
    const int64_t t = RowTimeNs(k, def.rate_hz);
    // Every entity that exists at t, at its state then: the selected ones, and with a leader search
    // every vehicle (each one's state is found once per row time, however many rows need it).
    existing.clear();
    vehicles.clear();
    longest_m = 0;
    if (def.metrics.leader) {
      for (size_t i = 0; i < all.size(); ++i) {
        if (t < all[i].FirstNs() || t > all[i].end_ns) continue;
        auto s = tracks.StateAt(i, t, def.method);
        if (!s) continue;
        if (IsVehicle(s->kind)) {
          vehicles.push_back(SampleOf(*s));
          longest_m = std::max(longest_m, vehicles.back().length_m);
        }
        existing.push_back({i, std::move(*s)});
      }
      std::sort(vehicles.begin(), vehicles.end(),
                [](const VehicleSample& a, const VehicleSample& b) { return a.position_m.x() < b.position_m.x(); });
    }
    // The selected tracks that have a row at t, in selection order.
    due.clear();
    for (size_t i : selected)
      if (spans[i] && k >= spans[i]->first && k <= spans[i]->second) due.push_back(i);
    // Their rows, computed in parallel when there are many (each row's leader search is independent);
    // written in order below.
    rows_at.assign(due.size(), std::nullopt);
    auto compute = [&](size_t from, size_t to) {
      for (size_t n = from; n < to; ++n) rows_at[n] = RowAt(due[n], t);
    };
    const size_t workers = std::min(threads, due.size() / kMinRowsPerThread);
    if (workers <= 1) {
      compute(0, due.size());
    } else {
      std::vector<std::thread> pool;
      const size_t per = (due.size() + workers - 1) / workers;
      for (size_t w = 1; w < workers; ++w) pool.emplace_back(compute, std::min(due.size(), w * per), std::min(due.size(), (w + 1) * per));
      compute(0, std::min(due.size(), per));
      for (auto& th : pool) th.join();
    }
    for (size_t n = 0; n < due.size(); ++n) {
      if (!rows_at[n]) continue;  // removed for a while, not back yet
      on_row(due[n], *rows_at[n]);
      ++rows;
    }
    if (progress) progress(k - k_first + 1, total);
  }
  return rows;
}

}  // namespace platoon::data
