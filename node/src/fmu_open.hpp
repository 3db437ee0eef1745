#pragma once
// How a node's module opens its FMI 2.0 vehicle model (vehicle_model = "fmu"): the driver seat one
// instance, route traffic one per vehicle. Private to node/src.

#include "platoon/config/session.hpp"
#include "platoon/vehicle/fmu.hpp"

#include <spdlog/logger.h>

#include <memory>
#include <string>

namespace platoon::node {

/// Opens an instance `instance_name` of the node's FMU (`node.fmu`), started at `start` and stepped every
/// `step_s`; the FMU's own messages go to `log` (may be null). A refusal (vehicle::FmuError) becomes the
/// config::ConfigError that platoon check and node start report, at the fmu key's line.
std::unique_ptr<vehicle::FmuVehicle> OpenNodeFmu(const config::SessionDef& session, const config::NodeDef& node,
                                                 const std::string& instance_name, const vehicle::FmuStart& start,
                                                 double step_s, const std::shared_ptr<spdlog::logger>& log);

}  // namespace platoon::node
