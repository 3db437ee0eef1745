#pragma once
/// Traffic signs with meaning after seed 004 §5.3 (Traffic Sign Plug-in): typed signs (speed limits, end
/// of limit, stop, give way, no overtaking, warnings, direction) in a country's design ("de", "uk"), on
/// posts beside the road or on gantries over it, some of them variable message signs whose content is set
/// during a run. Signs are placed by a generator at configured frequencies, listed in the session file or
/// mapped from OpenDRIVE signals. The queries give the speed limit in force at an s per direction and the
/// sign a driver approaches or has just passed. Pure core: no clock, no I/O, no rendering. docs/WORLD.md "Signs".

#include "platoon/geometry.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/world/conditions.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace platoon::road {

/// What a sign says. The order is the class number of ROI ground truth (SignDetail) and data columns.
enum class SignType : uint8_t {
  kSpeedLimit = 0,        ///< Maximum speed `value` (km/h in "de", mph in "uk") from the sign on.
  kEndOfLimit,            ///< The limit `value` ends: the road's own limit applies again.
  kEndOfRestrictions,     ///< Every limit and overtaking ban ends.
  kStop,                  ///< Stop and give way.
  kGiveWay,               ///< Give way.
  kNoOvertaking,          ///< Overtaking banned from here.
  kEndOfNoOvertaking,     ///< The overtaking ban ends.
  kWarningCurveLeft,      ///< Warning: curve to the left ahead.
  kWarningCurveRight,     ///< Warning: curve to the right ahead.
  kWarningCrossing,       ///< Warning: crossroads ahead.
  kWarningGeneral,        ///< Warning: other danger.
  kDirection,             ///< Direction sign (a destination board); `value` = distance in km (0: none).
  kBlank,                 ///< A variable message sign showing nothing.
};
/// Number of sign types.
inline constexpr int kSignTypeCount = 13;

/// Data/config name of a type: "speed_limit", "end_of_limit", "end_of_restrictions", "stop", "give_way",
/// "no_overtaking", "end_of_no_overtaking", "warning_curve_left", "warning_curve_right", "warning_crossing",
/// "warning_general", "direction", "blank".
const char* SignTypeName(SignType t);
/// The type named `name` (SignTypeName's names), or nullopt.
std::optional<SignType> SignTypeFromName(std::string_view name);
/// Whether the sign carries a number (speed limit, end of limit, direction distance).
bool SignHasValue(SignType t);

/// A country's sign design and speed unit.
enum class SignCountry : uint8_t {
  kDe,  ///< Germany: km/h; red-ringed circles, red-bordered triangles, yellow direction boards.
  kUk,  ///< United Kingdom: mph; the national-limit disc ends limits, green direction boards.
};
/// Config name: "de", "uk".
const char* SignCountryName(SignCountry c);
/// The country named `name` ("de", "uk"; case-insensitive), or nullopt.
std::optional<SignCountry> SignCountryFromName(std::string_view name);
/// Metres per second of one unit of a speed-limit value in that country: 1/3.6 (km/h) or 0.44704 (mph).
double SpeedUnitMps(SignCountry c);

/// What holds the plate.
enum class SignMount : uint8_t {
  kPost,    ///< A post beside the carriageway.
  kGantry,  ///< A frame over the carriageway; the plate hangs above the lanes of its direction.
};
/// Config name: "post", "gantry".
const char* SignMountName(SignMount m);

/// One sign. Read-only once placed, except the content of a variable sign (SetVariableContent).
struct Sign {
  uint32_t id = 0;                    ///< Unique within the session's list, from 1.
  SignType type = SignType::kSpeedLimit;  ///< What it says.
  double value = 0;                   ///< Its number: speed in the country's unit (50 = 50 km/h in "de"), km for direction; 0 none.
  SignCountry country = SignCountry::kDe;  ///< Design and unit.
  double s_m = 0;                     ///< Road arc length of the sign, in m.
  int direction = 1;                  ///< Traffic it is for: +1 driving towards +s (it faces -s), -1 towards -s.
  int side = -1;                      ///< Post side: -1 right of the reference line, +1 left (gantries: ignored).
  double lateral_m = 1.0;             ///< Gap from the carriageway edge to the post, in m. Typical 0.5-2.5.
  SignMount mount = SignMount::kPost; ///< Post or gantry.
  bool variable = false;              ///< A variable message sign: its type and value may change during a run.
  double size_m = 0.75;               ///< Plate size (circle diameter, triangle edge, octagon width), in m. Typical 0.6-1.0.
  double height_m = 2.0;              ///< Height of the plate's centre above the road, in m (gantries typical 6).
};

/// Limit in m/s a speed-limit sign sets (value x SpeedUnitMps); 0 for any other type.
double SignLimitMps(const Sign& s);

/// Where a sign stands in the world.
struct SignPose {
  Vec3 plate_m = Vec3::Zero();        ///< Centre of the plate's face, in m (world).
  double facing_rad = 0;              ///< Direction the face looks towards (at the approaching traffic), in rad from +x.
  std::vector<Vec3> posts_m;          ///< Foot of each post on the ground (one for a post, two for a gantry), in m.
  double post_height_m = 0;           ///< Height of the posts (to the plate's top; a gantry's to its beam), in m.
  double beam_width_m = 0;            ///< Gantry: length of the beam between the posts, in m; 0 for a post.
};
/// The sign's pose along `road`: posts `lateral_m` beyond the edge of its side, a gantry spanning the
/// carriageway with the plate over the centre of the lanes of its direction.
SignPose PlaceSign(const Road& road, const Sign& sign);

/// A sign with its pose: what the viewer and the sensors draw.
struct PlacedSign {
  Sign sign;                          ///< The sign.
  SignPose pose;                      ///< Where it stands (PlaceSign).
};
/// Every sign of `signs` placed along `road`.
std::vector<PlacedSign> PlaceSigns(const Road& road, const std::vector<Sign>& signs);

/// How the generator places signs ([signs] in the session file): a Poisson process per type and direction
/// with the given frequency, at least min_spacing_m apart in one direction.
struct SignGeneratorDef {
  bool enabled = false;               ///< Whether the generator places signs.
  SignCountry country = SignCountry::kDe;  ///< Design of every generated sign.
  uint64_t seed = 1;                  ///< Random seed; same seed, road and settings: same signs.
  std::array<double, kSignTypeCount> per_km{};  ///< Mean count per km and direction of each type (kBlank: unused). Typical 0.2-2.
  std::vector<double> speed_values = {50, 70, 100};  ///< Values a generated speed limit draws from, in the country's unit.
  double gantry_share = 0;            ///< Fraction of signs on gantries, 0..1.
  double variable_share = 0;          ///< Fraction of gantry signs that are variable message signs, 0..1.
  bool both_directions = true;        ///< Also sign the -s direction (roads with left lanes).
  double min_spacing_m = 25;          ///< Least distance between two signs of one direction, in m.
  double lateral_m = 1.0;             ///< Gap from the carriageway edge to a post, in m.
};
/// Generator settings with every frequency 0 (nothing placed until one is set) and enabled = false.
SignGeneratorDef DefaultSignGeneratorDef();
/// Checks the settings; empty when valid, else a message naming the bad field.
std::string ValidateSignGeneratorDef(const SignGeneratorDef& def);
/// Places signs along `road` (ids from `first_id`), sorted by s; asserts the settings are valid.
std::vector<Sign> GenerateSigns(const Road& road, const SignGeneratorDef& def, uint32_t first_id = 1);

/// A sign from an OpenDRIVE `<signal>`: `type`/`subtype` as the signal names them in the catalogue of
/// `country` (OpenDRIVE country code "DE", "GB"/"UK"; the German catalogue numbers, e.g. type "274" with
/// subtype "50" or a value of 50 is a 50 km/h limit, "278" its end, "206" stop, "205" give way, "276"
/// no overtaking, "280" its end, "282" end of all restrictions, "103" curve (subtype "10" left, "20"
/// right), "102" crossing, "101" danger; the UK numbers "670" speed limit, "671" national limit, "601" stop,
/// "602" give way, "632" no overtaking), `value` the signal's value, `unit` its unit ("km/h", "mph", "").
/// `s_m`, `t_m` the signal's position, `orientation` "+" (for traffic towards +s), "-" or "none".
/// nullopt for a signal that is no sign this model knows (traffic lights, unknown numbers).
std::optional<Sign> SignFromOpenDrive(std::string_view type, std::string_view subtype, double value,
                                      std::string_view unit, std::string_view country, double s_m, double t_m,
                                      std::string_view orientation);

/// A sign seen from a position on the road.
struct SignSighting {
  const Sign* sign = nullptr;         ///< The sign (into the list asked); nullptr none.
  double distance_m = 0;              ///< Along-road distance to it, in m: >= 0, ahead for NextSign, behind for LastSign.
};
/// The first sign for `direction` ahead of (at or beyond, in driving direction) `s_m`, within `range_m`.
SignSighting NextSign(const std::vector<Sign>& signs, double s_m, int direction, double range_m = 1e9);
/// The last sign for `direction` passed (strictly behind `s_m` in driving direction), within `range_m`.
SignSighting LastSign(const std::vector<Sign>& signs, double s_m, int direction, double range_m = 1e9);

/// The speed limit in force at `s_m` for traffic in `direction`, in m/s: the last speed-limit sign passed,
/// or `road_limit_mps` (0: none) when none was passed or an end of limit / end of all restrictions came
/// after it. A sign takes effect at its own s (the limit applies from the sign on).
double SpeedLimitAt(const std::vector<Sign>& signs, double s_m, int direction, double road_limit_mps);
/// Whether overtaking is banned at `s_m` for `direction` (a no-overtaking sign passed and not yet ended).
bool NoOvertakingAt(const std::vector<Sign>& signs, double s_m, int direction);

/// Sets what variable sign `id` shows; false when there is no variable sign with that id.
bool SetVariableContent(std::vector<Sign>& signs, uint32_t id, SignType type, double value);
/// What every variable sign of `signs` shows, in list order.
std::vector<world::VariableSignContent> VariableContents(const std::vector<Sign>& signs);
/// Sets each variable sign of `signs` to its entry of `contents` (entries of other ids, or of a type
/// number out of range, are passed over); true when a sign changed.
bool ApplyVariableContents(std::vector<Sign>& signs, const std::vector<world::VariableSignContent>& contents);
/// The same for placed signs (their poses do not change).
bool ApplyVariableContents(std::vector<PlacedSign>& signs, const std::vector<world::VariableSignContent>& contents);
/// A variable sign's content as the live parameter signs.vms_<id> writes it: "<type>" or "<type> <value>"
/// ("speed_limit 80", "blank", "stop").
std::string SignContentText(SignType type, double value);
/// Parses SignContentText's form; nullopt with `error` ("expected \"<type>\" or \"<type> <value>\"...").
std::optional<std::pair<SignType, double>> ParseSignContent(std::string_view text, std::string& error);

/// ROI detail code of a sign: type * 65536 + the value rounded (0..65535). Carried in SurfaceTag::detail.
uint32_t SignDetail(SignType type, double value);
/// Type of a detail code (nullopt for codes of no type).
std::optional<SignType> SignDetailType(uint32_t detail);
/// Value of a detail code.
inline uint32_t SignDetailValue(uint32_t detail) { return detail & 0xFFFFu; }

/// Checks one listed sign; empty when valid, else a message naming the bad field.
std::string ValidateSign(const Sign& s);

}  // namespace platoon::road
