#include "task_cmd.hpp"

#include "platoon/config/cli.hpp"
#include "platoon/data/columns.hpp"
#include "platoon/data/standard_tasks.hpp"
#include "platoon/server/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <numbers>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>

namespace platoon::launcher {
namespace {

constexpr const char* kMe = "platoon task";
using config::cli::kExitUsage;

// A usage or input error: the message says where and what was expected; main prints it and exits 2.
struct TaskError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using data::SplitCsvLine;

// A CSV read whole: its header's columns by name and the rows' fields.
struct CsvTable {
  std::string path;
  std::map<std::string, size_t> column;
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> line_of_row;  // 1-based line numbers, for messages

  // The index of a required column, or a TaskError naming the file and the columns it has.
  size_t Require(const std::string& name, const std::string& why) const {
    auto it = column.find(name);
    if (it != column.end()) return it->second;
    std::string have;
    for (const auto& [n, i] : column) have += (have.empty() ? "" : ", ") + n;
    throw TaskError(fmt::format("{}:1: expected a column {} ({}), got the columns {}", path, name, why, have));
  }
  std::optional<size_t> Find(const std::string& name) const {
    auto it = column.find(name);
    return it == column.end() ? std::nullopt : std::optional<size_t>(it->second);
  }
  // Field `col` of row `r` as a number; NaN when empty; a TaskError when it is not a number.
  double Number(size_t r, size_t col) const {
    const auto& f = rows[r];
    if (col >= f.size() || f[col].empty()) return std::nan("");
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(f[col].c_str(), &end);
    if (end == f[col].c_str() || *end != '\0')
      throw TaskError(fmt::format("{}:{}: expected a number in column {}, got \"{}\"", path, line_of_row[r], col + 1, f[col]));
    return v;
  }
};

CsvTable ReadCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TaskError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  CsvTable t;
  t.path = path;
  std::string line;
  if (!std::getline(in, line)) throw TaskError(fmt::format("{}:1: expected a CSV header line, got an empty file", path));
  const auto header = SplitCsvLine(line);
  for (size_t i = 0; i < header.size(); ++i) t.column.emplace(header[i], i);
  for (size_t n = 2; std::getline(in, line); ++n) {
    if (line.empty() || line == "\r") continue;
    t.rows.push_back(SplitCsvLine(line));
    t.line_of_row.push_back(n);
  }
  return t;
}

// The markers of a `marker` cell (several in one row are joined by " | ", as platoon export writes them).
std::vector<std::string> SplitMarkers(const std::string& cell) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t bar = cell.find(" | ", start);
    out.push_back(cell.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) break;
    start = bar + 3;
  }
  return out;
}

// Every (sim time, marker text) of a CSV's `marker` column.
std::vector<std::pair<double, std::string>> CsvMarkers(const CsvTable& t, const std::string& why) {
  const size_t time_col = t.Require("sim_time_s", "the sim time of each row");
  const size_t marker_col = t.Require("marker", why);
  std::vector<std::pair<double, std::string>> out;
  for (size_t r = 0; r < t.rows.size(); ++r)
    if (marker_col < t.rows[r].size() && !t.rows[r][marker_col].empty())
      for (auto& m : SplitMarkers(t.rows[r][marker_col])) out.emplace_back(t.Number(r, time_col), std::move(m));
  return out;
}

// "150:-1" -> sign at 150 m pointing to lane -1.
data::LctSign ParseSign(const std::string& text, const std::string& where) {
  const auto colon = text.find(':');
  char* end = nullptr;
  data::LctSign sign;
  bool ok = colon != std::string::npos;
  if (ok) {
    const std::string s = text.substr(0, colon), lane = text.substr(colon + 1);
    sign.s_m = std::strtod(s.c_str(), &end);
    ok = !s.empty() && *end == '\0' && std::isfinite(sign.s_m);
    const long l = std::strtol(lane.c_str(), &end, 10);
    ok = ok && !lane.empty() && *end == '\0' && l != 0 && l >= -100 && l <= 100;
    sign.lane = static_cast<int>(l);
  }
  if (!ok) throw TaskError(fmt::format("{}: expected S:LANE (e.g. 150:-1: a sign at 150 m pointing to lane -1), got \"{}\"",
                                       where, text));
  return sign;
}

// The marker text an LCT sign event logs: "lct:LANE@S", e.g. "lct:-1@200".
std::string SignMarker(const data::LctSign& sign) { return fmt::format("lct:{}@{:g}", sign.lane, sign.s_m); }

// Writes `text` to `path` ("" standard output).
void WriteOut(const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw TaskError(fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
}

std::string Num(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : ""; }

// ---------------------------------------------------------------------------------------------------------------

int ScoreLct(const TaskOptions& o) {
  data::LctDef def;
  def.lane_width_m = o.lane_width_m;
  def.onset_before_sign_m = o.onset_before_sign_m;
  def.change_length_m = o.change_length_m;
  def.start_lane = o.start_lane;
  if (auto e = data::ValidateLctDef(def); !e.empty()) throw TaskError(fmt::format("{}: {}", kMe, e));
  const auto csv = ReadCsv(o.input);
  const size_t s_col = csv.Require("s_m", "the arc length along the road");
  const size_t lane_col = csv.Require("lane", "the lane index");
  const size_t off_col = csv.Require("lane_offset_m", "the offset from the lane centre");
  // The signs: from --signs, else from the lct:LANE@S markers the sign events logged.
  std::vector<data::LctSign> signs;
  for (const auto& s : o.signs) signs.push_back(ParseSign(s, "--signs"));
  if (signs.empty()) {
    for (const auto& [t, text] : CsvMarkers(csv, "the markers, from platoon export --markers; or give --signs"))
      if (text.rfind("lct:", 0) == 0) {
        const auto at = text.find('@');
        if (at == std::string::npos) throw TaskError(fmt::format("{}: marker \"{}\" at {} s: expected lct:LANE@S", o.input, text, t));
        signs.push_back(ParseSign(text.substr(at + 1) + ":" + text.substr(4, at - 4), fmt::format("{}: marker at {} s", o.input, t)));
      }
    if (signs.empty()) throw TaskError(fmt::format("{}: expected lct:LANE@S markers of the sign events (or give --signs), got none", o.input));
  }
  std::sort(signs.begin(), signs.end(), [](const auto& a, const auto& b) { return a.s_m < b.s_m; });
  std::vector<data::LateralPoint> trace;
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    const double s = csv.Number(r, s_col), lane = csv.Number(r, lane_col), off = csv.Number(r, off_col);
    // Off the carriageway (lane 0 or empty) there is no lateral position on the track.
    if (!std::isfinite(s) || !std::isfinite(lane) || lane == 0 || !std::isfinite(off)) continue;
    trace.push_back({s, data::LaneCentreLateral(static_cast<int>(lane), def.lane_width_m) + off});
  }
  std::vector<data::LateralPoint> path;
  try {
    path = data::LctNormativePath(def, signs);
  } catch (const std::invalid_argument& e) {
    throw TaskError(fmt::format("{}: {}", o.input, e.what()));
  }
  const auto score = data::ScoreLct(trace, path, o.from, o.to);
  if (!std::isfinite(score.mean_deviation_m)) {
    std::fprintf(stderr, "%s: %s: no stretch of at least 1 m of the track to score (%zu rows on the carriageway)\n", kMe,
                 o.input.c_str(), trace.size());
    return 1;
  }
  WriteOut(o.out_path, fmt::format("task,mean_deviation_m,length_m,samples,signs\nlct,{},{},{},{}\n",
                                   Num(score.mean_deviation_m), Num(score.length_m), score.samples, signs.size()));
  if (!o.out_path.empty())
    std::printf("lane change test: mean deviation %.3f m over %.0f m of track, %zu signs -> %s\n", score.mean_deviation_m,
                score.length_m, signs.size(), o.out_path.c_str());
  return 0;
}

int ScoreDrt(const TaskOptions& o) {
  // Stimulus onsets and responses: from a session log's markers (exact sim times) or a CSV's marker column (the
  // sim time of the row that carries the marker: within one row period after it).
  std::vector<std::pair<double, std::string>> markers;
  const bool is_log = o.input.size() > 5 && o.input.substr(o.input.size() - 5) == ".mcap";
  if (is_log) {
    const auto log = server::LoadReplayLog(o.input);
    if (log.world_states == 0)
      throw TaskError(fmt::format("{}: expected a platoon session log{}{}", o.input, log.problems.empty() ? "" : ": ",
                                  log.problems.empty() ? "" : log.problems.front()));
    for (const auto& m : log.markers) markers.emplace_back(static_cast<double>(m.sim_ns) * 1e-9, m.text);
    std::stable_sort(markers.begin(), markers.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  } else {
    markers = CsvMarkers(ReadCsv(o.input), "the markers, from platoon export --markers");
  }
  std::vector<double> onsets, responses;
  for (const auto& [t, text] : markers) {
    if (t < o.from || t > o.to) continue;
    if (text == o.stimulus) onsets.push_back(t);
    if (std::find(o.responses.begin(), o.responses.end(), text) != o.responses.end()) responses.push_back(t);
  }
  std::sort(onsets.begin(), onsets.end());
  std::sort(responses.begin(), responses.end());
  if (onsets.empty()) {
    std::fprintf(stderr, "%s: %s: no stimulus marker \"%s\" (%zu markers in all)\n", kMe, o.input.c_str(), o.stimulus.c_str(),
                 markers.size());
    return 1;
  }
  const auto score = data::ScoreDrt(data::DefaultDrtDef(), onsets, responses);
  WriteOut(o.out_path, fmt::format("task,stimuli,hits,misses,hit_rate,mean_rt_s,median_rt_s,premature,extra\n"
                                   "drt,{},{},{},{},{},{},{},{}\n",
                                   score.trials.size(), score.hits, score.misses, Num(score.hit_rate), Num(score.mean_rt_s),
                                   Num(score.median_rt_s), score.premature, score.extra));
  if (!o.trials_path.empty()) {
    std::string text = "stimulus,onset_s,hit,response_time_s,premature\n";
    for (size_t i = 0; i < score.trials.size(); ++i) {
      const auto& t = score.trials[i];
      text += fmt::format("{},{:.6f},{},{},{}\n", i + 1, t.onset_s, t.hit ? 1 : 0, Num(t.response_time_s), t.premature);
    }
    WriteOut(o.trials_path, text);
  }
  if (!o.out_path.empty())
    std::printf("detection response task: %u of %zu stimuli hit (%.1f %%), mean response time %.3f s -> %s\n", score.hits,
                score.trials.size(), 100.0 * score.hit_rate, score.mean_rt_s, o.out_path.c_str());
  return 0;
}

int ScoreCarFollowing(const TaskOptions& o) {
  data::CarFollowingDef def;
  def.frequency_hz = o.frequency_hz;
  def.periods_per_segment = o.periods_per_segment;
  if (auto e = data::ValidateCarFollowingDef(def); !e.empty()) throw TaskError(fmt::format("{}: {} (--frequency, --periods)", kMe, e));
  if (o.lead_csv.empty()) throw TaskError(fmt::format("{}: car-following needs --lead LEAD.csv, the lead vehicle's CSV", kMe));
  const auto follower = ReadCsv(o.input);
  const auto lead = ReadCsv(o.lead_csv);
  const size_t ft = follower.Require("sim_time_s", "the sim time"), fv = follower.Require("speed_mps", "the speed");
  const size_t lt = lead.Require("sim_time_s", "the sim time"), lv = lead.Require("speed_mps", "the speed");
  std::vector<std::pair<double, double>> lead_speed;
  for (size_t r = 0; r < lead.rows.size(); ++r) {
    const double t = lead.Number(r, lt), v = lead.Number(r, lv);
    if (std::isfinite(t) && std::isfinite(v) && (lead_speed.empty() || t > lead_speed.back().first)) lead_speed.emplace_back(t, v);
  }
  // The lead's speed at each follower row's time, linear between the lead's rows (the same times when both come
  // from one export).
  std::vector<data::SpeedPair> samples;
  for (size_t r = 0; r < follower.rows.size(); ++r) {
    const double t = follower.Number(r, ft), v = follower.Number(r, fv);
    if (!std::isfinite(t) || !std::isfinite(v) || t < o.from || t > o.to) continue;
    auto it = std::lower_bound(lead_speed.begin(), lead_speed.end(), t, [](const auto& p, double x) { return p.first < x; });
    if (it == lead_speed.end() || (it == lead_speed.begin() && it->first > t)) continue;
    double lv_at = it->second;
    if (it->first > t) {
      const auto& p0 = *(it - 1);
      lv_at = p0.second + (t - p0.first) / (it->first - p0.first) * (it->second - p0.second);
    }
    samples.push_back({t, lv_at, v});
  }
  const auto score = data::ScoreCarFollowing(def, samples);
  if (score.segments == 0) {
    std::fprintf(stderr, "%s: %s and %s: %zu common samples span less than one segment of %u periods at %g Hz (%g s)\n", kMe,
                 o.input.c_str(), o.lead_csv.c_str(), samples.size(), def.periods_per_segment, def.frequency_hz,
                 def.periods_per_segment / def.frequency_hz);
    return 1;
  }
  WriteOut(o.out_path,
           fmt::format("task,frequency_hz,gain,delay_s,phase_deg,coherence,segments,lead_amplitude_mps,follower_amplitude_mps\n"
                       "car-following,{},{},{},{},{},{},{},{}\n",
                       Num(def.frequency_hz), Num(score.gain), Num(score.delay_s), Num(score.phase_rad * 180 / std::numbers::pi),
                       Num(score.coherence), score.segments, Num(score.lead_amplitude_mps), Num(score.follower_amplitude_mps)));
  if (!o.out_path.empty())
    std::printf("car following at %g Hz: gain %.3f, delay %.2f s, coherence %.3f over %u segments -> %s\n", def.frequency_hz,
                score.gain, score.delay_s, score.coherence, score.segments, o.out_path.c_str());
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------

// The seat message of a sign: the three lanes left to right, the target marked.
std::string SignText(int lane) {
  std::string boxes;
  for (int l = -1; l >= -3; --l) boxes += l == lane ? " [X]" : " [ ]";
  const char* name = lane == -1 ? "LEFT" : lane == -2 ? "MIDDLE" : lane == -3 ? "RIGHT" : "";
  return fmt::format("LANE CHANGE{}   {} LANE", boxes, name);
}

int EventsLct(const TaskOptions& o) {
  std::vector<data::LctSign> signs;
  for (const auto& s : o.signs) signs.push_back(ParseSign(s, "--signs"));
  if (signs.empty()) {
    // Each sign points to one of the two other lanes of three, drawn from the seed.
    std::mt19937_64 rng(o.seed);
    int lane = o.start_lane;
    for (unsigned i = 0; i < o.sign_count; ++i) {
      std::vector<int> other;
      for (int l = -1; l >= -3; --l)
        if (l != lane) other.push_back(l);
      lane = other[rng() % other.size()];
      signs.push_back({o.first_sign_m + i * o.spacing_m, lane});
    }
  }
  data::LctDef def;
  def.lane_width_m = o.lane_width_m;
  def.onset_before_sign_m = o.onset_before_sign_m;
  def.change_length_m = o.change_length_m;
  def.start_lane = o.start_lane;
  try {
    data::LctNormativePath(def, signs);  // refuses unsorted or overlapping signs
  } catch (const std::invalid_argument& e) {
    throw TaskError(fmt::format("{}: --signs: {}", kMe, e.what()));
  }
  std::string text = fmt::format(
      "# Lane change test signs, printed by `platoon task events lct{}`. Each shows on {}'s seat when\n"
      "# its car is {:g} m before the sign (a straight road along +x, s = 0 at x = {:g}) and logs the marker\n"
      "# lct:LANE@S that `platoon task score lct` reads. Signs (s in m : lane):\n#",
      o.signs.empty() ? fmt::format(" --seed {}", o.seed) : "", o.driver, o.visible_m, o.road_start_x_m);
  for (size_t i = 0; i < signs.size(); ++i)
    text += fmt::format("{}{:g}:{}", i > 0 && i % 10 == 0 ? "\n#" : " ", signs[i].s_m, signs[i].lane);
  text += "\n";
  const double show_s = o.visible_m / (60.0 / 3.6);  // at 60 km/h the sign is passed after this long
  for (size_t i = 0; i < signs.size(); ++i) {
    const auto& s = signs[i];
    const double x = o.road_start_x_m + s.s_m;
    text += fmt::format(
        "\n[[event]]\nname = \"lct_sign_{:02}\"\n"
        "when = {{ entity = \"{}\", quantity = \"region\", box = [{:g}, -30, {:g}, 30] }}\n"
        "do = [ {{ action = \"message\", text = \"{}\", seat = \"{}\", duration_s = {:.1f} }},\n"
        "       {{ action = \"mark\", text = \"{}\" }} ]\n",
        i + 1, o.driver, x - o.visible_m, x, SignText(s.lane), o.driver, show_s, SignMarker(s));
  }
  WriteOut(o.out_path, text);
  return 0;
}

int EventsDrt(const TaskOptions& o) {
  auto def = data::DefaultDrtDef();
  def.stimulus_s = o.stimulus_s;
  if (auto e = data::ValidateDrtDef(def); !e.empty()) throw TaskError(fmt::format("{}: {}", kMe, e));
  // Default: 300 s of stimuli from 10 s of sim time.
  const double from = std::isfinite(o.from) ? o.from : 10.0;
  const double to = std::isfinite(o.to) ? o.to : from + 300.0;
  if (!(to > from) || to - from > 1e5)
    throw TaskError(fmt::format("{}: events drt: expected --from < --to, at most 1e5 s apart, got {} and {}", kMe, from, to));
  const auto onsets = data::DrtSchedule(def, o.seed, from, to);
  std::string text = fmt::format(
      "# Detection response task stimuli, printed by `platoon task events drt --seed {} --from {:g} --to {:g}`:\n"
      "# {} onsets 3-5 s apart, each shown on {}'s seat for {:g} s and logged as the marker \"{}\" (also on\n"
      "# the marker stream, for an external LED). The response is a seat key: its marker (key:space) is what\n"
      "# `platoon task score drt` reads.\n",
      o.seed, from, to, onsets.size(), o.driver, o.stimulus_s, o.stimulus);
  for (size_t i = 0; i < onsets.size(); ++i)
    text += fmt::format(
        "\n[[event]]\nname = \"drt_{:03}\"\nwhen = {{ sim_time = {:.3f} }}\n"
        "do = [ {{ action = \"message\", text = \"{}\", seat = \"{}\", duration_s = {:g} }},\n"
        "       {{ action = \"mark\", text = \"{}\" }} ]\n",
        i + 1, onsets[i], o.stimulus_text, o.driver, o.stimulus_s, o.stimulus);
  // The stimulus ends at the response: a blank message (0.1 s, the shortest) replaces it at the press's next step.
  text += fmt::format(
      "\n# A press of space ends the stimulus shown: a blank message replaces it.\n"
      "[[event]]\nname = \"drt_response\"\nwhen = {{ key = \"space\", seat = \"{}\" }}\nrepeat = true\n"
      "do = [ {{ action = \"message\", text = \" \", seat = \"{}\", duration_s = 0.1 }} ]\n",
      o.driver, o.driver);
  WriteOut(o.out_path, text);
  return 0;
}

int EventsCarFollowing(const TaskOptions& o) {
  const double from = std::isfinite(o.from) ? o.from : 10.0;
  const double to = std::isfinite(o.to) ? o.to : from + 300.0;
  const double f = o.frequency_hz > 0 ? o.frequency_hz : 0.05;
  if (!(to > from) || (to - from) / o.point_step_s > 100000)
    throw TaskError(fmt::format("{}: events car-following: expected --from < --to and at most 100000 profile points, got {} "
                                "to {} every {} s", kMe, from, to, o.point_step_s));
  if (!(o.amplitude_mps >= 0) || !(o.mean_speed_mps - o.amplitude_mps >= 0))
    throw TaskError(fmt::format("{}: events car-following: expected 0 <= --amplitude <= --mean-speed, got {} and {}", kMe,
                                o.amplitude_mps, o.mean_speed_mps));
  std::string text = fmt::format(
      "# Car following with a sinusoidal lead speed, printed by `platoon task events car-following --frequency {:g}\n"
      "# --mean-speed {:g} --amplitude {:g} --from {:g} --to {:g}`: from {:g} s of sim time the car ahead of {} follows\n"
      "# v = {:g} + {:g} sin(2 pi {:g} (t - {:g})) m/s, a point every {:g} s (linear between them), then drives on.\n"
      "# Score: platoon task score car-following FOLLOWER.csv --lead LEAD.csv --frequency {:g} --from {:g} --to {:g}\n",
      f, o.mean_speed_mps, o.amplitude_mps, from, to, from, o.driver, o.mean_speed_mps, o.amplitude_mps, f, from,
      o.point_step_s, f, from, to);
  text += fmt::format("\n[[event]]\nname = \"lead_sine\"\nwhen = {{ sim_time = {:g} }}\n"
                      "do = [ {{ action = \"speed_profile\", target = \"ahead:{}\", points = [", from, o.driver);
  const auto n = static_cast<size_t>(std::floor((to - from) / o.point_step_s + 1e-9));
  for (size_t i = 0; i <= n; ++i) {
    const double t = static_cast<double>(i) * o.point_step_s;
    const double v = o.mean_speed_mps + o.amplitude_mps * std::sin(2.0 * std::numbers::pi * f * t);
    text += fmt::format("{}{}{:g}, {:.4f}", i == 0 ? "" : ",", i % 6 == 0 ? "\n    " : " ", t, v);
  }
  text += " ] },\n       { action = \"mark\", text = \"car following: sine starts\" } ]\n";
  WriteOut(o.out_path, text);
  return 0;
}

}  // namespace

CLI::App* AddTaskCommand(CLI::App& app, TaskOptions& o) {
  auto* cmd = app.add_subcommand(
      "task",
      "Standard tasks of driving studies (docs/TASKS.md): the lane change test (ISO 26022), the detection response task "
      "(ISO 17488) and car following with a sinusoidal lead speed. `task events` prints a task's scenario events for a "
      "session file; `task score` scores a drive.\n\n"
      "  platoon run examples/tasks/lct.toml --lockstep --duration 200\n"
      "  platoon export recordings/lct-*.mcap --csv out --markers --variables s,lane,lane_offset\n"
      "  platoon task score lct out/participant.csv --out lct_score.csv\n"
      "      mean deviation from the normative path, the signs from the lct:LANE@S markers\n"
      "  platoon task score drt recordings/drt-*.mcap --out drt_score.csv --trials drt_trials.csv\n"
      "      hit rate, mean and median response time (100-2500 ms after onset); one row per stimulus\n"
      "  platoon task score car-following out/participant.csv --lead out/lead.csv --frequency 0.05\n"
      "      gain, delay and coherence of the follower's speed at the lead's frequency\n"
      "  platoon task events drt --seed 3 --from 10 --to 310 --driver participant >> session.toml\n"
      "  platoon task events lct --seed 1 --driver participant >> session.toml\n"
      "  platoon task events car-following --frequency 0.05 --mean-speed 22 --amplitude 2 >> session.toml");
  cmd->require_subcommand(1);
  auto* score = cmd->add_subcommand("score", "Score a drive: writes a CSV with the task's score (standard output, or --out)");
  score->add_option("task", o.task, "lct, drt or car-following")->required()->check(CLI::IsMember({"lct", "drt", "car-following"}));
  score->add_option("input", o.input,
                    "The drive: a CSV of the seat's data write or of platoon export (with --markers where the task reads "
                    "markers); for drt also a session log (.mcap)")
      ->required()
      ->check(CLI::ExistingFile);
  score->add_option("--out", o.out_path, "Score CSV (default: standard output)");
  score->add_option("--trials", o.trials_path, "drt: one row per stimulus (onset, hit, response time) to this CSV");
  score->add_option("--lead", o.lead_csv, "car-following: the lead vehicle's CSV (sim_time_s, speed_mps)")->check(CLI::ExistingFile);
  score->add_option("--frequency", o.frequency_hz, "car-following: frequency of the lead's speed sine, in Hz")
      ->check(config::cli::Finite());
  score->add_option("--periods", o.periods_per_segment, "car-following: whole periods per averaged segment")
      ->check(CLI::Range(1u, 1000u));
  score->add_option("--stimulus", o.stimulus, "drt: marker text of a stimulus onset");
  score->add_option("--response", o.responses, "drt: marker text(s) of a response, e.g. key:space or a button's marker");
  auto* events = cmd->add_subcommand("events", "Print a task's [[event]] tables (lct signs, drt stimuli) for a session file");
  events->add_option("task", o.task, "lct, drt or car-following")->required()->check(CLI::IsMember({"lct", "drt", "car-following"}));
  events->add_option("--out", o.out_path, "Write them to this file (default: standard output)");
  events->add_option("--seed", o.seed, "Seed of the random draws (sign lanes, stimulus intervals)");
  events->add_option("--driver", o.driver, "The driver node whose seat shows the task");
  events->add_option("--count", o.sign_count, "lct: number of signs (without --signs)")->check(CLI::Range(1u, 10000u));
  events->add_option("--first", o.first_sign_m, "lct: s of the first sign, in m")->check(config::cli::Finite());
  events->add_option("--spacing", o.spacing_m, "lct: distance between signs, in m")->check(config::cli::Finite())->check(CLI::Range(1.0, 1e5));
  events->add_option("--visible", o.visible_m, "lct: a sign shows this far before it, in m")->check(config::cli::Finite())->check(CLI::Range(1.0, 1e4));
  events->add_option("--road-start-x", o.road_start_x_m, "lct: world x of s = 0 of the straight road along +x, in m")
      ->check(config::cli::Finite());
  events->add_option("--stimulus-s", o.stimulus_s, "drt: how long a stimulus shows, in s")->check(config::cli::Finite());
  events->add_option("--text", o.stimulus_text, "drt: the seat message of a stimulus");
  events->add_option("--stimulus", o.stimulus, "drt: marker text of a stimulus onset");
  events->add_option("--frequency", o.frequency_hz, "car-following: frequency of the lead's speed sine, in Hz (default 0.05)")
      ->check(config::cli::Finite())->check(CLI::Range(1e-4, 10.0));
  events->add_option("--mean-speed", o.mean_speed_mps, "car-following: the lead's mean speed, in m/s")->check(config::cli::Finite());
  events->add_option("--amplitude", o.amplitude_mps, "car-following: amplitude of the lead's speed sine, in m/s")
      ->check(config::cli::Finite());
  events->add_option("--point-step", o.point_step_s, "car-following: time between the speed profile's points, in s")
      ->check(config::cli::Finite())->check(CLI::Range(0.01, 100.0));
  for (auto* c : {score, events}) {
    c->add_option("--signs", o.signs, "lct: the signs as S:LANE, e.g. 150:-1,300:-3 (score: default from the markers)")
        ->delimiter(',');
    c->add_option("--lane-width", o.lane_width_m, "lct: lane width, in m")->check(config::cli::Finite());
    c->add_option("--onset", o.onset_before_sign_m, "lct: the normative lane change starts this far before the sign, in m")
        ->check(config::cli::Finite());
    c->add_option("--change-length", o.change_length_m, "lct: length of the normative lane change, in m")
        ->check(config::cli::Finite());
    c->add_option("--start-lane", o.start_lane, "lct: lane before the first sign (-1 left, -2 middle, -3 right of three)");
    c->add_option("--from", o.from, "Scored or generated from: lct score s in m; drt and car-following sim time in s")
        ->check(config::cli::Finite());
    c->add_option("--to", o.to, "Scored or generated to (as --from)")->check(config::cli::Finite());
  }
  cmd->callback([score, &o] { o.action = score->parsed() ? "score" : "events"; });
  return cmd;
}

int RunTask(const TaskOptions& o) {
  try {
    if (o.action == "events") return o.task == "lct" ? EventsLct(o) : o.task == "drt" ? EventsDrt(o) : EventsCarFollowing(o);
    if (o.task == "lct") return ScoreLct(o);
    if (o.task == "drt") return ScoreDrt(o);
    return ScoreCarFollowing(o);
  } catch (const TaskError& e) {
    std::fprintf(stderr, "%s: %s\n", kMe, e.what());
    return kExitUsage;
  }
}

}  // namespace platoon::launcher
