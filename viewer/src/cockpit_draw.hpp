#pragma once
// Private to platoon_viewer: the instrument cluster drawn with Dear ImGui's draw list (after the 3D view,
// before the debug text and the scenario message).

#include "platoon/viewer/cockpit.hpp"

#include <imgui.h>

namespace platoon::viewer {

// Draws the cluster of `l` showing `s` into `dl` (screen pixels, u right, v down).
void DrawInstrumentCluster(ImDrawList* dl, const ClusterLayout& l, const CockpitDef& def, const CockpitState& s);

}  // namespace platoon::viewer
