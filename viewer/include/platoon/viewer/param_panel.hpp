#pragma once
/// The viewer's parameter panel (seed 004 §3.4): every parameter of the session (server.*, node.<name>.*)
/// with a filter, and an editor for the writable ones. ParamPanelModel holds the request logic and what the
/// panel shows, without ImGui or sockets, so it can be tested; DrawParamPanel draws it into the current
/// ImGui frame and returns the requests the user asked for.

#include "platoon/protocol/messages.hpp"
#include "platoon/session/session_client.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace platoon::viewer {

/// What the parameter panel shows and which answers it waits for. Owned by the render thread.
class ParamPanelModel {
 public:
  /// Parameters kept at most (a list longer than this is cut, and says so).
  static constexpr size_t kMaxParams = 4096;

  /// A request for the whole list ("" prefix: the server and every node).
  protocol::ParamListRequest Refresh();
  /// A request to set `path` to `text` (a TOML literal); the server and the node check it.
  protocol::ParamSet Set(const std::string& path, const std::string& text);
  /// Takes one of the server's answers; answers to requests this panel did not send (or to older lists)
  /// are ignored. Returns true when it was this panel's.
  bool OnReply(const session::ControlReply& reply);

  /// The parameters whose path contains `filter` (case-sensitive; "" all), in path order.
  std::vector<const protocol::Parameter*> Filtered(const std::string& filter) const;
  /// The newest list, in path order.
  const std::vector<protocol::Parameter>& Params() const { return params_; }
  /// Nodes that did not answer the newest list ("node.<name>: why").
  const std::vector<std::string>& ListErrors() const { return list_errors_; }
  /// The outcome of the newest set: "path = value" or the server's message; empty before any.
  const std::string& Status() const { return status_; }
  /// Whether the newest set was refused.
  bool StatusIsError() const { return status_error_; }
  /// A list request is out and not answered yet.
  bool Waiting() const { return list_id_ != 0; }

 private:
  uint64_t next_id_ = 1;
  uint64_t list_id_ = 0;                 // the list request waited for; 0: none
  std::vector<uint64_t> set_ids_;        // set requests waited for (bounded)
  std::vector<protocol::Parameter> params_;
  std::vector<std::string> list_errors_;
  std::string status_;
  bool status_error_ = false;
};

/// What the user asked for in the parameter panel this frame.
struct ParamPanelActions {
  std::optional<session::ParamRequest> request;  ///< A list or set request to send.
};

/// Editing state of the panel between frames (render thread).
struct ParamPanelState {
  bool open = false;         ///< The window is shown.
  std::string filter;        ///< Path filter text.
  std::string editing_path;  ///< The parameter whose value is being edited; "": none.
  std::string edit_text;     ///< The value typed so far.
};

/// Draws the "Parameters" window (when state.open) into the current ImGui frame.
ParamPanelActions DrawParamPanel(ParamPanelState& state, ParamPanelModel& model);

}  // namespace platoon::viewer
