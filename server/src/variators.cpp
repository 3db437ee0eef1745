// Variators during a run (variators.hpp).
#include "platoon/server/variators.hpp"

#include "platoon/config/params.hpp"
#include "platoon/entity_id.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace platoon::server {

namespace {

int64_t Ns(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

// The first state of variator `index`'s stream: its seed and its index mixed, so variators with the same
// seed still differ.
uint64_t VariatorStreamStart(uint64_t seed, size_t index) {
  return SplitMix64(seed) ^ SplitMix64(0x7661726961746f72ull + static_cast<uint64_t>(index));
}

}  // namespace

Variators::Variators(std::vector<config::VariatorDef> defs) : defs_(std::move(defs)), state_(defs_.size()) {
  for (size_t i = 0; i < defs_.size(); ++i) state_[i].rng = VariatorStreamStart(defs_[i].seed, i);
}

double Variators::Uniform(State& s) {
  s.rng += 0x9e3779b97f4a7c15ull;
  return static_cast<double>(SplitMix64(s.rng) >> 11) * 0x1.0p-53;
}

double Variators::TriangleValue(const config::VariatorDef& def, double u) {
  u = std::clamp(u, 0.0, 1.0);
  return def.min + (def.max - def.min) * (1.0 - std::abs(2.0 * u - 1.0));
}

const VariatorSegment& Variators::SegmentAt(size_t i, int64_t sim_ns) {
  const config::VariatorDef& d = defs_[i];
  State& s = state_[i];
  auto draw = [&](int64_t start, const VariatorSegment* before) {
    VariatorSegment seg;
    seg.start_ns = start;
    if (d.kind == config::VariatorDef::Kind::kStep) seg.value = d.min + (d.max - d.min) * Uniform(s);
    else if (d.kind == config::VariatorDef::Kind::kToggle) seg.value = before ? 1.0 - before->value : (d.initial ? 1.0 : 0.0);
    seg.duration_ns = std::max<int64_t>(1, Ns(d.duration_lo_s + (d.duration_hi_s - d.duration_lo_s) * Uniform(s)));
    if (s.segments.size() >= kMaxSegments) s.segments.erase(s.segments.begin(), s.segments.begin() + kMaxSegments / 2);
    s.segments.push_back(seg);
  };
  if (s.segments.empty()) draw(Ns(d.start_s), nullptr);
  // A time before the newest segment: the kept one that holds it (the oldest when it was dropped).
  if (sim_ns < s.segments.back().start_ns) {
    auto it = std::upper_bound(s.segments.begin(), s.segments.end(), sim_ns,
                               [](int64_t t, const VariatorSegment& seg) { return t < seg.start_ns; });
    return it == s.segments.begin() ? *it : *(it - 1);
  }
  while (sim_ns >= s.segments.back().start_ns + s.segments.back().duration_ns) {
    const VariatorSegment last = s.segments.back();
    draw(last.start_ns + last.duration_ns, &last);
  }
  return s.segments.back();
}

double Variators::ValueAt(size_t i, int64_t sim_ns) {
  const config::VariatorDef& d = defs_.at(i);
  if (sim_ns < Ns(d.start_s)) return std::numeric_limits<double>::quiet_NaN();
  const VariatorSegment& seg = SegmentAt(i, sim_ns);
  if (d.kind != config::VariatorDef::Kind::kTriangle) return seg.value;
  return TriangleValue(d, static_cast<double>(sim_ns - seg.start_ns) / static_cast<double>(seg.duration_ns));
}

std::string Variators::Text(size_t i, double value) const {
  if (defs_[i].kind == config::VariatorDef::Kind::kToggle) return value > 0.5 ? "true" : "false";
  // Micro-units: enough for any parameter, and the same text on every machine.
  return config::FormatNumber(std::round(value * 1e6) / 1e6 + 0.0);
}

std::vector<VariatorChange> Variators::Step(int64_t sim_ns) {
  std::vector<VariatorChange> out;
  for (size_t i = 0; i < defs_.size(); ++i) {
    const config::VariatorDef& d = defs_[i];
    State& s = state_[i];
    const int64_t start = Ns(d.start_s);
    if (sim_ns < start) continue;
    int64_t due = 0;
    if (d.kind == config::VariatorDef::Kind::kTriangle) {
      const int64_t period = std::max<int64_t>(1, Ns(d.period_s));
      const uint64_t tick = static_cast<uint64_t>((sim_ns - start) / period);
      if (s.has_last && tick < s.ticks) continue;
      s.ticks = tick + 1;
      due = start + static_cast<int64_t>(tick) * period;
    } else {
      due = SegmentAt(i, sim_ns).start_ns;
    }
    const double value = ValueAt(i, due);
    std::string text = Text(i, value);
    if (s.has_last && text == s.last_text) continue;
    s.has_last = true;
    s.last_text = text;
    out.push_back(VariatorChange{i, d.param, value, std::move(text), due});
  }
  return out;
}

VariatorSystem::VariatorSystem(WorldCore& core, std::vector<config::VariatorDef> defs,
                               std::shared_ptr<spdlog::logger> log)
    : core_(core), variators_(std::move(defs)), log_(std::move(log)), stopped_(variators_.Defs().size(), false) {}

void VariatorSystem::OnAdvance(int64_t sim_ns, int64_t now_ns) {
  for (const VariatorChange& c : variators_.Step(sim_ns)) {
    if (stopped_[c.index]) continue;
    const auto reply = core_.RequestParamSet(c.param, c.text, "variator:" + std::to_string(c.index), now_ns);
    ++sets_;
    if (reply && !reply->ok) {
      // A parameter that refuses one value refuses the next ones too (unknown, read-only, out of range).
      stopped_[c.index] = true;
      log_->warn("variator {} ({} on {}): {} = {} refused: {}; the variator stops", c.index,
                 config::VariatorKindName(variators_.Defs()[c.index].kind), c.param, c.param, c.text, reply->error);
    }
  }
}

std::shared_ptr<VariatorSystem> InstallVariators(WorldCore& core, std::shared_ptr<spdlog::logger> log) {
  const config::SessionDef& session = core.Session();
  if (session.variators.empty()) return nullptr;
  auto system = std::make_shared<VariatorSystem>(core, session.variators, std::move(log));
  core.AddSystem(system, system_priority::kStepper);
  return system;
}

}  // namespace platoon::server
