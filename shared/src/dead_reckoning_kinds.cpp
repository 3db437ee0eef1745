#include "platoon/dead_reckoning_kinds.hpp"

namespace platoon::dr {

Model ModelForKind(protocol::EntityKind kind) {
  switch (kind) {
    case protocol::EntityKind::kStaticObject: return Model::kStatic;
    case protocol::EntityKind::kPedestrian: return Model::kFpw;
    case protocol::EntityKind::kCar:
    case protocol::EntityKind::kTruck:
    case protocol::EntityKind::kMotorcycle:
    case protocol::EntityKind::kBicycle:
    case protocol::EntityKind::kUnknown: return Model::kCca;
  }
  return Model::kCca;
}

}  // namespace platoon::dr
