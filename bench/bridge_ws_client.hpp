#pragma once
// A Foxglove WebSocket client for bench/bridge_latency (websocketpp's asio client; bridge_ws_client.cpp is
// compiled as C++17 like tools/src/bridge_ws.cpp, so this header stays C++17).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace platoon::bench {

/// Connects with subprotocol foxglove.websocket.v1 and reports every message on its own thread.
class FoxgloveWsClient {
 public:
  /// `on_text`: each text message; `on_binary`: each binary message.
  FoxgloveWsClient(std::function<void(const std::string&)> on_text, std::function<void(const std::string&)> on_binary);
  ~FoxgloveWsClient();
  /// Connects to `url` (e.g. "ws://127.0.0.1:8765") and starts the client thread. Throws std::runtime_error.
  void Start(const std::string& url);
  /// Sends a text message (any thread).
  void SendText(const std::string& text);
  /// Closes and joins the thread.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::bench
