// The viewer's entity list names its entities (issue 37 item 7): EntityListLabel.
#include "platoon/entity_id.hpp"
#include "platoon/viewer/ui_panel.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace entity_label_test_detail {

platoon::protocol::NodeInfo Node(const std::string& name, platoon::protocol::Role role) {
  platoon::protocol::NodeInfo n;
  n.name = name;
  n.role = role;
  return n;
}

platoon::protocol::EntityState Car(uint64_t id) {
  platoon::protocol::EntityState e;
  e.id = id;
  e.kind = platoon::protocol::EntityKind::kCar;
  e.kinematics.velocity_mps = platoon::Vec3(12.5, 0, 0);
  return e;
}

}  // namespace entity_label_test_detail

TEST_CASE("viewer names: the entity list starts with the entity's readable name") {
  using namespace platoon;
  using entity_label_test_detail::Car;
  using entity_label_test_detail::Node;
  const std::vector<protocol::NodeInfo> nodes = {Node("ego", protocol::Role::kDriver), Node("city", protocol::Role::kTraffic)};
  const std::string seat = viewer::EntityListLabel(Car(VehicleId("ego", 0)), {}, nodes);
  CHECK(seat.rfind("ego ", 0) == 0);
  CHECK(seat.find("12.5 m/s") != std::string::npos);
  CHECK(viewer::EntityListLabel(Car(VehicleId("city", 3)), {}, nodes).rfind("city:3 ", 0) == 0);
  // The session file's name wins over the node's.
  const std::vector<NodeNaming> session = {{"city", false, {"", "", "", "lead"}}};
  CHECK(viewer::EntityListLabel(Car(VehicleId("city", 3)), session, nodes).rfind("lead ", 0) == 0);
  // An entity no node made: its id in hex.
  const uint64_t stray = 0xabcdef;
  CHECK(viewer::EntityListLabel(Car(stray), session, nodes).rfind("#0000000000abcdef", 0) == 0);
}
