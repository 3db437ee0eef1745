// bench/bridge_ws_client.hpp: websocketpp's asio client on standalone asio. Compiled as C++17.
#include "bridge_ws_client.hpp"

#define ASIO_STANDALONE
#define _WEBSOCKETPP_CPP11_STL_
#include <websocketpp/client.hpp>
#include <websocketpp/config/asio_no_tls_client.hpp>

#include <mutex>
#include <stdexcept>
#include <thread>

namespace platoon::bench {

using Client = websocketpp::client<websocketpp::config::asio_client>;

struct FoxgloveWsClient::Impl {
  Client client;
  websocketpp::connection_hdl hdl;
  std::thread thread;
  std::function<void(const std::string&)> on_text, on_binary;
};

FoxgloveWsClient::FoxgloveWsClient(std::function<void(const std::string&)> on_text,
                                   std::function<void(const std::string&)> on_binary)
    : impl_(std::make_unique<Impl>()) {
  impl_->on_text = std::move(on_text);
  impl_->on_binary = std::move(on_binary);
  Impl& m = *impl_;
  m.client.clear_access_channels(websocketpp::log::alevel::all);
  m.client.clear_error_channels(websocketpp::log::elevel::all);
  m.client.init_asio();
  m.client.set_message_handler([&m](websocketpp::connection_hdl, Client::message_ptr msg) {
    if (msg->get_opcode() == websocketpp::frame::opcode::text) m.on_text(msg->get_payload());
    else m.on_binary(msg->get_payload());
  });
}

FoxgloveWsClient::~FoxgloveWsClient() { Stop(); }

void FoxgloveWsClient::Start(const std::string& url) {
  websocketpp::lib::error_code ec;
  auto con = impl_->client.get_connection(url, ec);
  if (ec) throw std::runtime_error(url + ": " + ec.message());
  con->add_subprotocol("foxglove.websocket.v1");
  impl_->hdl = con->get_handle();
  impl_->client.connect(con);
  impl_->thread = std::thread([this] { impl_->client.run(); });
}

void FoxgloveWsClient::SendText(const std::string& text) {
  websocketpp::lib::error_code ec;
  impl_->client.send(impl_->hdl, text, websocketpp::frame::opcode::text, ec);
}

void FoxgloveWsClient::Stop() {
  if (!impl_->thread.joinable()) return;
  websocketpp::lib::error_code ec;
  impl_->client.close(impl_->hdl, websocketpp::close::status::normal, "done", ec);
  impl_->client.stop();
  impl_->thread.join();
}

}  // namespace platoon::bench
