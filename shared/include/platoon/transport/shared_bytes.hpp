#pragma once
/// Bytes shared without copying, for megabyte messages (point clouds) on their way through a node.

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace platoon::transport {

/// Bytes held without a copy: `view` stays valid and unchanged while `owner` lives. Made from a string
/// (which it then owns) or from a received ZeroMQ message (which it shares: ChannelDef::share_from_bytes).
struct SharedBytes {
  std::shared_ptr<const void> owner;
  std::string_view view;

  SharedBytes() = default;
  /// Takes the string (its bytes are moved, not copied).
  SharedBytes(std::string bytes) {  // NOLINT: implicit, a string is bytes
    auto s = std::make_shared<const std::string>(std::move(bytes));
    view = *s;
    owner = std::move(s);
  }
  SharedBytes(std::shared_ptr<const void> o, std::string_view v) : owner(std::move(o)), view(v) {}
  size_t size() const { return view.size(); }
  bool empty() const { return view.empty(); }
};

}  // namespace platoon::transport
