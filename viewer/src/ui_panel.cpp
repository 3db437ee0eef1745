#include "platoon/viewer/ui_panel.hpp"

#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <string>

namespace platoon::viewer {
namespace {

using protocol::SessionPhase;
using Command = protocol::SessionControl::Command;

const char* KindName(protocol::EntityKind k) {
  switch (k) {
    case protocol::EntityKind::kCar: return "car";
    case protocol::EntityKind::kTruck: return "truck";
    case protocol::EntityKind::kMotorcycle: return "motorcycle";
    case protocol::EntityKind::kBicycle: return "bicycle";
    case protocol::EntityKind::kPedestrian: return "pedestrian";
    case protocol::EntityKind::kStaticObject: return "static";
    case protocol::EntityKind::kUnknown: break;
  }
  return "unknown";
}

ImVec4 PhaseColour(SessionPhase p) {
  switch (p) {
    case SessionPhase::kRunning: return ImVec4(0.3f, 0.9f, 0.3f, 1);
    case SessionPhase::kPaused: return ImVec4(1.0f, 0.8f, 0.2f, 1);
    case SessionPhase::kStopped: return ImVec4(1.0f, 0.35f, 0.3f, 1);
    default: return ImVec4(0.7f, 0.7f, 0.9f, 1);
  }
}

// Distinct curve colours for overlaid plots.
constexpr ImU32 kCurveColours[] = {IM_COL32(255, 210, 60, 255), IM_COL32(90, 200, 255, 255), IM_COL32(255, 110, 110, 255),
                                   IM_COL32(140, 255, 140, 255), IM_COL32(220, 140, 255, 255), IM_COL32(255, 160, 60, 255),
                                   IM_COL32(200, 200, 200, 255)};

void DrawSession(const WorldSnapshot& s, UiState& state, UiActions& actions) {
  ImGui::Text("session '%s'  %s", s.session_name.empty() ? "?" : s.session_name.c_str(),
              s.joined ? "connected" : "waiting for the server...");
  if (!s.error.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "refused: %s", s.error.c_str());
  ImGui::TextColored(PhaseColour(s.phase), "%s", std::string(protocol::PhaseName(s.phase)).c_str());
  ImGui::SameLine();
  ImGui::Text("sim %.3f s | frame %.1f ms", static_cast<double>(s.sim_time_ns) * 1e-9, static_cast<double>(state.frame_ms));
  ImGui::Text("clock %s | offset %+.1f us | rtt %.0f us | world #%llu (gaps %llu)", s.clock_set ? "synced" : "unset",
              s.clock.offset_ns / 1e3, static_cast<double>(s.clock.min_delay_ns) / 1e3,
              static_cast<unsigned long long>(s.world.LastSequence()), static_cast<unsigned long long>(s.world_gaps));
  ImGui::BeginDisabled(!s.joined);
  ImGui::Checkbox("parameters", &state.show_params);
  if (ImGui::Button("Start")) actions.session = Command::kStart;
  ImGui::SameLine();
  if (s.phase == SessionPhase::kPaused) {
    if (ImGui::Button("Resume")) actions.session = Command::kResume;
  } else if (ImGui::Button("Pause")) {
    actions.session = Command::kPause;
  }
  ImGui::SameLine();
  if (ImGui::Button("Stop")) actions.session = Command::kStop;
  if (actions.session) state.command_error.clear();
  if (!state.command_error.empty())
    ImGui::TextColored(ImVec4(1.0f, 0.35f, 0.3f, 1), "refused: %s", state.command_error.c_str());
  if (s.replay) {
    // A replay: seek and speed (docs/RECORDING.md "Replay").
    const double now_s = static_cast<double>(s.sim_time_ns) * 1e-9;
    ImGui::Text("replay at %.2gx", s.sim_rate);
    for (const double step : {-10.0, -1.0, 1.0, 10.0}) {
      ImGui::SameLine();
      const std::string label = (step > 0 ? "+" : "") + std::to_string(static_cast<int>(step)) + " s";
      if (ImGui::Button(label.c_str())) {
        actions.session = Command::kSeek;
        actions.seek_to_s = std::max(0.0, now_s + step);
      }
    }
    ImGui::SetNextItemWidth(90);
    ImGui::InputDouble("##seek", &state.seek_input_s, 0, 0, "%.1f");
    ImGui::SameLine();
    if (ImGui::Button("Seek")) {
      actions.session = Command::kSeek;
      actions.seek_to_s = state.seek_input_s;
    }
    for (const double speed : {0.25, 0.5, 1.0, 2.0, 4.0}) {
      ImGui::SameLine();
      char label[16];
      std::snprintf(label, sizeof label, "%gx", speed);
      if (ImGui::Button(label)) {
        actions.session = Command::kSpeed;
        actions.speed = speed;
      }
    }
  }
  ImGui::EndDisabled();
}

void DrawSensors(const WorldSnapshot& s, UiState& state) {
  if (!ImGui::CollapsingHeader("Sensors", ImGuiTreeNodeFlags_DefaultOpen)) return;
  ImGui::Checkbox("fused cloud", &state.show_cloud);
  ImGui::SameLine();
  int colouring = state.colour_by_source ? 1 : 0;
  ImGui::RadioButton("intensity", &colouring, 0);
  ImGui::SameLine();
  ImGui::RadioButton("source", &colouring, 1);
  state.colour_by_source = colouring == 1;
  ImGui::SameLine();
  ImGui::Checkbox("radar objects", &state.show_radar);
  ImGui::SetNextItemWidth(160);
  ImGui::SliderFloat("point size px", &state.point_size_px, 1.0f, 8.0f, "%.0f");
  ImGui::Text("%zu points, %zu radar objects drawn | %llu data messages", state.points_drawn, state.radar_drawn,
              static_cast<unsigned long long>(s.data_received));
  if (s.streams.empty()) {
    ImGui::TextDisabled("no fused, radar or lidar streams in the node table");
    return;
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("streams", 5, flags)) return;
  for (const char* h : {"stream", "kind", "address", "frames", "age s"}) ImGui::TableSetupColumn(h);
  ImGui::TableHeadersRow();
  for (const auto& st : s.streams) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(st.stream_id.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(std::string(protocol::StreamKindName(st.kind)).c_str());
    ImGui::TableNextColumn();
    if (st.connected) ImGui::TextUnformatted(st.endpoint.c_str());
    else ImGui::TextDisabled("%s", st.endpoint.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%llu", static_cast<unsigned long long>(st.frames));
    ImGui::TableNextColumn();
    if (st.age_s < 0) ImGui::TextDisabled("-");
    else if (st.age_s > 1.0) ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.2f, 1), "%.1f", st.age_s);
    else ImGui::Text("%.2f", st.age_s);
  }
  ImGui::EndTable();
}

void DrawNodes(const WorldSnapshot& s) {
  if (!ImGui::CollapsingHeader("Nodes", ImGuiTreeNodeFlags_DefaultOpen)) return;
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("nodes", 9, flags)) return;
  for (const char* h : {"id", "name", "role", "host", "offset us", "rtt us", "rate Hz", "loss %", "state"})
    ImGui::TableSetupColumn(h);
  ImGui::TableHeadersRow();
  for (const auto& n : s.nodes) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%u", n.node_id);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(n.name.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(std::string(protocol::RoleName(n.role)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(n.host.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%+.1f", static_cast<double>(n.clock_offset_ns) / 1e3);
    ImGui::TableNextColumn();
    ImGui::Text("%.0f", static_cast<double>(n.rtt_ns) / 1e3);
    ImGui::TableNextColumn();
    ImGui::Text("%.1f", static_cast<double>(n.update_rate_hz));
    ImGui::TableNextColumn();
    ImGui::Text("%.1f", 100.0 * n.loss_fraction);
    ImGui::TableNextColumn();
    const double seen_s = static_cast<double>(s.clock.now_ns - n.last_seen_ns) / 1e9;
    if (n.lost) ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "LOST %.1f s", seen_s);
    else ImGui::TextColored(ImVec4(0.3f, 0.9f, 0.3f, 1), "ok");
  }
  ImGui::EndTable();
}

std::string EntityLabelOf(const protocol::EntityState& e, const std::vector<NodeNaming>& naming) {
  char tail[64];
  std::snprintf(tail, sizeof tail, "  %-10s node %u  %5.1f m/s%s", KindName(e.kind), e.owner_node,
                e.kinematics.velocity_mps.norm(), e.stale ? "  STALE" : "");
  std::string name = EntityDisplayName(e.id, naming);
  if (name.size() < 16) name.resize(16, ' ');
  return name + tail;
}

std::vector<NodeNaming> PanelNaming(const std::vector<NodeNaming>& session_naming,
                                    const std::vector<protocol::NodeInfo>& nodes) {
  std::vector<NodeNaming> naming = session_naming;
  for (const auto& n : nodes) naming.push_back(NodeNaming{n.name, n.role == protocol::Role::kDriver, {}});
  return naming;
}

void DrawEntities(const WorldSnapshot& s, const std::vector<protocol::EntityState>& entities, UiState& state) {
  if (!ImGui::CollapsingHeader("Entities", ImGuiTreeNodeFlags_DefaultOpen)) return;
  size_t stale = 0;
  for (const auto& e : entities) stale += e.stale ? 1 : 0;
  ImGui::Text("%zu entities, %zu stale", entities.size(), stale);
  ImGui::SameLine();
  ImGui::Checkbox("stale only", &state.show_stale_only);
  const std::vector<NodeNaming> naming = PanelNaming(state.session_naming, s.nodes);
  if (ImGui::BeginListBox("##entities", ImVec2(-FLT_MIN, 6 * ImGui::GetTextLineHeightWithSpacing()))) {
    for (const auto& e : entities) {
      if (state.show_stale_only && !e.stale) continue;
      const std::string label = EntityLabelOf(e, naming);
      ImGui::PushID(static_cast<int>(e.id ^ (e.id >> 32)));
      if (ImGui::Selectable(label.c_str(), state.selected == e.id)) state.selected = e.id;
      ImGui::PopID();
    }
    ImGui::EndListBox();
  }
  // Inspector of the selected entity.
  const auto it = std::find_if(entities.begin(), entities.end(), [&](const auto& e) { return e.id == state.selected; });
  if (it == entities.end()) {
    ImGui::TextDisabled("select an entity to inspect, follow and plot it");
    return;
  }
  const auto& e = *it;
  const auto& k = e.kinematics;
  const Vec3 f = k.pose.orientation * Vec3::UnitX();
  ImGui::Text("%s: entity %llu (%s), owner node %u%s", EntityDisplayName(e.id, naming).c_str(),
              static_cast<unsigned long long>(e.id), KindName(e.kind), e.owner_node, e.stale ? ", STALE" : "");
  ImGui::Text("position  %9.2f %9.2f %6.2f m", k.pose.position_m.x(), k.pose.position_m.y(), k.pose.position_m.z());
  ImGui::Text("heading   %7.2f deg   yaw rate %+.3f rad/s", std::atan2(f.y(), f.x()) * 180.0 / M_PI,
              k.angular_velocity_radps.z());
  ImGui::Text("velocity  %6.2f %6.2f %6.2f m/s  (|v| %.2f)", k.velocity_mps.x(), k.velocity_mps.y(), k.velocity_mps.z(),
              k.velocity_mps.norm());
  ImGui::Text("accel     %6.2f %6.2f %6.2f m/s^2", k.acceleration_mps2.x(), k.acceleration_mps2.y(),
              k.acceleration_mps2.z());
  ImGui::Text("box       %.2f x %.2f x %.2f m", e.box_size_m.x(), e.box_size_m.y(), e.box_size_m.z());
  ImGui::Text("controls  steer %+.2f throttle %.2f brake %.2f", static_cast<double>(e.controls.steer),
              static_cast<double>(e.controls.throttle), static_cast<double>(e.controls.brake));
  ImGui::Text("lights    %s%s%s%s%s", e.lights.headlights ? "head " : "", e.lights.brake ? "brake " : "",
              e.lights.indicator_left ? "left " : "", e.lights.indicator_right ? "right " : "",
              e.lights.reverse ? "reverse" : "");
  if (const dr::RemoteTrack* t = s.world.Track(e.id); t && t->HasState()) {
    ImGui::Text("update    %.0f ms old, %s, %llu blends, %llu snaps", static_cast<double>(t->AgeNs(s.sim_time_ns)) / 1e6,
                t->Blending(s.sim_time_ns) ? "blending" : "on track",
                static_cast<unsigned long long>(t->Stats().blends), static_cast<unsigned long long>(t->Stats().snaps));
  }
}

void DrawPlots(UiState& state, const PlotRecorder& plots, UiActions& actions) {
  if (!ImGui::CollapsingHeader("Plots", ImGuiTreeNodeFlags_DefaultOpen)) return;
  if (ImGui::SliderFloat("rate Hz", &state.plot_rate_hz, 1.0f, 100.0f, "%.0f")) actions.plot_config_changed = true;
  if (ImGui::SliderInt("window s", &state.plot_seconds, 5, 300)) actions.plot_config_changed = true;
  for (size_t v = 0; v < state.plotted.size(); ++v) {
    ImGui::PushStyleColor(ImGuiCol_Text, kCurveColours[v % std::size(kCurveColours)]);
    ImGui::Checkbox(PlotVariableName(static_cast<PlotVariable>(v)), &state.plotted[v]);
    ImGui::PopStyleColor();
    if (v % 2 == 0 && v + 1 < state.plotted.size()) ImGui::SameLine(200);
  }
  if (plots.Entity() == 0) {
    ImGui::TextDisabled("no entity selected");
    return;
  }
  // One common scale, so overlaid curves can be compared.
  float lo = FLT_MAX, hi = -FLT_MAX;
  std::vector<std::vector<float>> curves(state.plotted.size());
  for (size_t v = 0; v < state.plotted.size(); ++v) {
    if (!state.plotted[v]) continue;
    curves[v] = plots.Buffer(static_cast<PlotVariable>(v)).Ordered();
    for (float x : curves[v]) lo = std::min(lo, x), hi = std::max(hi, x);
  }
  if (lo > hi) return;
  if (hi - lo < 1e-3f) lo -= 0.5f, hi += 0.5f;
  const ImVec2 size(ImGui::GetContentRegionAvail().x, 160.0f);
  const ImVec2 origin = ImGui::GetCursorPos();
  bool first = true;
  for (size_t v = 0; v < curves.size(); ++v) {
    if (!state.plotted[v] || curves[v].empty()) continue;
    ImGui::SetCursorPos(origin);
    ImGui::PushStyleColor(ImGuiCol_PlotLines, kCurveColours[v % std::size(kCurveColours)]);
    if (!first) ImGui::PushStyleColor(ImGuiCol_FrameBg, IM_COL32(0, 0, 0, 0));
    ImGui::PushID(static_cast<int>(v));
    ImGui::PlotLines("##curve", curves[v].data(), static_cast<int>(curves[v].size()), 0, nullptr, lo, hi, size);
    ImGui::PopID();
    ImGui::PopStyleColor(first ? 1 : 2);
    first = false;
  }
  ImGui::Text("scale %.3g .. %.3g, %zu samples at %.0f Hz", static_cast<double>(lo), static_cast<double>(hi),
              plots.Buffer(PlotVariable::kSpeed).Size(), plots.SampleRateHz());
}

}  // namespace

const char* CameraModeName(CameraMode mode) {
  switch (mode) {
    case CameraMode::kFree: return "free";
    case CameraMode::kChase: return "chase";
    case CameraMode::kTop: return "top";
  }
  return "?";
}

bool ParseCameraMode(const std::string& name, CameraMode* out) {
  for (CameraMode m : {CameraMode::kFree, CameraMode::kChase, CameraMode::kTop}) {
    if (name == CameraModeName(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

UiActions DrawPanel(UiState& state, const WorldSnapshot& snapshot, const std::vector<protocol::EntityState>& entities,
                    const PlotRecorder& plots) {
  UiActions actions;
  ImGui::SetNextWindowPos(ImVec2(8, 8), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(ImVec2(540.0f, std::min(700.0f, ImGui::GetIO().DisplaySize.y - 16.0f)), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowBgAlpha(0.85f);
  if (ImGui::Begin("platoon viewer")) {
    DrawSession(snapshot, state, actions);
    ImGui::Separator();
    int mode = static_cast<int>(state.camera);
    ImGui::Text("camera");
    for (CameraMode m : {CameraMode::kFree, CameraMode::kChase, CameraMode::kTop}) {
      ImGui::SameLine();
      if (ImGui::RadioButton(CameraModeName(m), &mode, static_cast<int>(m))) {
        actions.camera_changed = state.camera != m;
        state.camera = m;
      }
    }
    if (state.camera != CameraMode::kFree && state.selected == 0) {
      ImGui::SameLine();
      ImGui::TextDisabled("(select an entity to follow)");
    }
    DrawNodes(snapshot);
    DrawSensors(snapshot, state);
    DrawEntities(snapshot, entities, state);
    DrawPlots(state, plots, actions);
  }
  ImGui::End();
  return actions;
}

std::string EntityListLabel(const protocol::EntityState& e, const std::vector<NodeNaming>& session_naming,
                            const std::vector<protocol::NodeInfo>& nodes) {
  return EntityLabelOf(e, PanelNaming(session_naming, nodes));
}

}  // namespace platoon::viewer
