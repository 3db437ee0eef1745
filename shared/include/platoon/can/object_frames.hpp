#pragma once
/// Object lists on CAN (docs/CAN.md, "Object lists"): a sensor's object list sent the way radar and camera
/// ECUs send theirs, as one header message (object count, cycle counter) followed by one object message per
/// object, told apart by an index signal (the message's multiplexor or a plain signal) and/or by consecutive
/// identifiers. The object mapping file names the DBC messages and which signal carries which object field,
/// each with a factor and offset (simulator value = DBC physical value * factor + offset).
///
/// Pure: the encoder takes the sim time and plain objects and returns stamped frames. It knows nothing of
/// the sensors library; the sensor host converts its object lists to ObjectFrameInput.

#include "platoon/can/dbc.hpp"
#include "platoon/can/frame.hpp"
#include "platoon/can/mapping.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::can {

/// One object of a list, in the sensor frame (x forward, y left, z up).
struct ObjectFrameInput {
  uint32_t id = 0;            ///< Track id; sent modulo the id signal's raw range (2^length).
  uint8_t object_class = 0;   ///< Class code: 0 unclassified, 1 car, 2 truck, 3 motorbike, 4 bicycle, 5 pedestrian.
  double x_m = 0;             ///< Position x (forward), in m. Typical 0..200.
  double y_m = 0;             ///< Position y (left), in m.
  double z_m = 0;             ///< Position z (up), in m.
  double vx_mps = 0;          ///< Velocity x, in m/s.
  double vy_mps = 0;          ///< Velocity y, in m/s.
  double length_m = 0;        ///< Box length, in m. Typical 4.6 for a car.
  double width_m = 0;         ///< Box width, in m. Typical 1.8.
  double height_m = 0;        ///< Box height, in m. Typical 1.5.
};

/// An object field a signal can carry.
enum class ObjectField { kId, kClass, kXM, kYM, kZM, kVxMps, kVyMps, kLengthM, kWidthM, kHeightM };
/// Number of ObjectField values.
inline constexpr size_t kObjectFieldCount = 10;
/// The field's name in mapping files ("id", "class", "x_m", "y_m", "z_m", "vx_mps", "vy_mps", "length_m",
/// "width_m", "height_m").
std::string_view ObjectFieldName(ObjectField f);
/// The field named `name`, or nullopt.
std::optional<ObjectField> ObjectFieldByName(std::string_view name);
/// The field's value of an object.
double ObjectFieldValue(const ObjectFrameInput& object, ObjectField f);

/// One mapped signal of the object message.
struct ObjectFieldMapDef {
  const Signal* signal = nullptr;  ///< The DBC signal (points into ObjectMappingDef::dbc).
  ObjectField field = ObjectField::kXM;  ///< The object field it carries.
  double factor = 1.0;             ///< simulator = physical * factor + offset. Non-zero.
  double offset = 0.0;             ///< simulator = physical * factor + offset.
};

/// An object mapping file read. Signals point into `dbc`: moved, never copied.
struct ObjectMappingDef {
  std::string source;                     ///< The mapping file's path.
  std::string dbc_path;                   ///< The DBC's path (relative ones are taken next to the mapping file).
  Database dbc;                           ///< The DBC.
  const Message* header = nullptr;        ///< The header message, sent first in each cycle.
  const Signal* count_signal = nullptr;   ///< Header: number of objects that follow (raw value).
  const Signal* cycle_signal = nullptr;   ///< Header: cycle counter, +1 per list, modulo 2^length (raw); null when none.
  const Message* object = nullptr;        ///< The object message, one per object.
  const Signal* index_signal = nullptr;   ///< Object: the object's index 0..n-1 (raw); null when id_step tells them apart.
  uint32_t id_step = 0;                   ///< Object i goes on identifier object->id + i * id_step; 0: all on one id.
  uint32_t max_objects = 0;               ///< Most objects per cycle; the rest are left out and counted. Typical 32..64.
  std::vector<ObjectFieldMapDef> fields;  ///< The mapped fields; the message's other signals go as raw 0.
  ObjectMappingDef() = default;
  ObjectMappingDef(const ObjectMappingDef&) = delete;
  ObjectMappingDef& operator=(const ObjectMappingDef&) = delete;
  ObjectMappingDef(ObjectMappingDef&&) = default;
  ObjectMappingDef& operator=(ObjectMappingDef&&) = default;
};

/// Reads an object mapping file (TOML: dbc = "...", an [objects] table with [[objects.field]]; docs/CAN.md)
/// and its DBC. Throws config::ConfigError "FILE:LINE: ..." for a missing file, an unknown message, signal
/// or field, an index signal too short for max_objects, a multiplexed field signal, a zero factor.
ObjectMappingDef LoadObjectMapping(const std::string& path);
/// The same from text; `source` names it and a relative DBC path is taken next to it.
ObjectMappingDef ParseObjectMapping(const std::string& text, const std::string& source);

/// What the encoder has done.
struct ObjectEncoderCounters {
  uint64_t lists = 0;      ///< Object lists encoded.
  uint64_t frames = 0;     ///< Frames made (headers and objects).
  uint64_t objects = 0;    ///< Objects sent.
  uint64_t truncated = 0;  ///< Objects left out because a list held more than max_objects.
  uint64_t clamped = 0;    ///< Field values outside their signal's range, sent clamped.
};

/// The pure object-list encoder.
class ObjectListEncoder {
 public:
  explicit ObjectListEncoder(ObjectMappingDef def);
  /// The frames of one object list at `sim_ns` (each stamped with it): the header, then the first
  /// max_objects objects in list order. The header's count is the number of object frames that follow.
  std::vector<StampedFrame> Encode(int64_t sim_ns, const std::vector<ObjectFrameInput>& objects);
  /// What it has done.
  const ObjectEncoderCounters& Counters() const { return counters_; }
  /// The mapping.
  const ObjectMappingDef& Def() const { return def_; }

 private:
  ObjectMappingDef def_;
  uint64_t cycle_ = 0;
  ObjectEncoderCounters counters_;
};

}  // namespace platoon::can
