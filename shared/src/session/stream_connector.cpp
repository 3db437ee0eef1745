#include "platoon/session/stream_connector.hpp"

namespace platoon::session {

std::pair<std::vector<std::string>, std::vector<std::string>> StreamConnector::Resolve(
    const std::vector<protocol::NodeInfo>& nodes, const std::function<bool(const protocol::DataEndpoint&)>& want) {
  std::set<std::string> wanted;
  for (const auto& n : nodes)
    for (const auto& e : n.endpoints)
      if (want(e)) wanted.insert(e.Endpoint());
  std::vector<std::string> added, dropped;
  for (const auto& ep : connected_)
    if (!wanted.count(ep)) {
      sub_.Disconnect(ep);
      dropped.push_back(ep);
    }
  for (const auto& ep : wanted)
    if (!connected_.count(ep)) {
      sub_.Connect(ep);
      added.push_back(ep);
    }
  connected_ = std::move(wanted);
  return {added, dropped};
}

}  // namespace platoon::session
