#pragma once
// `platoon export LOG --ros2 DIR`: a session log as a rosbag2 bag (MCAP storage) that `ros2 bag play DIR`
// plays: DIR/<DIR name>_0.mcap with ROS 2 messages (ros2msg schemas, CDR) and DIR/metadata.yaml
// (tools/src/ros2_export.cpp; docs/RECORDING.md, "ROS 2").
#include "export_cmd.hpp"

#include <string>

namespace platoon::launcher {

/// ROS 2 name of an entity or sensor name: characters other than letters, digits and '_' become '_',
/// repeated '_' collapse, a leading digit gets a "v" before it ("robot:0" -> "robot_0").
std::string Ros2Name(const std::string& name);

/// Writes the bag (ExportOptions::ros2_dir set). Exit code: 0 written, 1 nothing to export (no world
/// state or sensor message in --from/--to), 2 usage error (not a session log, a directory that cannot be
/// made) or a failed write.
int RunRos2Export(const ExportOptions& options);

}  // namespace platoon::launcher
