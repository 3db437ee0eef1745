#pragma once
/// CAN transports (docs/CAN.md, "Transports"): thin, non-blocking shells that move platoon::can::Frame
/// values to and from a bus. A bus is named by a spec string:
///   "udp:LOCAL_ADDR:LOCAL_PORT>PEER_ADDR:PEER_PORT"  one frame per UDP datagram (the layout below),
///   "socketcan:IFNAME"                              Linux raw SocketCAN with CAN FD frames enabled,
///   "candump:REPLAY.log", "candump:>RECORD.log", "candump:REPLAY.log>RECORD.log"
///                                                   a candump log replayed on the sim clock and/or recorded.
/// The UDP datagram layout (little endian, 12 + len bytes): "PCAN", uint8 version (1), uint8 flags (bit 0:
/// extended 29-bit id, bit 1: CAN FD; others 0), uint8 len, uint8 reserved (0), uint32 id, len payload bytes.
/// Receiving never blocks and reads a bounded number of datagrams per call; malformed input is counted.

#include "platoon/can/candump.hpp"
#include "platoon/can/frame.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace platoon::can {

/// A bus that cannot be opened, or a spec that cannot be read: what() names the spec and what was expected.
class BusError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bytes of the UDP datagram header before the payload.
inline constexpr size_t kUdpHeaderBytes = 12;
/// Version byte of the UDP datagram layout.
inline constexpr uint8_t kUdpVersion = 1;

/// The UDP datagram of a frame (kUdpHeaderBytes + len bytes).
std::vector<uint8_t> EncodeUdpFrame(const Frame& frame);
/// The frame in a UDP datagram; nullopt with `error` set ("size 5, expected at least 12", "magic", "flags
/// 0x04: unknown bits", "len 9 not a classic CAN length", "id 0x800 over 0x7FF for a standard id") when
/// it is not one.
std::optional<Frame> DecodeUdpFrame(const uint8_t* data, size_t size, std::string& error);

/// What a bus has done since it was opened.
struct BusCounters {
  uint64_t sent = 0;            ///< Frames handed to the bus.
  uint64_t received = 0;        ///< Valid frames taken from the bus.
  uint64_t send_errors = 0;     ///< Sends that failed (socket error, full buffer, failed log write).
  uint64_t rejected = 0;        ///< Malformed input refused (bad datagrams, frames of an unknown format).
  std::string last_error;       ///< The newest reject or error, "" when none.
};

/// A CAN bus: sends and receives frames without blocking.
class Bus {
 public:
  virtual ~Bus() = default;
  /// Sends a frame; false (and counted) when it could not be sent.
  virtual bool Send(const Frame& frame) = 0;
  /// The next received frame, or nullopt when none waits. Never blocks; reads at most a bounded number of
  /// malformed datagrams per call.
  virtual std::optional<Frame> Receive() = 0;
  /// Tells the bus the sim time, in ns: the candump bus replays and stamps by it; the others ignore it.
  virtual void SetTimeNs(int64_t /*sim_ns*/) {}
  /// The spec it was opened with, e.g. "udp:127.0.0.1:47001>127.0.0.1:47002".
  const std::string& Name() const { return name_; }
  /// What it has done so far.
  const BusCounters& Counters() const { return counters_; }

 protected:
  explicit Bus(std::string name) : name_(std::move(name)) {}
  void Reject(const std::string& error) {
    ++counters_.rejected;
    counters_.last_error = error;
  }
  void SendError(const std::string& error) {
    ++counters_.send_errors;
    counters_.last_error = error;
  }
  std::string name_;
  BusCounters counters_;
};

/// One frame per UDP datagram (IPv4): binds local:port, sends to peer:port, takes datagrams from any sender.
class UdpBus final : public Bus {
 public:
  /// Throws BusError naming the address when the socket cannot be bound.
  UdpBus(const std::string& local_address, uint16_t local_port, const std::string& peer_address, uint16_t peer_port);
  ~UdpBus() override;
  UdpBus(const UdpBus&) = delete;
  UdpBus& operator=(const UdpBus&) = delete;
  bool Send(const Frame& frame) override;
  std::optional<Frame> Receive() override;
  /// The bound local port (the one asked for, or the kernel's choice for 0).
  uint16_t LocalPort() const { return local_port_; }

 private:
  int fd_ = -1;
  uint16_t local_port_ = 0;
  std::vector<uint8_t> peer_;  // a sockaddr_in
  std::vector<uint8_t> buffer_;
};

/// Linux raw SocketCAN (CAN_RAW with CAN_RAW_FD_FRAMES on): classic and CAN FD frames on an interface.
class SocketCanBus final : public Bus {
 public:
  /// Throws BusError when the kernel has no SocketCAN or the interface does not exist ("socketcan:can0:
  /// no CAN interface \"can0\" ...").
  explicit SocketCanBus(const std::string& interface);
  ~SocketCanBus() override;
  SocketCanBus(const SocketCanBus&) = delete;
  SocketCanBus& operator=(const SocketCanBus&) = delete;
  bool Send(const Frame& frame) override;
  std::optional<Frame> Receive() override;

 private:
  int fd_ = -1;
};

/// A candump log as a bus: replays a log's frames when the sim time reaches them (the first frame at the
/// first sim time the bus is given, the others at their offsets from it), and records every frame sent
/// and received, stamped with the sim time, through can::CandumpWriter.
class CandumpFileBus final : public Bus {
 public:
  /// `replay_path` and/or `record_path` ("" for none). Throws BusError for an unreadable log or a record
  /// file that cannot be created (the CandumpError's FILE:LINE text included).
  CandumpFileBus(const std::string& name, const std::string& replay_path, const std::string& record_path);
  ~CandumpFileBus() override;
  bool Send(const Frame& frame) override;
  std::optional<Frame> Receive() override;
  void SetTimeNs(int64_t sim_ns) override;
  /// Frames of the replayed log not yet received.
  size_t ReplayLeft() const { return replay_.size() - next_; }

 private:
  bool Record(const Frame& frame);
  std::vector<LoggedFrame> replay_;
  size_t next_ = 0;
  int64_t sim_ns_ = 0, start_sim_ns_ = -1;
  std::unique_ptr<CandumpWriter> writer_;
};

/// A bus spec read: the kind and its parts.
struct BusSpec {
  enum class Kind { kUdp, kSocketCan, kCandump };
  Kind kind = Kind::kUdp;
  std::string local_address, peer_address;  ///< udp: IPv4 addresses.
  uint16_t local_port = 0, peer_port = 0;    ///< udp: ports (local 0: the kernel picks one).
  std::string interface;                     ///< socketcan: the interface name, e.g. "can0".
  std::string replay_path, record_path;      ///< candump: the files ("" for none).
};

/// Reads a spec (see the file comment); relative candump paths are taken from `base_dir` when it is not
/// empty. Throws BusError "bus spec \"...\": expected ..., got ...".
BusSpec ParseBusSpec(const std::string& spec, const std::string& base_dir = {});
/// Opens the bus a spec names. Throws BusError.
std::unique_ptr<Bus> OpenBus(const std::string& spec, const std::string& base_dir = {});

}  // namespace platoon::can
