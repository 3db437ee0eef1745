#include "platoon/input/scripted_input.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace platoon::input {
namespace {

constexpr const char* kHeader = "time_s,steer,throttle,brake";
constexpr const char* kColumnNames[4] = {"time_s", "steer", "throttle", "brake"};

std::string Trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

std::vector<std::string> SplitFields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream is(line);
  while (std::getline(is, field, ',')) fields.push_back(Trim(field));
  // getline drops a trailing empty field ("1,2,3,"); keep it so the column count is honest.
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

// A number that is the whole field and finite; false otherwise.
bool ParseNumber(const std::string& field, double* out) {
  if (field.empty()) return false;
  const char* first = field.data();
  const char* last = first + field.size();
  if (*first == '+') ++first;  // from_chars rejects a leading '+', people write it
  const auto [ptr, ec] = std::from_chars(first, last, *out);
  return ec == std::errc() && ptr == last && std::isfinite(*out);
}

std::string FormatNumber(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

ScriptedInput ScriptedInput::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScriptError(path + ": cannot open the input script");
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

ScriptedInput ScriptedInput::Parse(const std::string& text, const std::string& source_name) {
  std::vector<ScriptRow> rows;
  std::istringstream is(text);
  std::string raw;
  int line_no = 0;
  bool seen_content = false;
  while (std::getline(is, raw)) {
    ++line_no;
    const std::string where = source_name + ":" + std::to_string(line_no) + ": ";
    // Strip a comment, then skip what is left if it is blank.
    const std::string line = Trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    const std::vector<std::string> fields = SplitFields(line);

    // The header is allowed once, as the first non-blank line.
    std::string squeezed = line;
    squeezed.erase(std::remove_if(squeezed.begin(), squeezed.end(), [](char c) { return c == ' ' || c == '\t'; }),
                   squeezed.end());
    const bool first_content = !seen_content;
    seen_content = true;
    if (squeezed == kHeader) {
      if (!first_content) throw ScriptError(where + "the header \"" + kHeader + "\" is only allowed as the first row");
      continue;
    }

    if (fields.size() != 4)
      throw ScriptError(where + "expected 4 columns \"time_s, steer, throttle, brake\", got " +
                        std::to_string(fields.size()));
    double v[4];
    for (int i = 0; i < 4; ++i) {
      if (!ParseNumber(fields[static_cast<size_t>(i)], &v[i])) {
        std::string msg = where + kColumnNames[i] + ": expected a number, got \"" + fields[static_cast<size_t>(i)] + "\"";
        if (first_content && i == 0) msg += std::string(" (a header must read \"") + kHeader + "\")";
        throw ScriptError(msg);
      }
    }

    // Range checks: the same ranges as vehicle::VehicleInput.
    if (v[1] < -1 || v[1] > 1)
      throw ScriptError(where + "steer: expected a number in [-1, 1] (left positive), got " + FormatNumber(v[1]));
    if (v[2] < -1 || v[2] > 1)
      throw ScriptError(where + "throttle: expected a number in [-1, 1] (negative: reverse gear), got " + FormatNumber(v[2]));
    if (v[3] < 0 || v[3] > 1)
      throw ScriptError(where + "brake: expected a number in [0, 1], got " + FormatNumber(v[3]));
    if (!rows.empty() && v[0] <= rows.back().time_s)
      throw ScriptError(where + "time_s: expected a time greater than the previous row's " +
                        FormatNumber(rows.back().time_s) + " s (strictly increasing), got " + FormatNumber(v[0]));

    rows.push_back(ScriptRow{v[0], vehicle::VehicleInput{v[1], v[2], v[3]}});
  }
  if (rows.empty())
    throw ScriptError(source_name + ":" + std::to_string(std::max(line_no, 1)) +
                      ": expected at least one row \"time_s, steer, throttle, brake\", got none");
  return ScriptedInput(std::move(rows), source_name);
}

vehicle::VehicleInput ScriptedInput::At(double t_s) const {
  // Hold the first and last rows outside the script.
  if (!(t_s > rows_.front().time_s)) return rows_.front().input;  // also catches NaN
  if (t_s >= rows_.back().time_s) return rows_.back().input;

  // First row strictly after t; the segment is [it - 1, it].
  const auto it = std::upper_bound(rows_.begin(), rows_.end(), t_s,
                                   [](double t, const ScriptRow& r) { return t < r.time_s; });
  const ScriptRow& a = *(it - 1);
  const ScriptRow& b = *it;
  const double f = (t_s - a.time_s) / (b.time_s - a.time_s);
  auto lerp = [f](double x, double y) { return x + (y - x) * f; };
  return vehicle::VehicleInput{lerp(a.input.steer, b.input.steer), lerp(a.input.throttle, b.input.throttle),
                               lerp(a.input.brake, b.input.brake)};
}

}  // namespace platoon::input
