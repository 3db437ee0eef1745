#pragma once
/// An optional capability of a ModuleContext: publishing a data message that is already encoded, without
/// copying it (docs/FUSION.md, "Incremental fusion"). A module asks for it with dynamic_cast and falls back
/// to ModuleContext::PublishData where a context has no socket to hand bytes to (tests).

#include <memory>
#include <string_view>

namespace platoon::node {

class EncodedPublisher {
 public:
  virtual ~EncodedPublisher() = default;
  /// Publishes `wire` (an encoded data message, e.g. from protocol::EncodeFusedInPlace) on the node's data
  /// socket without copying it: `owner` keeps the bytes alive and unchanged until the socket is done.
  virtual void PublishEncoded(std::string_view wire, std::shared_ptr<const void> owner) = 0;
};

}  // namespace platoon::node
