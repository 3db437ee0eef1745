#pragma once
/// Zero-copy sends on a Channel: ZeroMQ reads the bytes in place (docs/FUSION.md, "Incremental fusion").

#include "platoon/transport/channel.hpp"

#include <memory>
#include <string_view>

namespace platoon::transport {

/// Sends `data` on `channel` (no peer: not a ROUTER) without copying it and without blocking: ZeroMQ reads
/// the bytes in place from its I/O thread, and `owner`, which keeps them alive, is released when it is
/// done with them (sent, or dropped). The bytes must not change until then (owner.use_count() says when
/// nobody else holds them). Returns false when the message had to be dropped. Not counted in the
/// channel's Stats().
bool SendShared(Channel& channel, std::string_view data, std::shared_ptr<const void> owner);

}  // namespace platoon::transport
