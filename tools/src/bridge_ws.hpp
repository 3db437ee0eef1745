#pragma once
// The WebSocket server of `platoon bridge`: Debian's websocketpp on standalone asio, behind an interface of
// standard types only. websocketpp 0.8 does not compile as C++20 (template-ids in its constructors), so
// bridge_ws.cpp alone is compiled as C++17 and this header must stay C++17.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace platoon::bridge {

/// What the server tells its owner; every call comes on the server's thread.
struct WsHandlers {
  /// Whether to accept a client asking for request target `resource` (e.g. "/?token=abc"); "" is the reason
  /// to log when not: (accept, why).
  std::function<std::pair<bool, std::string>(const std::string& resource)> accept;
  std::function<void(uint64_t conn, const std::string& remote)> open;
  std::function<void(uint64_t conn)> close;
  std::function<void(uint64_t conn, bool text, const std::string& payload)> message;
  std::function<void(const std::string& line)> warn;
};

/// A WebSocket server that speaks one subprotocol; connections are numbered 1, 2, ...
class WsServer {
 public:
  /// `subprotocol`: clients that do not offer it are refused (400).
  WsServer(std::string subprotocol, WsHandlers handlers);
  ~WsServer();
  WsServer(const WsServer&) = delete;
  WsServer& operator=(const WsServer&) = delete;

  /// Binds `address`:`port` and accepts; returns the bound port. Throws std::runtime_error with the reason.
  uint16_t Listen(const std::string& address, uint16_t port);
  /// Serves until Stop(); call on the server's own thread.
  void Run();
  /// Closes every connection and makes Run() return. Any thread.
  void Stop();
  /// Runs `f` on the server's thread. Any thread; never blocks.
  void Post(std::function<void()> f);
  /// Server thread: a text message to `conn` (always sent).
  void SendText(uint64_t conn, const std::string& text);
  /// Server thread: a binary message to `conn`, unless more than `limit_bytes` wait unsent to it: then
  /// false, and nothing is sent.
  bool SendBinary(uint64_t conn, const std::string& bytes, size_t limit_bytes);
  /// Server thread: bytes queued to `conn` and not yet written to its socket.
  size_t Buffered(uint64_t conn) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::bridge
