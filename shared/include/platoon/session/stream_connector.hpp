#pragma once
/// Keeps a data SUB socket connected to exactly the endpoints that the session's node table lists for
/// the streams a process wants (docs/PROTOCOL.md "Data streams"): hosts that restart on another port
/// or move are followed, gone ones dropped. Used by the node runtime and the viewer alike.

#include "platoon/protocol/messages.hpp"
#include "platoon/transport/channel.hpp"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace platoon::session {

/// The set of data endpoints one SUB channel is connected to.
class StreamConnector {
 public:
  /// `sub` must outlive the connector.
  explicit StreamConnector(transport::Channel& sub) : sub_(sub) {}

  /// Connects to every endpoint in `nodes` whose stream `want` accepts and disconnects from the rest.
  /// Returns the endpoints newly connected and the ones dropped, for logging.
  std::pair<std::vector<std::string>, std::vector<std::string>> Resolve(
      const std::vector<protocol::NodeInfo>& nodes, const std::function<bool(const protocol::DataEndpoint&)>& want);

  /// Endpoints connected now.
  const std::set<std::string>& Connected() const { return connected_; }

 private:
  transport::Channel& sub_;
  std::set<std::string> connected_;
};

}  // namespace platoon::session
