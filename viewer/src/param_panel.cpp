#include "platoon/viewer/param_panel.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace platoon::viewer {
namespace {

// Set requests waited for at most (older ones are forgotten: their answers are then ignored).
constexpr size_t kMaxPendingSets = 16;

// A std::string edited through an ImGui text field of bounded length.
bool InputString(const char* label, std::string& text, ImGuiInputTextFlags flags = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s", text.c_str());
  const bool entered = ImGui::InputText(label, buf, sizeof buf, flags);
  text = buf;
  return entered;
}

std::string RangeText(const protocol::Parameter& p) {
  if (!std::isfinite(p.min) && !std::isfinite(p.max)) return p.unit;
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%g, %g] %s", p.min, p.max, p.unit.c_str());
  return buf;
}

}  // namespace

protocol::ParamListRequest ParamPanelModel::Refresh() {
  list_id_ = next_id_++;
  return protocol::ParamListRequest{"", list_id_};
}

protocol::ParamSet ParamPanelModel::Set(const std::string& path, const std::string& text) {
  const uint64_t id = next_id_++;
  if (set_ids_.size() >= kMaxPendingSets) set_ids_.erase(set_ids_.begin());
  set_ids_.push_back(id);
  return protocol::ParamSet{path, text, id};
}

bool ParamPanelModel::OnReply(const session::ControlReply& reply) {
  if (const auto* list = std::get_if<protocol::ParamList>(&reply)) {
    if (list_id_ == 0 || list->request_id != list_id_) return false;
    list_id_ = 0;
    params_ = list->params;
    std::sort(params_.begin(), params_.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    list_errors_ = list->errors;
    if (params_.size() > kMaxParams) {
      list_errors_.push_back("list cut at " + std::to_string(kMaxParams) + " of " + std::to_string(params_.size()));
      params_.resize(kMaxParams);
    }
    return true;
  }
  const auto* set = std::get_if<protocol::ParamReply>(&reply);
  if (!set) return false;
  const auto it = std::find(set_ids_.begin(), set_ids_.end(), set->request_id);
  if (it == set_ids_.end()) return false;
  set_ids_.erase(it);
  status_error_ = !set->ok;
  status_ = set->ok ? set->param.path + " = " + set->param.value : set->error;
  // The accepted value shows at once; a refused one leaves the list as it was.
  if (set->ok)
    for (auto& p : params_)
      if (p.path == set->param.path) p.value = set->param.value;
  return true;
}

std::vector<const protocol::Parameter*> ParamPanelModel::Filtered(const std::string& filter) const {
  std::vector<const protocol::Parameter*> out;
  for (const auto& p : params_)
    if (filter.empty() || p.path.find(filter) != std::string::npos) out.push_back(&p);
  return out;
}

ParamPanelActions DrawParamPanel(ParamPanelState& state, ParamPanelModel& model) {
  ParamPanelActions actions;
  if (!state.open) return actions;
  ImGui::SetNextWindowSize(ImVec2(620, 420), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Parameters", &state.open)) {
    ImGui::End();
    return actions;
  }
  // The first open asks for the list; Refresh asks again.
  if ((model.Params().empty() && !model.Waiting()) || ImGui::Button("Refresh")) actions.request = model.Refresh();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(240);
  InputString("filter", state.filter);
  if (model.Waiting()) {
    ImGui::SameLine();
    ImGui::TextDisabled("waiting for the list...");
  }
  for (const auto& e : model.ListErrors()) ImGui::TextColored(ImVec4(1, 0.6f, 0.2f, 1), "%s", e.c_str());
  if (!model.Status().empty())
    ImGui::TextColored(model.StatusIsError() ? ImVec4(1, 0.35f, 0.35f, 1) : ImVec4(0.5f, 1, 0.5f, 1), "%s",
                       model.Status().c_str());

  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_Resizable;
  if (ImGui::BeginTable("params", 4, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("path");
    ImGui::TableSetupColumn("value");
    ImGui::TableSetupColumn("range");
    ImGui::TableSetupColumn("description");
    ImGui::TableHeadersRow();
    for (const protocol::Parameter* p : model.Filtered(state.filter)) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(p->path.c_str());
      ImGui::TableNextColumn();
      ImGui::PushID(p->path.c_str());
      if (state.editing_path == p->path) {
        // Enter sets the value; Escape (or another row) drops the edit.
        ImGui::SetNextItemWidth(-1);
        if (InputString("##value", state.edit_text, ImGuiInputTextFlags_EnterReturnsTrue)) {
          actions.request = model.Set(p->path, state.edit_text);
          state.editing_path.clear();
        } else if (ImGui::IsKeyPressed(ImGuiKey_Escape)) {
          state.editing_path.clear();
        }
      } else if (p->writable) {
        if (ImGui::SmallButton(p->value.c_str())) {
          state.editing_path = p->path;
          state.edit_text = p->value;
        }
      } else {
        ImGui::TextDisabled("%s", p->value.c_str());
      }
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(RangeText(*p).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(p->description.c_str());
    }
    ImGui::EndTable();
  }
  ImGui::End();
  return actions;
}

}  // namespace platoon::viewer
