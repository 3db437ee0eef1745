#pragma once
/// DBC bus definitions (the de-facto text format of CAN databases) and the signal codec: a parsed
/// database, and the encode and decode of physical signal values to and from frame payloads.
/// Pure: parsing takes text and a name for errors; the codec takes and returns plain values.

#include "platoon/can/frame.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::can {

/// A DBC file that cannot be read; what() is "FILE:LINE: what was expected, what was found".
class DbcError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Byte order of a signal: Intel (little endian, DBC "@1") or Motorola (big endian, DBC "@0").
enum class ByteOrder { kIntel, kMotorola };

/// How a signal takes part in multiplexing.
enum class MuxRole {
  kPlain,        ///< Always present.
  kMultiplexor,  ///< The switch ("M"): its raw value selects which multiplexed signals are present.
  kMultiplexed,  ///< Present only when the multiplexor's raw value equals mux_value ("m<N>").
};

/// How a signal's raw bits are read: an integer (the DBC default) or an IEEE 754 float (SIG_VALTYPE_ 1 or 2).
enum class ValueType {
  kInteger,  ///< Two's complement or unsigned integer of `length` bits.
  kFloat32,  ///< IEEE 754 single (SIG_VALTYPE_ 1); length 32.
  kFloat64,  ///< IEEE 754 double (SIG_VALTYPE_ 2); length 64.
};

/// One signal of a message, as its SG_ line defines it.
struct Signal {
  std::string name;                    ///< Signal name, unique in its message.
  uint32_t start_bit = 0;              ///< DBC start bit: LSB position (Intel) or MSB position (Motorola), bit numbering of the DBC.
  uint32_t length = 1;                 ///< Length in bits, 1..64.
  ByteOrder byte_order = ByteOrder::kIntel;  ///< Byte order.
  bool is_signed = false;              ///< Two's complement raw value ("-") rather than unsigned ("+").
  double factor = 1.0;                 ///< physical = raw * factor + offset.
  double offset = 0.0;                 ///< physical = raw * factor + offset.
  double minimum = 0.0;                ///< Physical minimum ([min|max]); min == max == 0 means no range.
  double maximum = 0.0;                ///< Physical maximum.
  std::string unit;                    ///< Unit text, e.g. "km/h".
  std::vector<std::string> receivers;  ///< Receiving nodes.
  MuxRole mux = MuxRole::kPlain;       ///< Multiplexing role.
  uint64_t mux_value = 0;              ///< For kMultiplexed: the multiplexor raw value that selects this signal.
  std::string comment;                 ///< CM_ SG_ comment, "" when none.
  std::map<int64_t, std::string> value_table;  ///< VAL_ descriptions of raw values, empty when none.
  ValueType value_type = ValueType::kInteger;  ///< Integer, or IEEE float from SIG_VALTYPE_.
};

/// One message (BO_ line and its signals).
struct Message {
  uint32_t id = 0;           ///< Identifier without the DBC's extended flag (bit 31).
  bool extended = false;     ///< 29-bit identifier (DBC id with bit 31 set, or over 0x7FF).
  std::string name;          ///< Message name.
  uint32_t length = 8;       ///< Payload length in bytes, 0..64.
  bool fd = false;           ///< CAN FD (from BA_ "VFrameFormat" 14/15, or a length over 8).
  std::string transmitter;   ///< Sending node, "" or "Vector__XXX" when none.
  std::vector<Signal> signals;  ///< Signals in file order.
  std::string comment;       ///< CM_ BO_ comment.
  uint32_t cycle_time_ms = 0;  ///< BA_ "GenMsgCycleTime" (or its BA_DEF_DEF_ default), in ms; 0 when none. Typical 10..1000.
  /// The signal named `name`, or nullptr.
  const Signal* FindSignal(std::string_view name) const;
  /// The signals' names, comma-separated ("none" without signals): what an error message offers instead.
  std::string SignalNames() const;
};

/// A parsed DBC file.
struct Database {
  std::vector<std::string> nodes;   ///< BU_ node names.
  std::vector<Message> messages;    ///< Messages in file order.
  std::map<std::string, std::map<int64_t, std::string>> value_tables;  ///< VAL_TABLE_ tables by name.
  /// The message with this id and format, or nullptr.
  const Message* FindMessage(uint32_t id, bool extended) const;
  /// The message named `name`, or nullptr.
  const Message* FindMessage(std::string_view name) const;
};

/// Parses DBC text; `source` names the file in errors. Throws DbcError with source:line.
Database ParseDbc(std::string_view text, const std::string& source);
/// Reads and parses a DBC file. Throws DbcError (a missing file too).
Database LoadDbc(const std::string& path);

/// Raw (integer) value of a signal in a payload: sign-extended when the signal is signed.
int64_t ExtractRaw(const Signal& signal, const uint8_t* data, uint32_t len);
/// Writes a raw value into a payload (its low `length` bits), leaving every other bit unchanged.
void InsertRaw(const Signal& signal, int64_t raw, uint8_t* data, uint32_t len);

/// Physical value of a signal in a frame: raw * factor + offset.
double DecodeSignal(const Signal& signal, const Frame& frame);
/// Raw value for a physical value: round((physical - offset) / factor), clamped to the raw range of the
/// signal's length and sign (and to [minimum, maximum] when the signal has a range).
int64_t PhysicalToRaw(const Signal& signal, double physical);
/// Writes `physical` into the frame's payload (see PhysicalToRaw).
void EncodeSignal(const Signal& signal, double physical, Frame& frame);

/// Whether `signal` is present in this frame (plain signals and the multiplexor always; a multiplexed
/// signal only when the message's multiplexor has its mux_value). A signal whose bits reach past the
/// frame's `len` (a short frame on the bus) is not present.
bool SignalPresent(const Message& message, const Signal& signal, const Frame& frame);

/// Every present signal of a frame decoded to physical values, by name.
std::map<std::string, double> DecodeMessage(const Message& message, const Frame& frame);
/// A frame of `message` (id, format, length) with the given physical values; signals not named are
/// zero raw. A multiplexed signal is written only when the multiplexor's value (given, or 0) selects it;
/// the others named are left out, as DecodeMessage leaves them out. Throws std::invalid_argument naming
/// an unknown signal.
Frame EncodeMessage(const Message& message, const std::map<std::string, double>& values);

}  // namespace platoon::can
