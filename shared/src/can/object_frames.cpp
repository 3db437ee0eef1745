#include "platoon/can/object_frames.hpp"

#include "platoon/config/table.hpp"

#include <array>
#include <cmath>
#include <cstdlib>

namespace platoon::can {
namespace object_frames_detail {

constexpr std::array<std::string_view, kObjectFieldCount> kFieldNames = {
    "id", "class", "x_m", "y_m", "z_m", "vx_mps", "vy_mps", "length_m", "width_m", "height_m"};

std::string KnownFields() {
  std::string out;
  for (const auto& n : kFieldNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// The largest raw value an integer signal holds.
uint64_t MaxRaw(const Signal& s) {
  const uint32_t bits = s.is_signed ? s.length - 1 : s.length;
  return bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
}

// The message named by `key`, with the DBC's names listed when it is not there.
const Message* RequireMessage(const config::Table& t, const std::string& key, const ObjectMappingDef& d) {
  const std::string name = t.RequireString(key);
  if (const Message* m = d.dbc.FindMessage(name)) return m;
  std::string names;
  for (const auto& msg : d.dbc.messages) names += (names.empty() ? "" : ", ") + msg.name;
  t.Fail(key, "expected a message of " + d.dbc_path + " (" + (names.empty() ? "none" : names) + "), got \"" + name + "\"");
}

// The signal of `m` named by `key` ("" when absent and not required); counters and indices are integers.
const Signal* FindSignalAt(const config::Table& t, const std::string& key, const Message& m, bool required, bool integer) {
  const std::string name = required ? t.RequireString(key) : t.GetString(key, "");
  if (name.empty()) return nullptr;
  const Signal* s = m.FindSignal(name);
  if (!s) t.Fail(key, "expected a signal of message " + m.name + " (" + m.SignalNames() + "), got \"" + name + "\"");
  if (integer && s->value_type != ValueType::kInteger)
    t.Fail(key, "expected an integer signal (a count, counter or index), got the float signal \"" + name + "\"");
  return s;
}

ObjectMappingDef FromTable(const config::Table& t, const std::string& source) {
  ObjectMappingDef d;
  d.source = source;
  // The DBC, next to the mapping file when relative.
  if (!t.Has("dbc")) t.Fail("dbc", "expected dbc = \"<file>.dbc\", the bus definition the mapping refers to");
  d.dbc_path = t.GetString("dbc", "");
  if (d.dbc_path.empty()) t.Fail("dbc", "expected a DBC file path, got \"\"");
  const auto slash = source.rfind('/');
  if (d.dbc_path.front() != '/' && slash != std::string::npos) d.dbc_path = source.substr(0, slash + 1) + d.dbc_path;
  try {
    d.dbc = LoadDbc(d.dbc_path);
  } catch (const DbcError& e) {
    throw config::ConfigError(t.Where("dbc") + ": dbc: " + e.what());
  }
  const auto o = t.Sub("objects");
  if (!o) t.Fail("objects", "expected an [objects] table (header, count_signal, object, index_signal, [[objects.field]])");
  // The header: the count of objects that follow and an optional cycle counter.
  d.header = RequireMessage(*o, "header", d);
  d.count_signal = FindSignalAt(*o, "count_signal", *d.header, true, true);
  d.cycle_signal = FindSignalAt(*o, "cycle_signal", *d.header, false, true);
  // The object message: told apart by an index signal and/or consecutive identifiers.
  d.object = RequireMessage(*o, "object", d);
  if (d.object == d.header) o->Fail("object", "the object message must differ from the header, both are \"" + d.header->name + "\"");
  d.index_signal = FindSignalAt(*o, "index_signal", *d.object, false, true);
  d.id_step = static_cast<uint32_t>(o->GetInt("id_step", 0, 0, 0x100));
  if (!d.index_signal && d.id_step == 0)
    o->Fail("object", "objects need index_signal = \"<signal>\" (the multiplexor or a plain signal) or id_step = 1 "
                      "(object i on the object message's id + i)");
  d.max_objects = static_cast<uint32_t>(o->GetInt("max_objects", 32, 1, 4096));
  // Every object's frame must be sayable: its index, its identifier, and the count in the header.
  if (d.index_signal && MaxRaw(*d.index_signal) < d.max_objects - 1)
    o->Fail("max_objects", "index_signal \"" + d.index_signal->name + "\" holds indices up to " +
                               std::to_string(MaxRaw(*d.index_signal)) + ", max_objects " + std::to_string(d.max_objects) +
                               " needs " + std::to_string(d.max_objects - 1));
  if (MaxRaw(*d.count_signal) < d.max_objects)
    o->Fail("max_objects", "count_signal \"" + d.count_signal->name + "\" holds counts up to " +
                               std::to_string(MaxRaw(*d.count_signal)) + ", max_objects is " + std::to_string(d.max_objects));
  const uint64_t last_id = d.object->id + static_cast<uint64_t>(d.id_step) * (d.max_objects - 1);
  if (last_id > (d.object->extended ? kMaxExtendedId : kMaxStandardId))
    o->Fail("id_step", "object " + std::to_string(d.max_objects - 1) + " would go on identifier " + std::to_string(last_id) +
                           ", over the " + (d.object->extended ? "29" : "11") + "-bit range");
  // The fields: plain signals of the object message (a multiplexed one is there for one index only).
  const auto fields = o->TableArray("field");
  if (fields.empty()) o->Fail("field", "expected at least one [[objects.field]] table (name, variable, factor, offset)");
  for (const auto& f : fields) {
    ObjectFieldMapDef fd;
    fd.signal = FindSignalAt(f, "name", *d.object, true, false);
    if (fd.signal->mux != MuxRole::kPlain)
      f.Fail("name", "expected a plain signal of message " + d.object->name + ": \"" + fd.signal->name +
                         "\" is the multiplexor or present for one multiplexor value only");
    if (fd.signal == d.index_signal) f.Fail("name", "\"" + fd.signal->name + "\" is the index_signal");
    const std::string vname = f.RequireString("variable");
    const auto v = ObjectFieldByName(vname);
    if (!v) f.Fail("variable", "expected an object field (" + KnownFields() + "), got \"" + vname + "\"");
    fd.field = *v;
    for (const auto& other : d.fields)
      if (other.signal == fd.signal) f.Fail("name", "signal \"" + fd.signal->name + "\" is mapped twice");
    fd.factor = f.GetDouble("factor", 1.0, -1e12, 1e12);
    if (fd.factor == 0) f.Fail("factor", "expected a non-zero factor, got 0");
    fd.offset = f.GetDouble("offset", 0.0, -1e12, 1e12);
    f.RejectUnknownKeys();
    d.fields.push_back(fd);
  }
  o->RejectUnknownKeys();
  t.RejectUnknownKeys();
  return d;
}

// An empty frame of `m`: its identifier, format and length, every bit zero.
Frame EmptyFrame(const Message& m) { return EncodeMessage(m, {}); }

}  // namespace object_frames_detail

std::string_view ObjectFieldName(ObjectField f) { return object_frames_detail::kFieldNames[static_cast<size_t>(f)]; }

std::optional<ObjectField> ObjectFieldByName(std::string_view name) {
  for (size_t i = 0; i < kObjectFieldCount; ++i)
    if (object_frames_detail::kFieldNames[i] == name) return static_cast<ObjectField>(i);
  return std::nullopt;
}

double ObjectFieldValue(const ObjectFrameInput& o, ObjectField f) {
  switch (f) {
    case ObjectField::kId: return static_cast<double>(o.id);
    case ObjectField::kClass: return static_cast<double>(o.object_class);
    case ObjectField::kXM: return o.x_m;
    case ObjectField::kYM: return o.y_m;
    case ObjectField::kZM: return o.z_m;
    case ObjectField::kVxMps: return o.vx_mps;
    case ObjectField::kVyMps: return o.vy_mps;
    case ObjectField::kLengthM: return o.length_m;
    case ObjectField::kWidthM: return o.width_m;
    case ObjectField::kHeightM: return o.height_m;
  }
  return 0;
}

ObjectMappingDef ParseObjectMapping(const std::string& text, const std::string& source) {
  return object_frames_detail::FromTable(config::Table::ParseText(text, source), source);
}

ObjectMappingDef LoadObjectMapping(const std::string& path) {
  return object_frames_detail::FromTable(config::Table::ParseFile(path), path);
}

ObjectListEncoder::ObjectListEncoder(ObjectMappingDef def) : def_(std::move(def)) {}

std::vector<StampedFrame> ObjectListEncoder::Encode(int64_t sim_ns, const std::vector<ObjectFrameInput>& objects) {
  using object_frames_detail::EmptyFrame;
  const size_t n = std::min<size_t>(objects.size(), def_.max_objects);
  std::vector<StampedFrame> out;
  out.reserve(n + 1);
  // The header: how many object frames follow, and the cycle counter (wrapping at its bit length).
  Frame header = EmptyFrame(*def_.header);
  InsertRaw(*def_.count_signal, static_cast<int64_t>(n), header.data.data(), header.len);
  if (def_.cycle_signal) InsertRaw(*def_.cycle_signal, static_cast<int64_t>(cycle_), header.data.data(), header.len);
  out.push_back(StampedFrame{sim_ns, header});
  // One frame per object: its index (and/or identifier), then each mapped field as a DBC physical value.
  for (size_t i = 0; i < n; ++i) {
    Frame f = EmptyFrame(*def_.object);
    f.id = def_.object->id + static_cast<uint32_t>(i) * def_.id_step;
    if (def_.index_signal) InsertRaw(*def_.index_signal, static_cast<int64_t>(i), f.data.data(), f.len);
    for (const ObjectFieldMapDef& m : def_.fields) {
      const Signal& s = *m.signal;
      const double physical = (ObjectFieldValue(objects[i], m.field) - m.offset) / m.factor;
      // A track id wraps at the signal's bit length, as ECUs with short id fields do.
      if (m.field == ObjectField::kId && s.value_type == ValueType::kInteger && std::isfinite(physical)) {
        InsertRaw(s, static_cast<int64_t>(std::llround((physical - s.offset) / s.factor)), f.data.data(), f.len);
        continue;
      }
      const int64_t raw = PhysicalToRaw(s, physical);
      // Out of the signal's range (or not a number): sent clamped, and counted.
      if (s.value_type == ValueType::kInteger &&
          (!std::isfinite(physical) ||
           std::abs(static_cast<double>(raw) * s.factor + s.offset - physical) > 0.5 * std::abs(s.factor) * (1 + 1e-9)))
        ++counters_.clamped;
      InsertRaw(s, raw, f.data.data(), f.len);
    }
    out.push_back(StampedFrame{sim_ns, f});
  }
  ++cycle_;
  ++counters_.lists;
  counters_.frames += out.size();
  counters_.objects += n;
  counters_.truncated += objects.size() - n;
  return out;
}

}  // namespace platoon::can
