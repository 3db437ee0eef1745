// CAN transports (shared/src/can/transport.cpp): the UDP datagram layout, the UDP bus on loopback, the
// SocketCAN bus's error on a kernel without the interface, the candump replay on the sim clock and its
// record, and the bus spec strings.
#include "../support/session_fixture.hpp"
#include "platoon/can/candump.hpp"
#include "platoon/can/transport.hpp"
#include "platoon/input/external_stream.hpp"
#include "platoon/transport/channel.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

namespace can_transport_test_detail {

using namespace platoon;

can::Frame MakeCanFrame(uint32_t id, bool extended, bool fd, uint8_t len, uint8_t seed) {
  can::Frame f;
  f.id = id;
  f.extended = extended;
  f.fd = fd;
  f.len = len;
  for (uint8_t i = 0; i < len; ++i) f.data[i] = static_cast<uint8_t>(seed + 7 * i);
  return f;
}

// The bus's next frame, polling up to 2 s (loopback delivery is not instantaneous).
std::optional<can::Frame> ReceiveWithin(can::Bus& bus) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    if (auto f = bus.Receive()) return f;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::nullopt;
}

std::string SpecError(const std::string& spec) {
  try {
    can::ParseBusSpec(spec);
  } catch (const can::BusError& e) {
    return e.what();
  }
  return "";
}

}  // namespace can_transport_test_detail

using namespace can_transport_test_detail;

TEST_CASE("can transport: the UDP datagram layout round-trips standard, extended and FD frames and refuses malformed ones") {
  for (const auto& f : {MakeCanFrame(0x123, false, false, 8, 1), MakeCanFrame(0x18FF0010, true, false, 3, 9),
                        MakeCanFrame(0x7FF, false, true, 64, 200), MakeCanFrame(0, false, false, 0, 0)}) {
    const auto bytes = can::EncodeUdpFrame(f);
    REQUIRE(bytes.size() == can::kUdpHeaderBytes + f.len);
    // The header as docs/CAN.md describes it.
    CHECK(std::string(bytes.begin(), bytes.begin() + 4) == "PCAN");
    CHECK(bytes[4] == 1);
    CHECK(bytes[5] == ((f.extended ? 1 : 0) | (f.fd ? 2 : 0)));
    CHECK(bytes[6] == f.len);
    CHECK(bytes[8] == (f.id & 0xFF));
    CHECK(bytes[11] == (f.id >> 24));
    std::string error;
    const auto back = can::DecodeUdpFrame(bytes.data(), bytes.size(), error);
    REQUIRE(back);
    CHECK(error.empty());
    CHECK(*back == f);
  }
  const auto good = can::EncodeUdpFrame(MakeCanFrame(0x100, false, false, 8, 3));
  const auto refused = [](std::vector<uint8_t> b) {
    std::string error;
    CHECK_FALSE(can::DecodeUdpFrame(b.data(), b.size(), error));
    return error;
  };
  CHECK(refused({good.begin(), good.begin() + 5}) == "size 5, expected at least 12");
  CHECK(refused({good.begin(), good.end() - 1}) == "size 19, expected 20 for len 8");
  auto b = good;
  b[0] = 'X';
  CHECK(refused(b).find("magic") != std::string::npos);
  b = good, b[4] = 2;
  CHECK(refused(b) == "version 2, expected 1");
  b = good, b[5] = 4;
  CHECK(refused(b) == "flags 0x04: unknown bits");
  b = good, b[7] = 1;
  CHECK(refused(b) == "reserved byte 1, expected 0");
  b = good, b[6] = 9;
  b.push_back(0);
  CHECK(refused(b) == "len 9 not a classic CAN length");
  b = good, b[9] = 0x08;  // id 0x800
  CHECK(refused(b) == "id 0x800 over 0x7FF for a standard id");
}

TEST_CASE("can transport: two UDP buses on loopback exchange frames and count a malformed datagram") {
  const auto ports = transport::FreeLoopbackPorts(2);
  can::UdpBus a("127.0.0.1", ports[0], "127.0.0.1", ports[1]);
  can::UdpBus b("127.0.0.1", ports[1], "127.0.0.1", ports[0]);
  CHECK(a.LocalPort() == ports[0]);
  CHECK_FALSE(a.Receive());  // nothing waits: returns at once
  const can::Frame f1 = MakeCanFrame(0x18FF0010, true, false, 8, 5), f2 = MakeCanFrame(0x42, false, true, 24, 77);
  REQUIRE(a.Send(f1));
  REQUIRE(a.Send(f2));
  auto r1 = ReceiveWithin(b);
  auto r2 = ReceiveWithin(b);
  REQUIRE(r1);
  REQUIRE(r2);
  CHECK(*r1 == f1);
  CHECK(*r2 == f2);
  CHECK(a.Counters().sent == 2);
  CHECK(b.Counters().received == 2);
  // A frame that breaks its format is not sent.
  CHECK_FALSE(a.Send(MakeCanFrame(0x800, false, false, 8, 0)));
  CHECK(a.Counters().send_errors == 1);
  // A stranger's datagram is refused and counted; the next good frame still comes.
  REQUIRE(input::SendDatagram("127.0.0.1", ports[1], {'X', 'C', 'A', 'N', 1, 0, 0, 0, 0, 0, 0, 0}));
  REQUIRE(b.Send(f1));
  auto r3 = ReceiveWithin(a);
  REQUIRE(r3);
  CHECK(*r3 == f1);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (b.Counters().rejected == 0 && std::chrono::steady_clock::now() < until) {
    b.Receive();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(b.Counters().rejected == 1);
  CHECK(b.Counters().last_error.find("magic") != std::string::npos);
  CHECK(b.Counters().received == 2);
  // A port in use cannot be bound twice: a clear error naming the address.
  try {
    can::UdpBus c("127.0.0.1", ports[0], "127.0.0.1", ports[1]);
    FAIL("bound a port in use");
  } catch (const can::BusError& e) {
    CHECK(std::string(e.what()).find("cannot bind udp://127.0.0.1:" + std::to_string(ports[0])) != std::string::npos);
  }
}

TEST_CASE("can transport: a SocketCAN bus on a missing interface gives a clear error") {
  try {
    can::SocketCanBus bus("nocan7");
    FAIL("opened a CAN interface that does not exist");
  } catch (const can::BusError& e) {
    const std::string what = e.what();
    // Either the kernel has no SocketCAN at all, or it has and the interface is missing.
    CHECK(what.rfind("socketcan:nocan7: ", 0) == 0);
    const bool no_family = what.find("this kernel has no SocketCAN") != std::string::npos;
    const bool no_interface = what.find("no CAN interface \"nocan7\"") != std::string::npos;
    CHECK((no_family || no_interface));
  }
  CHECK_THROWS_AS(can::OpenBus("socketcan:nocan7"), can::BusError);
}

TEST_CASE("can transport: a candump bus replays a log on the sim clock and records what it sends and receives") {
  const testing::TempDir dir;
  const std::string log = dir.Write("in.log",
                                    "(100.000000) can0 100#0102\n"
                                    "(100.010000) can0 18FF0010#AABBCCDD\n"
                                    "(100.025000) can0 101##1" + std::string(24, 'E') + "\n");
  auto bus = can::OpenBus("candump:in.log>out.log", dir.Path());
  CHECK(bus->Name() == "candump:in.log>out.log");
  CHECK_FALSE(bus->Receive());  // no sim time given yet
  const int64_t t0 = 5'000'000'000;
  bus->SetTimeNs(t0);
  auto f = bus->Receive();
  REQUIRE(f);
  CHECK(f->id == 0x100);
  CHECK_FALSE(bus->Receive());  // the second is 10 ms later
  bus->SetTimeNs(t0 + 9'999'999);
  CHECK_FALSE(bus->Receive());
  bus->SetTimeNs(t0 + 10'000'000);
  f = bus->Receive();
  REQUIRE(f);
  CHECK(f->extended);
  CHECK(f->id == 0x18FF0010);
  bus->SetTimeNs(t0 + 30'000'000);
  const can::Frame sent = MakeCanFrame(0x321, false, false, 2, 1);
  REQUIRE(bus->Send(sent));
  f = bus->Receive();
  REQUIRE(f);
  CHECK(f->fd);
  CHECK(f->len == 12);
  CHECK_FALSE(bus->Receive());
  CHECK(bus->Counters().received == 3);
  CHECK(bus->Counters().sent == 1);
  bus.reset();  // flushes the record
  const auto recorded = can::ReadCandumpLog(dir.Path() + "/out.log");
  REQUIRE(recorded.size() == 4);
  CHECK(recorded[0].time_ns == t0);
  CHECK(recorded[1].time_ns == t0 + 10'000'000);
  CHECK(recorded[1].frame.id == 0x18FF0010);
  CHECK(recorded[2].frame == sent);
  CHECK(recorded[2].time_ns == t0 + 30'000'000);
  CHECK(recorded[3].frame.fd);
  // A log that cannot be read names its file and line.
  const std::string bad = dir.Write("bad.log", "(1.0) can0 100#01\n(2.0) can0 zz#01\n");
  try {
    can::OpenBus("candump:" + bad);
    FAIL("read a bad log");
  } catch (const can::BusError& e) {
    CHECK(std::string(e.what()).find(bad + ":2:") != std::string::npos);
  }
  CHECK_THROWS_AS(can::OpenBus("candump:" + dir.Path() + "/missing.log"), can::BusError);
}

TEST_CASE("can transport: bus specs are read with clear errors") {
  const can::BusSpec u = can::ParseBusSpec("udp:127.0.0.1:47001>10.0.0.2:47002");
  CHECK(u.kind == can::BusSpec::Kind::kUdp);
  CHECK(u.local_address == "127.0.0.1");
  CHECK(u.local_port == 47001);
  CHECK(u.peer_address == "10.0.0.2");
  CHECK(u.peer_port == 47002);
  CHECK(can::ParseBusSpec("socketcan:can0").interface == "can0");
  const can::BusSpec c = can::ParseBusSpec("candump:a.log>b.log", "/rig");
  CHECK(c.replay_path == "/rig/a.log");
  CHECK(c.record_path == "/rig/b.log");
  CHECK(can::ParseBusSpec("candump:>/tmp/b.log", "/rig").replay_path.empty());
  CHECK(SpecError("usb:can0") == "bus spec \"usb:can0\": expected a bus kind \"udp:\", \"socketcan:\" or \"candump:\", got \"usb\"");
  CHECK(SpecError("udp:127.0.0.1:47001").find("expected udp:LOCAL_IPV4:PORT>PEER_IPV4:PORT") != std::string::npos);
  CHECK(SpecError("udp:localhost:47001>127.0.0.1:1").find("an IPv4 address for the local endpoint, got \"localhost\"") != std::string::npos);
  CHECK(SpecError("udp:127.0.0.1:47001>127.0.0.1:0").find("a peer port 1..65535, got \"0\"") != std::string::npos);
  CHECK(SpecError("udp:127.0.0.1:99999>127.0.0.1:1").find("a local port 0..65535, got \"99999\"") != std::string::npos);
  CHECK(SpecError("socketcan:").find("socketcan:IFNAME") != std::string::npos);
  CHECK(SpecError("socketcan:averyveryverylongname").find("1..15 characters") != std::string::npos);
  CHECK(SpecError("candump:").find("no file") != std::string::npos);
  CHECK(SpecError("candump:a.log>").find("a record file after '>'") != std::string::npos);
}
