// The WebSocket server of `platoon bridge` (bridge_ws.hpp): websocketpp's asio server, standalone asio.
// Compiled as C++17 (tools/CMakeLists.txt).
#include "bridge_ws.hpp"

#define ASIO_STANDALONE
#define _WEBSOCKETPP_CPP11_STL_
#include <websocketpp/config/asio_no_tls.hpp>
#include <websocketpp/server.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace platoon::bridge {

using Server = websocketpp::server<websocketpp::config::asio>;
using Hdl = websocketpp::connection_hdl;

struct WsServer::Impl {
  std::string subprotocol;
  WsHandlers h;
  Server server;
  std::map<uint64_t, Hdl> hdls;
  std::map<Hdl, uint64_t, std::owner_less<Hdl>> ids;
  uint64_t next = 1;

  Server::connection_ptr Con(uint64_t conn) const {
    const auto it = hdls.find(conn);
    if (it == hdls.end()) return nullptr;
    websocketpp::lib::error_code ec;
    auto con = const_cast<Server&>(server).get_con_from_hdl(it->second, ec);
    return ec ? nullptr : con;
  }
};

WsServer::WsServer(std::string subprotocol, WsHandlers handlers) : impl_(std::make_unique<Impl>()) {
  impl_->subprotocol = std::move(subprotocol);
  impl_->h = std::move(handlers);
  Impl& m = *impl_;
  m.server.clear_access_channels(websocketpp::log::alevel::all);
  m.server.clear_error_channels(websocketpp::log::elevel::all);
  m.server.init_asio();
  m.server.set_reuse_addr(true);
  m.server.set_validate_handler([&m](Hdl hdl) {
    auto con = m.server.get_con_from_hdl(hdl);
    const auto& offered = con->get_requested_subprotocols();
    if (std::find(offered.begin(), offered.end(), m.subprotocol) == offered.end()) {
      if (m.h.warn)
        m.h.warn("refused a WebSocket client from " + con->get_remote_endpoint() + ": it did not offer the subprotocol " +
                 m.subprotocol);
      con->set_status(websocketpp::http::status_code::bad_request);
      return false;
    }
    if (m.h.accept) {
      const auto [ok, why] = m.h.accept(con->get_resource());
      if (!ok) {
        if (m.h.warn) m.h.warn("refused a WebSocket client from " + con->get_remote_endpoint() + ": " + why);
        con->set_status(websocketpp::http::status_code::unauthorized);
        return false;
      }
    }
    con->select_subprotocol(m.subprotocol);
    return true;
  });
  m.server.set_open_handler([&m](Hdl hdl) {
    const uint64_t id = m.next++;
    m.hdls[id] = hdl;
    m.ids[hdl] = id;
    if (m.h.open) m.h.open(id, m.server.get_con_from_hdl(hdl)->get_remote_endpoint());
  });
  auto gone = [&m](Hdl hdl) {
    const auto it = m.ids.find(hdl);
    if (it == m.ids.end()) return;
    const uint64_t id = it->second;
    m.ids.erase(it);
    m.hdls.erase(id);
    if (m.h.close) m.h.close(id);
  };
  m.server.set_close_handler(gone);
  m.server.set_fail_handler(gone);
  m.server.set_message_handler([&m](Hdl hdl, Server::message_ptr msg) {
    const auto it = m.ids.find(hdl);
    if (it == m.ids.end() || !m.h.message) return;
    m.h.message(it->second, msg->get_opcode() == websocketpp::frame::opcode::text, msg->get_payload());
  });
}

WsServer::~WsServer() = default;

uint16_t WsServer::Listen(const std::string& address, uint16_t port) {
  asio::error_code ec;
  const auto ip = asio::ip::make_address(address, ec);
  if (ec) throw std::runtime_error("expected an IP address, got '" + address + "'");
  websocketpp::lib::error_code wec;
  impl_->server.listen(asio::ip::tcp::endpoint(ip, port), wec);
  if (wec) throw std::runtime_error(wec.message());
  impl_->server.start_accept(wec);
  if (wec) throw std::runtime_error(wec.message());
  const auto local = impl_->server.get_local_endpoint(ec);
  return ec ? port : local.port();
}

void WsServer::Run() { impl_->server.run(); }

void WsServer::Stop() {
  Post([this] {
    Impl& m = *impl_;
    websocketpp::lib::error_code ec;
    m.server.stop_listening(ec);
    for (const auto& [id, hdl] : m.hdls) m.server.close(hdl, websocketpp::close::status::going_away, "bridge stopping", ec);
    m.server.stop();
  });
}

void WsServer::Post(std::function<void()> f) { asio::post(impl_->server.get_io_service(), std::move(f)); }

void WsServer::SendText(uint64_t conn, const std::string& text) {
  if (auto con = impl_->Con(conn)) con->send(text, websocketpp::frame::opcode::text);
}

bool WsServer::SendBinary(uint64_t conn, const std::string& bytes, size_t limit_bytes) {
  auto con = impl_->Con(conn);
  if (!con) return true;
  if (con->get_buffered_amount() > limit_bytes) return false;
  con->send(bytes.data(), bytes.size(), websocketpp::frame::opcode::binary);
  return true;
}

size_t WsServer::Buffered(uint64_t conn) const {
  auto con = impl_->Con(conn);
  return con ? con->get_buffered_amount() : 0;
}

}  // namespace platoon::bridge
