#pragma once
// `platoon export LOG --pcd DIR --stream ID` (and --ply DIR): every recorded cloud of one point-cloud
// stream as a binary PCD v0.7 and/or binary little-endian PLY file named by its sim time
// (tools/src/pcd_export.cpp; docs/RECORDING.md, "Point clouds as PCD and PLY files").
#include "export_cmd.hpp"

#include <cstdint>
#include <string>

namespace platoon::launcher {

/// The file stem of a cloud at sim time `stamp_ns`: seconds with 6 integer digits and 9 decimals
/// ("000012.300000000"; "-000001.500000000" before the start), so names sort by time.
std::string CloudFileStem(int64_t stamp_ns);

/// Writes the clouds of `options.stream` (ExportOptions::pcd_dir or ply_dir set). Exit code: 0 written,
/// 1 the stream has no cloud in --from/--to, 2 usage error (no --stream, a stream the log lacks or that
/// holds no clouds, not a session log) or a failed write.
int RunCloudExport(const ExportOptions& options);

}  // namespace platoon::launcher
