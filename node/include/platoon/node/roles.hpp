#pragma once
/// The node roles, one row each: the name used in session files, the protocol role announced in Join,
/// and the factory of the role's modules. The node runtime asks this table which roles exist and what
/// to step; nothing else switches on the role. Adding a role: docs/ARCHITECTURE.md "Where a change goes".

#include "platoon/config/session.hpp"
#include "platoon/node/module.hpp"
#include "platoon/protocol/messages.hpp"

#include <spdlog/logger.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::node::roles {

/// Factory of a role's modules; throws config::ConfigError for a bad node table.
using ModuleFactory = std::vector<std::unique_ptr<Module>> (*)(const config::SessionDef& session,
                                                              const config::NodeDef& node,
                                                              std::shared_ptr<spdlog::logger> log);

/// One node role.
struct RoleRow {
  std::string_view name;                          ///< Equals protocol::RoleName(role), e.g. "sensor".
  protocol::Role role = protocol::Role::kUnknown;  ///< Role announced in Join.
  ModuleFactory make = nullptr;                    ///< Makes the role's modules (none for an observer).
};

/// Every role a node can take, in a stable order (observer, traffic, driver, sensor, fusion).
std::span<const RoleRow> Table();

/// The row of `role`, or nullptr.
const RoleRow* Find(protocol::Role role);

/// True when `role` has a row; otherwise false, with `why` naming the role and the available ones.
bool Available(protocol::Role role, std::string& why);

/// The modules of `node`'s role (the runtime adds its own monitors). Throws config::ConfigError for a
/// role without a row or a bad node table; other exceptions when a module cannot start.
std::vector<std::unique_ptr<Module>> MakeModules(const config::SessionDef& session, const config::NodeDef& node,
                                                 std::shared_ptr<spdlog::logger> log);

}  // namespace platoon::node::roles
