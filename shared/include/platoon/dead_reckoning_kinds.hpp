#pragma once
/// Which dead-reckoning model each entity kind uses. Sender and receivers must agree, so the
/// choice lives in one place.

#include "platoon/dead_reckoning.hpp"
#include "platoon/protocol/messages.hpp"

namespace platoon::dr {

/// Model for an entity kind: static objects hold, pedestrians move at constant velocity (FPW),
/// vehicles turn by the distance they travel and stop at zero speed (CCA).
Model ModelForKind(protocol::EntityKind kind);

}  // namespace platoon::dr
