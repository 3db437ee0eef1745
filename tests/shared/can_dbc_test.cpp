// The DBC reader and the signal codec (shared/src/can/dbc.cpp, frame.cpp): the team's fixture
// tests/data/can/vehicle.dbc, bit layouts worked out by hand (Intel, Motorola, across CAN FD's 64 bytes),
// scaling, rounding and clamping, multiplexing, IEEE float signals, and a file:line for every parse error.
#include "platoon/can/dbc.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace can_dbc_test_detail {

using namespace platoon::can;

const std::string kFixture = std::string(PLATOON_SOURCE_DIR) + "/tests/data/can/vehicle.dbc";

Signal MakeSignal(uint32_t start, uint32_t length, ByteOrder order, bool is_signed = false) {
  Signal s;
  s.name = "S";
  s.start_bit = start;
  s.length = length;
  s.byte_order = order;
  s.is_signed = is_signed;
  return s;
}

// The DbcError text of parsing `text`, "" when it parses.
std::string ParseErrorOf(const std::string& text) {
  try {
    ParseDbc(text, "bad.dbc");
  } catch (const DbcError& e) {
    return e.what();
  }
  return "";
}

// A minimal valid head, 3 lines, so that test lines start at line 4.
const std::string kHead = "VERSION \"\"\nBS_:\nBU_: A B\n";

}  // namespace can_dbc_test_detail

using namespace can_dbc_test_detail;

TEST_CASE("can frame: payload lengths of classic CAN and CAN FD") {
  CHECK(ValidLength(false, 0));
  CHECK(ValidLength(false, 8));
  CHECK_FALSE(ValidLength(false, 12));
  CHECK(ValidLength(true, 12));
  CHECK(ValidLength(true, 64));
  CHECK_FALSE(ValidLength(true, 9));
  CHECK_FALSE(ValidLength(true, 65));
  CHECK(FdLengthFor(8) == 8);
  CHECK(FdLengthFor(9) == 12);
  CHECK(FdLengthFor(20) == 20);
  CHECK(FdLengthFor(33) == 48);
  CHECK(FdLengthFor(64) == 64);
  CHECK(FdLengthFor(65) == 0);
}

TEST_CASE("can dbc: the vehicle fixture gives its messages signals and attributes") {
  const Database db = LoadDbc(kFixture);
  CHECK(db.nodes == std::vector<std::string>{"Ecu", "Adas", "Dash", "Seat", "Radar"});
  REQUIRE(db.messages.size() == 7);
  REQUIRE(db.value_tables.count("GearTable") == 1);
  CHECK(db.value_tables.at("GearTable").at(3) == "Drive");

  const Message* speed = db.FindMessage("VehicleSpeed");
  REQUIRE(speed != nullptr);
  CHECK(speed->id == 0x100);
  CHECK_FALSE(speed->extended);
  CHECK_FALSE(speed->fd);
  CHECK(speed->length == 8);
  CHECK(speed->transmitter == "Ecu");
  CHECK(speed->cycle_time_ms == 20);
  CHECK(speed->comment == "Vehicle state, sent by the vehicle model\nevery 20 ms.");
  REQUIRE(speed->signals.size() == 6);
  const Signal* s = speed->FindSignal("Speed");
  REQUIRE(s != nullptr);
  CHECK(s->start_bit == 0);
  CHECK(s->length == 16);
  CHECK(s->byte_order == ByteOrder::kIntel);
  CHECK_FALSE(s->is_signed);
  CHECK(s->factor == doctest::Approx(0.01));
  CHECK(s->maximum == doctest::Approx(655.35));
  CHECK(s->unit == "km/h");
  CHECK(s->receivers == std::vector<std::string>{"Dash", "Seat"});
  CHECK(s->comment == "Speed over ground.");
  const Signal* accel = speed->FindSignal("LongAccel");
  REQUIRE(accel != nullptr);
  CHECK(accel->byte_order == ByteOrder::kMotorola);
  CHECK(accel->is_signed);
  CHECK(accel->minimum == doctest::Approx(-20.48));
  CHECK(speed->FindSignal("Indicator")->value_table.at(3) == "Hazard");

  // Bit 31 of the DBC id marks an extended id; the same 0x400 exists as both formats.
  const Message* steer = db.FindMessage(0x18FF1234, true);
  REQUIRE(steer != nullptr);
  CHECK(steer->name == "SteerCommand");
  CHECK(steer->cycle_time_ms == 10);
  CHECK_FALSE(steer->fd);
  CHECK(steer->FindSignal("SteerAngle")->comment == "Steering wheel angle, positive to the left.");
  CHECK(db.FindMessage(0x18FF1234, false) == nullptr);
  REQUIRE(db.FindMessage(0x400, false) != nullptr);
  REQUIRE(db.FindMessage(0x400, true) != nullptr);
  CHECK(db.FindMessage(0x400, false)->name == "RadarObjects");
  CHECK(db.FindMessage(0x400, true)->name == "BodyExt");

  // CAN FD from the length and from VFrameFormat.
  const Message* radar = db.FindMessage("RadarObjects");
  CHECK(radar->fd);
  CHECK(radar->length == 64);
  const Message* wide = db.FindMessage("WideValues");
  CHECK(wide->fd);
  CHECK(wide->length == 24);

  // Multiplexing roles.
  const Message* wheels = db.FindMessage("WheelInfo");
  CHECK(wheels->FindSignal("Page")->mux == MuxRole::kMultiplexor);
  CHECK(wheels->FindSignal("WheelFL")->mux == MuxRole::kMultiplexed);
  CHECK(wheels->FindSignal("WheelFL")->mux_value == 0);
  CHECK(wheels->FindSignal("TyreTemp")->mux_value == 1);
  CHECK(wheels->FindSignal("Odometer")->mux == MuxRole::kPlain);

  // SIG_VALTYPE_.
  const Message* floats = db.FindMessage("FloatValues");
  CHECK(floats->FindSignal("Ratio")->value_type == ValueType::kFloat32);
  CHECK(speed->FindSignal("Speed")->value_type == ValueType::kInteger);
}

TEST_CASE("can codec: a 12-bit Motorola signal at start bit 7 fills byte 0 and the high nibble of byte 1") {
  const Signal s = MakeSignal(7, 12, ByteOrder::kMotorola);
  uint8_t data[8] = {};
  InsertRaw(s, 0xABC, data, 8);
  // MSB first: bits 11..4 are byte 0, bits 3..0 the high nibble of byte 1.
  const uint8_t expected[8] = {0xAB, 0xC0, 0, 0, 0, 0, 0, 0};
  CHECK(std::memcmp(data, expected, 8) == 0);
  CHECK(ExtractRaw(s, data, 8) == 0xABC);
  const Signal signed_s = MakeSignal(7, 12, ByteOrder::kMotorola, true);
  CHECK(ExtractRaw(signed_s, data, 8) == 0xABC - 4096);
}

TEST_CASE("can codec: a Motorola signal starting mid-byte continues at the next byte's MSB") {
  // Start bit 51 = byte 6 bit 3: 4 bits in byte 6 (bits 3..0), the rest from byte 7's bit 7 down.
  const Signal s = MakeSignal(51, 10, ByteOrder::kMotorola);
  uint8_t data[8] = {};
  const int64_t raw = 0x2A5;  // 10 1010 0101
  InsertRaw(s, raw, data, 8);
  CHECK(data[6] == (raw >> 6));          // the top 4 bits, 1010
  CHECK(data[7] == ((raw & 0x3F) << 2));  // the low 6 bits at byte 7 bits 7..2
  CHECK(ExtractRaw(s, data, 8) == raw);
}

TEST_CASE("can codec: an Intel signal across a byte boundary keeps the other bits") {
  // Start bit 28, 10 bits: the low 4 bits in byte 3 bits 7..4, the high 6 in byte 4 bits 5..0.
  const Signal s = MakeSignal(28, 10, ByteOrder::kIntel);
  uint8_t data[8];
  std::memset(data, 0xFF, 8);
  InsertRaw(s, 0x2A5, data, 8);
  CHECK(data[3] == (0x0F | (0x5 << 4)));
  CHECK(data[4] == (0xC0 | 0x2A));
  CHECK(data[2] == 0xFF);
  CHECK(data[5] == 0xFF);
  CHECK(ExtractRaw(s, data, 8) == 0x2A5);
}

TEST_CASE("can codec: Motorola signals across the 64 bytes of a CAN FD payload") {
  uint8_t data[64] = {};
  // 40 bits from byte 32's MSB: bytes 32..36 in order.
  const Signal mid = MakeSignal(32 * 8 + 7, 40, ByteOrder::kMotorola, true);
  InsertRaw(mid, 0x123456789A, data, 64);
  CHECK(data[32] == 0x12);
  CHECK(data[33] == 0x34);
  CHECK(data[34] == 0x56);
  CHECK(data[35] == 0x78);
  CHECK(data[36] == 0x9A);
  CHECK(ExtractRaw(mid, data, 64) == 0x123456789A);
  // Ending at the last bit of byte 63: 12 bits from byte 62 bit 3.
  const Signal tail = MakeSignal(62 * 8 + 3, 12, ByteOrder::kMotorola);
  InsertRaw(tail, 0xABC, data, 64);
  CHECK(data[62] == 0x0A);
  CHECK(data[63] == 0xBC);
  CHECK(ExtractRaw(tail, data, 64) == 0xABC);
  // 64 bits, both orders, over 8 bytes not aligned to the payload start.
  const Signal moto64 = MakeSignal(40 * 8 + 7, 64, ByteOrder::kMotorola, true);
  InsertRaw(moto64, std::numeric_limits<int64_t>::min(), data, 64);
  CHECK(data[40] == 0x80);
  CHECK(data[47] == 0x00);
  CHECK(ExtractRaw(moto64, data, 64) == std::numeric_limits<int64_t>::min());
  const Signal intel64 = MakeSignal(48 * 8 + 4, 64, ByteOrder::kIntel);
  InsertRaw(intel64, static_cast<int64_t>(0xFEDCBA9876543210ull), data, 64);
  CHECK(data[48] == 0x00);  // low nibble of 0x10 goes to bits 7..4 of byte 48
  CHECK((data[48] >> 4) == 0x0);
  CHECK(data[49] == 0x21);
  CHECK(static_cast<uint64_t>(ExtractRaw(intel64, data, 64)) == 0xFEDCBA9876543210ull);
  // Bits past the payload's length read as zero and are not written.
  uint8_t short_data[2] = {0xFF, 0xFF};
  const Signal over = MakeSignal(8, 16, ByteOrder::kIntel);
  CHECK(ExtractRaw(over, short_data, 2) == 0xFF);
}

TEST_CASE("can codec: physical values round half away from zero and clamp to the range and to the raw bits") {
  Signal s = MakeSignal(0, 8, ByteOrder::kIntel, true);
  CHECK(PhysicalToRaw(s, 2.5) == 3);
  CHECK(PhysicalToRaw(s, -2.5) == -3);
  CHECK(PhysicalToRaw(s, 2.49) == 2);
  CHECK(PhysicalToRaw(s, 1000) == 127);
  CHECK(PhysicalToRaw(s, -1000) == -128);
  CHECK(PhysicalToRaw(s, std::nan("")) == 0);
  s.is_signed = false;
  CHECK(PhysicalToRaw(s, 300) == 255);
  CHECK(PhysicalToRaw(s, -5) == 0);
  // Factor and offset: raw = (phys - offset) / factor; [min|max] limits the physical value first.
  s.factor = 0.5;
  s.offset = -40;
  CHECK(PhysicalToRaw(s, 21.3) == std::lround((21.3 + 40) / 0.5));
  s.minimum = -10;
  s.maximum = 20;
  CHECK(PhysicalToRaw(s, 21.3) == std::lround((20.0 + 40) / 0.5));
  CHECK(PhysicalToRaw(s, -30) == std::lround((-10.0 + 40) / 0.5));
  // 64 bits: the limits themselves.
  const Signal u64 = MakeSignal(0, 64, ByteOrder::kIntel);
  CHECK(static_cast<uint64_t>(PhysicalToRaw(u64, 1e30)) == std::numeric_limits<uint64_t>::max());
  const Signal i64 = MakeSignal(0, 64, ByteOrder::kIntel, true);
  CHECK(PhysicalToRaw(i64, -1e30) == std::numeric_limits<int64_t>::min());
  CHECK(PhysicalToRaw(i64, 1e30) == std::numeric_limits<int64_t>::max());
}

TEST_CASE("can codec: the fixture's signals decode what they encode within half their factor") {
  const Database db = LoadDbc(kFixture);
  for (const Message& m : db.messages) {
    // A value in each signal's range: a third of the way from min to max, or of the raw range.
    std::map<std::string, double> values;
    for (const Signal& s : m.signals) {
      if (s.mux == MuxRole::kMultiplexed && s.mux_value != 1) continue;
      double v = 0;
      if (s.mux == MuxRole::kMultiplexor) v = 1;
      else if (s.minimum != s.maximum) v = s.minimum + (s.maximum - s.minimum) / 3.0;
      else if (s.value_type != ValueType::kInteger) v = -1234.5;
      else v = (s.is_signed ? -1.0 : 1.0) * std::ldexp(1.0, static_cast<int>(std::min<uint32_t>(s.length, 52)) - 2) * s.factor / 3.0 + s.offset;
      values[s.name] = v;
    }
    const Frame f = EncodeMessage(m, values);
    CHECK(f.id == m.id);
    CHECK(f.extended == m.extended);
    CHECK(f.fd == m.fd);
    CHECK(f.len == m.length);
    const auto decoded = DecodeMessage(m, f);
    CHECK(decoded.size() == values.size());
    for (const auto& entry : values) {
      const std::string& name = entry.first;
      const double v = entry.second;
      INFO(m.name << "." << name);
      REQUIRE(decoded.count(name) == 1);
      const Signal* s = m.FindSignal(name);
      const double tolerance = s->value_type == ValueType::kInteger ? std::abs(s->factor) / 2 : std::abs(v) * 1e-6;
      CHECK(std::abs(decoded.at(name) - v) <= tolerance);
    }
  }
}

TEST_CASE("can codec: signed scaled values decode from the bytes laid out by hand") {
  const Database db = LoadDbc(kFixture);
  const Message& m = *db.FindMessage("VehicleSpeed");
  Frame f;
  f.len = 8;
  // Speed raw 12345 (Intel, bytes 0..1), YawRate raw -1234 (Intel signed), LongAccel raw -321 (Motorola signed,
  // 12 bits from byte 4's MSB), Gear 3 (byte 6 low nibble), Indicator 2, OutsideTemp raw -3 (6 bits at bit 58).
  f.data[0] = 12345 & 0xFF;
  f.data[1] = 12345 >> 8;
  const uint16_t yaw = static_cast<uint16_t>(-1234);
  f.data[2] = yaw & 0xFF;
  f.data[3] = yaw >> 8;
  const uint16_t accel = static_cast<uint16_t>(-321) & 0xFFF;
  f.data[4] = static_cast<uint8_t>(accel >> 4);
  f.data[5] = static_cast<uint8_t>((accel & 0xF) << 4);
  f.data[6] = 3;
  f.data[7] = static_cast<uint8_t>(2 | ((static_cast<uint8_t>(-3) & 0x3F) << 2));
  const auto v = DecodeMessage(m, f);
  CHECK(v.at("Speed") == doctest::Approx(123.45));
  CHECK(v.at("YawRate") == doctest::Approx(-12.34));
  CHECK(v.at("LongAccel") == doctest::Approx(-3.21));
  CHECK(v.at("Gear") == 3);
  CHECK(v.at("Indicator") == 2);
  CHECK(v.at("OutsideTemp") == doctest::Approx(-3 * 0.5 + 10));
  // And the encoder writes the same bytes.
  const Frame g = EncodeMessage(m, v);
  CHECK(g.data == f.data);
}

TEST_CASE("can codec: multiplexed signals are present only under their multiplexor value") {
  const Database db = LoadDbc(kFixture);
  const Message& m = *db.FindMessage("WheelInfo");
  // Page 1 selects the tyre signals; a wheel speed given alongside is left out.
  const Frame f = EncodeMessage(m, {{"Page", 1}, {"TyreTemp", 25.3}, {"TyrePressure", 230.5}, {"WheelFL", 50}, {"Odometer", 4321}});
  CHECK(f.data[0] == 1);
  const auto v = DecodeMessage(m, f);
  CHECK(v.size() == 4);
  CHECK(v.count("WheelFL") == 0);
  CHECK(v.at("TyreTemp") == doctest::Approx(25.3).epsilon(1e-9));
  CHECK(v.at("TyrePressure") == doctest::Approx(230.5));
  CHECK(v.at("Odometer") == 4321);
  CHECK_FALSE(SignalPresent(m, *m.FindSignal("WheelFR"), f));
  CHECK(SignalPresent(m, *m.FindSignal("TyreTemp"), f));
  const Frame g = EncodeMessage(m, {{"Page", 0}, {"WheelFL", 12.34}, {"WheelFR", 56.78}});
  const auto w = DecodeMessage(m, g);
  CHECK(w.count("TyreTemp") == 0);
  CHECK(w.at("WheelFL") == doctest::Approx(12.34));
  CHECK(w.at("WheelFR") == doctest::Approx(56.78));
  // A frame too short for a signal does not carry it.
  Frame shorter = g;
  shorter.len = 3;
  const auto x = DecodeMessage(m, shorter);
  CHECK(x.count("WheelFL") == 1);
  CHECK(x.count("WheelFR") == 0);
  CHECK(x.count("Odometer") == 0);
}

TEST_CASE("can codec: IEEE float signals hold their bits in either byte order") {
  const Database db = LoadDbc(kFixture);
  const Message& m = *db.FindMessage("FloatValues");
  const Frame f = EncodeMessage(m, {{"Ratio", 1.5}, {"Gain", 3.0}});
  // Ratio: float 1.5 = 0x3FC00000, Intel (little endian) in bytes 0..3.
  const uint32_t ratio = std::bit_cast<uint32_t>(1.5f);
  CHECK(f.data[0] == (ratio & 0xFF));
  CHECK(f.data[3] == (ratio >> 24));
  // Gain: (3 - 1) / 0.5 = 4.0f = 0x40800000, Motorola (big endian) in bytes 4..7.
  const uint32_t gain = std::bit_cast<uint32_t>(4.0f);
  CHECK(f.data[4] == (gain >> 24));
  CHECK(f.data[5] == ((gain >> 16) & 0xFF));
  CHECK(f.data[7] == (gain & 0xFF));
  const auto v = DecodeMessage(m, f);
  CHECK(v.at("Ratio") == 1.5);
  CHECK(v.at("Gain") == 3.0);
}

TEST_CASE("can codec: encoding an unknown signal name throws naming it") {
  const Database db = LoadDbc(kFixture);
  const Message& m = *db.FindMessage("VehicleSpeed");
  try {
    EncodeMessage(m, {{"Sped", 1.0}});
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("Sped") != std::string::npos);
  }
}

TEST_CASE("can dbc: comments with escaped quotes and independent signals") {
  const std::string text = kHead +
                           "BO_ 1 M: 2 A\n SG_ X : 0|8@1+ (1,0) [0|0] \"\" B\n"
                           "BO_ 3221225472 VECTOR__INDEPENDENT_SIG_MSG: 0 Vector__XXX\n SG_ Lost : 0|8@1+ (1,0) [0|0] \"\" B\n"
                           "CM_ SG_ 1 X \"say \\\"hi\\\"\nthen \\\\ go\";\nCM_ SG_ 3221225472 Lost \"dropped\";\n"
                           "BA_DEF_ SG_ \"Init\" INT 0 10;\nBA_ \"Init\" SG_ 1 X 3;\nEV_ Env: 0 [0|1] \"\" 0 1 DUMMY_NODE_VECTOR0 Vector__XXX;\n";
  const Database db = ParseDbc(text, "c.dbc");
  REQUIRE(db.messages.size() == 1);
  CHECK(db.messages[0].signals[0].comment == "say \"hi\"\nthen \\ go");
}

TEST_CASE("can dbc: every error names the file and line of what it cannot read") {
  struct Case {
    std::string body;       // after kHead (lines 1..3)
    size_t line;            // expected line
    std::string contains;   // part of the message
  };
  const std::string bo = "BO_ 100 M: 8 A\n";
  const std::vector<Case> cases = {
      {"BO_ x M: 8 A\n", 4, "message id"},
      {"BO_ 100 M 8 A\n", 4, "':'"},
      {"BO_ 100 M: 65 A\n", 4, "0..64"},
      {"BO_ 2684354560 M: 8 A\n", 4, "29-bit"},
      {bo + "BO_ 100 N: 8 A\n", 5, "not defined before"},
      {"\n SG_ X : 0|8@1+ (1,0) [0|0] \"\" B\n", 5, "BO_"},
      {bo + " SG_ X : 0|0@1+ (1,0) [0|0] \"\" B\n", 5, "1..64"},
      {bo + " SG_ X : 0|8@2+ (1,0) [0|0] \"\" B\n", 5, "byte order"},
      {bo + " SG_ X : 0|8@1* (1,0) [0|0] \"\" B\n", 5, "DBC token"},
      {bo + " SG_ X : 0|8@1+ (0,0) [0|0] \"\" B\n", 5, "non-zero factor"},
      {bo + " SG_ X : 0|8@1+ (1,0) [0 0] \"\" B\n", 5, "'|'"},
      {bo + " SG_ X : 60|8@1+ (1,0) [0|0] \"\" B\n", 5, "within the 8 bytes"},
      {bo + " SG_ X : 3|8@0+ (1,0) [0|0] \"\" B\n SG_ Y : 56|8@0+ (1,0) [0|0] \"\" B\n", 6, "within the 8 bytes"},
      {bo + " SG_ X : 0|8@1+ (1,0) [0|0] km B\n", 5, "unit string"},
      {bo + " SG_ X : 0|8@1+ (1,0) [0|0] \"\" B\n SG_ X : 8|8@1+ (1,0) [0|0] \"\" B\n", 6, "not used before"},
      {bo + " SG_ X m1M : 0|8@1+ (1,0) [0|0] \"\" B\n", 5, "extended multiplexing"},
      {bo + " SG_ X Q : 0|8@1+ (1,0) [0|0] \"\" B\n", 5, "multiplexer indicator"},
      {bo + " SG_ X M : 0|8@1+ (1,0) [0|0] \"\" B\n SG_ Y M : 8|8@1+ (1,0) [0|0] \"\" B\n", 6, "one multiplexor"},
      {bo + " SG_ X : 0|8@1+ (1,0) [0|0] \"\" B\n SG_ Y m2 : 8|8@1+ (1,0) [0|0] \"\" B\n", 6, "multiplexor ('M')"},
      {bo + "SG_MUL_VAL_ 100 Y X 1-1;\n", 5, "SG_MUL_VAL_"},
      {bo + "\nCM_ BO_ 101 \"x\";\n", 6, "defined by a BO_"},
      {bo + " SG_ X : 0|8@1+ (1,0) [0|0] \"\" B\nCM_ SG_ 100 Z \"x\";\n", 6, "a signal of message M"},
      {bo + "CM_ BO_ 100 \"never closed;\n\n", 5, "closing the string"},
      {bo + "CM_ BO_ 100 \"x\"\nBA_ \"y\" 1;\n", 6, "';' ending the CM_"},
      {bo + " SG_ X : 0|8@1+ (1,0) [0|0] \"\" B\nVAL_ 100 X 0 \"a\" one \"b\";\n", 6, "raw value"},
      {bo + " SG_ X : 0|16@1+ (1,0) [0|0] \"\" B\nSIG_VALTYPE_ 100 X : 1;\n", 6, "32-bit signal"},
      {bo + " SG_ X : 0|32@1+ (1,0) [0|0] \"\" B\nSIG_VALTYPE_ 100 X : 7;\n", 6, "value type"},
      {bo + "BA_DEF_ BO_ \"A\" DATE;\n", 5, "attribute type"},
      {bo + "\nEV_ Env: 0 [0|1] \"\" 0 1 DUMMY_NODE_VECTOR0 Vector__XXX\n", 6, "';' ending the EV_ statement of line 6"},
      {bo + "FOO_ 1;\n", 5, "DBC keyword"},
      {bo + "BA_ \"x\" BO_ 100 ;\n", 5, "attribute value"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    const std::string error = ParseErrorOf(kHead + c.body);
    const std::string prefix = "bad.dbc:" + std::to_string(c.line) + ": expected ";
    CHECK(error.substr(0, prefix.size()) == prefix);
    CHECK(error.find(c.contains) != std::string::npos);
    CHECK(error.find(", got ") != std::string::npos);
  }
}

TEST_CASE("can dbc: a missing file is a DbcError naming the path") {
  const std::string path = std::string(PLATOON_SOURCE_DIR) + "/tests/data/can/no_such.dbc";
  try {
    LoadDbc(path);
    FAIL("no exception");
  } catch (const DbcError& e) {
    CHECK(std::string(e.what()).find(path) == 0);
  }
}
