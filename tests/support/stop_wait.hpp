// Waiting for a process that was told to stop (SIGTERM) and has said so, without mistaking a slow kernel
// teardown for a process that does not exit.
#pragma once

#include "session_fixture.hpp"

#include <optional>
#include <string>

namespace platoon::testing {

/// Waits for `c`, sent SIGTERM after which it printed its SUMMARY, to exit: WaitForExitOrDescribe with 5 s
/// and then 55 s more. A process that has printed its SUMMARY has done its own work; what remains is the
/// kernel's teardown, which on a loaded VM can wait 30 s or more for the kernel's own workers
/// (docs/TESTING.md, "The suite under load"). A slow exit is printed (MESSAGE) with its thread states; the exit status is still the caller's check.
std::optional<int> WaitForStopped(process::Child& c, const std::string& who);

}  // namespace platoon::testing
