#pragma once
// The summary `platoon check FILE` ends with: what `platoon run FILE` sets up (tools/src/check_summary.cpp).
#include "platoon/config/session.hpp"

#include <string>

namespace platoon::launcher {

/// Lines (each ending in '\n') that sum up a validated session: the server (bind, ports), each node (name,
/// role, host, its sensors with type and rate, a seat's input), the scenario events (one line each), the
/// data writes (node, path, rate), the recorders (path, streams), and lock-step or real time. Reads the
/// sensor tables as the sensor host does, so call it on a session that passed validation.
std::string CheckSummary(const config::SessionDef& session);

}  // namespace platoon::launcher
