#pragma once
/// Parameters by path (seed 004 §3.4): a typed, validated registry. Every process (server, node) keeps one;
/// an entry has a path, a type, a unit, an inclusive range, whether it can be set live and a one-line
/// description, plus a getter (the value as TOML literal text) and a setter. Values given as text (ctl,
/// viewer, scenario actions) are checked exactly like the config loader checks the same key: the bounds
/// below are the one definition both use.

#include "platoon/protocol/messages.hpp"
#include "platoon/transport/fault_injector.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace platoon::config {

/// An inclusive numeric range.
struct Range {
  double min;
  double max;
};

/// Bounds shared by the config loader (shared/src/config/session.cpp) and the live parameters.
namespace bounds {
inline constexpr Range kBroadcastHz{1, 1000};        ///< [server] broadcast_hz, in Hz.
inline constexpr Range kLostTimeoutS{0.05, 3600};    ///< [server] lost_timeout_s, in s.
inline constexpr Range kStatusIntervalS{0, 3600};    ///< status_interval_s ([server], [[node]]), in s.
inline constexpr Range kStaleGraceS{0, 3600};        ///< [server] stale_grace_s, in s.
inline constexpr Range kTrafficSpeedMps{0, 100};     ///< [[node]] speed_mps (traffic cruising speed), in m/s.
inline constexpr Range kVehicles{0, 65535};          ///< [[node]] vehicles.
inline constexpr Range kSpeedLimitKmh{0, 400};       ///< Road speed limit, in km/h (0: none).
inline constexpr Range kTimeHeadwayS{0.1, 10};       ///< IDM time headway T, in s.
inline constexpr Range kVehicleMassKg{100, 50000};   ///< Vehicle mass, in kg.
inline constexpr Range kTyreFriction{0.05, 2.0};     ///< Tyre-road friction coefficient mu.
inline constexpr Range kSensorRateHz{0.1, 1000};     ///< Sensor output rate, in Hz.
inline constexpr Range kNoiseSigma{0, 100};          ///< A noise standard deviation (m, m/s^2, rad/s, ...).
inline constexpr Range kProbability{0, 1};           ///< A probability or fraction.
inline constexpr Range kReorderFraction{0, 0.5};     ///< [faults] reorder, a fraction of messages.
inline constexpr Range kFaultDelayMs{0, 60000};      ///< [faults] delay_ms and jitter_ms, in ms.
inline constexpr Range kBurstEveryS{0, 1e6};         ///< [faults] burst_every_s, in s.
inline constexpr Range kBurstLengthMs{0, 1e7};       ///< [faults] burst_length_ms, in ms.
}  // namespace bounds

/// A parsed parameter value.
using ParamValue = std::variant<bool, int64_t, double, std::string>;

/// Shortest text that reads back as `v` ("15", "0.25", "1e-06").
std::string FormatNumber(double v);
/// A value as TOML literal text: true, 42, 0.5, "text" (quoted and escaped).
std::string FormatValue(const ParamValue& value);

/// One parameter: its description (Parameter without value) and how to read and write it.
struct ParamEntry {
  protocol::Parameter def;                         ///< path, type, unit, min, max, writable, description.
  std::function<std::string()> get;                ///< The current value as TOML literal text.
  std::function<void(const ParamValue&)> set;      ///< Applies a checked value; empty: read-only.
  std::vector<std::string> choices;                ///< Strings: the accepted values (empty: any).
  /// Further check after type and range (a value that depends on another): "" accepts, else why not.
  std::function<std::string(const ParamValue&)> check;
};

/// Parameters of one process by path. Not thread-safe: the owner serialises calls.
class ParamRegistry {
 public:
  /// Most entries one registry holds; Add* beyond it throws std::length_error.
  static constexpr size_t kMaxEntries = 4096;

  /// A float in `range` (inclusive, finite), in `unit`; read-only when `set` is empty.
  void AddFloat(const std::string& path, const std::string& unit, Range range, const std::string& description,
                std::function<double()> get, std::function<void(double)> set = {});
  /// An integer in `range` (inclusive).
  void AddInt(const std::string& path, const std::string& unit, Range range, const std::string& description,
              std::function<int64_t()> get, std::function<void(int64_t)> set = {});
  /// A boolean.
  void AddBool(const std::string& path, const std::string& description, std::function<bool()> get,
               std::function<void(bool)> set = {});
  /// A string, one of `choices` when that is not empty.
  void AddString(const std::string& path, const std::string& description, std::function<std::string()> get,
                 std::function<void(const std::string&)> set = {}, std::vector<std::string> choices = {});
  /// Adds a further check to an entry already added (see ParamEntry::check).
  void AddCheck(const std::string& path, std::function<std::string(const ParamValue&)> check);
  /// Adds every entry of `other` (paths must be new).
  void Merge(const ParamRegistry& other);

  /// Entries whose path starts with `prefix` ("" or "node.": all), sorted by path, values filled in.
  std::vector<protocol::Parameter> List(const std::string& prefix) const;
  /// One parameter with its value, or an error naming the path.
  protocol::ParamReply Get(const std::string& path) const;
  /// Checks `text` for `path` (known, writable, type, finite, range, choices, ParamEntry::check) without
  /// changing anything: the parsed value, or nullopt and `error` ("path: expected a number in [1, 70] m/s,
  /// got nan").
  std::optional<ParamValue> Check(const std::string& path, const std::string& text, std::string& error) const;
  /// Applies a value Check() accepted.
  void Apply(const std::string& path, const ParamValue& value);
  /// Check() then Apply(): the reply carries the new value, or the error (and then nothing changed).
  protocol::ParamReply Set(const std::string& path, const std::string& text);

  /// Whether `path` is a parameter here.
  bool Has(const std::string& path) const { return entries_.count(path) > 0; }
  /// Number of entries.
  size_t Size() const { return entries_.size(); }

 private:
  void Add(ParamEntry entry);
  std::map<std::string, ParamEntry> entries_;
};

/// Registers the fault injector's settings under `prefix` ("node.<name>.faults.", "server.faults."): drop,
/// duplicate, reorder, delay_ms, jitter_ms, burst_every_s, burst_length_ms, with the [faults] bounds and
/// transport::ValidateFaultDef on the result. A set changes `faults` and then calls `changed` (which hands
/// the new settings to the channels on the thread that owns them).
void AddFaultParams(ParamRegistry& registry, const std::string& prefix, transport::FaultDef& faults,
                    std::function<void()> changed);

/// What the value of a parameter of this type looks like, with its range and unit, for messages:
/// "a number in [1, 70] m/s", "an integer in [0, 65535]", "true or false", "one of \"freeze\", \"remove\"".
std::string ExpectedText(const ParamEntry& entry);

}  // namespace platoon::config
