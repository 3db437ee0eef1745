#pragma once
// The Foxglove WebSocket protocol (subprotocol foxglove.websocket.v1) of `platoon bridge`, with no I/O:
// handed a client's text operations and the session's parameter answers, it returns the text replies to
// send and the parameter requests to forward to the server. The shell (bridge_cmd.cpp) owns the sockets.
// Written from the protocol's public specification; see docs/FOXGLOVE.md.
#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace platoon::bridge {

/// The WebSocket subprotocol the bridge speaks.
inline constexpr std::string_view kSubprotocol = "foxglove.websocket.v1";
/// Binary opcodes, server to client.
inline constexpr uint8_t kOpMessageData = 0x01;
inline constexpr uint8_t kOpTime = 0x02;
/// Status levels.
inline constexpr int kInfo = 0, kWarning = 1, kError = 2;

/// A parsed JSON value (RFC 8259): what a client's text operation holds.
struct JsonValue {
  enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;                                      ///< kString.
  std::vector<JsonValue> items;                          ///< kArray.
  std::vector<std::pair<std::string, JsonValue>> fields; ///< kObject, in document order.
  /// The field `key` of an object, or nullptr.
  const JsonValue* Find(std::string_view key) const;
};

/// Parses `text` as one JSON value; nullopt with `error` ("at byte N: expected ..., got ...") otherwise.
/// Nesting deeper than 64 is refused.
std::optional<JsonValue> ParseJson(std::string_view text, std::string& error);

/// A channel the bridge advertises.
struct ChannelSpec {
  std::string topic;                          ///< e.g. "/foxglove/scene".
  std::string schema_name;                    ///< e.g. "foxglove.SceneUpdate".
  std::string schema;                         ///< JSON schema text.
  std::string encoding = "json";              ///< Message encoding.
  std::string schema_encoding = "jsonschema"; ///< Schema encoding.
  bool operator==(const ChannelSpec&) const = default;
};

/// A client connection, numbered by the shell.
using ConnId = uint64_t;

/// A text message for one client.
struct TextOut {
  ConnId conn = 0;
  std::string text;
};

/// A parameter request for the session's server, numbered so that its answer finds the asker.
struct ParamAsk {
  uint64_t request_id = 0;
  std::variant<protocol::ParamListRequest, protocol::ParamGet, protocol::ParamSet> request;
};

/// A subscription just made: the shell may send the channel's latest message to it at once.
struct Subscribed {
  ConnId conn = 0;
  uint32_t subscription_id = 0;
  uint32_t channel_id = 0;
};

/// What a call asks the shell to do.
struct Effects {
  std::vector<TextOut> texts;
  std::vector<ParamAsk> asks;
  std::vector<Subscribed> subscribed;
};

/// One subscriber of a channel.
struct Target {
  ConnId conn = 0;
  uint32_t subscription_id = 0;
};

/// The protocol state of a bridge: its channels, and per client its subscriptions, parameter
/// subscriptions and parameter requests in flight. Single-threaded.
class BridgeCore {
 public:
  /// `name`: the serverInfo name; `session_id`: changes when the bridge restarts (a start time).
  BridgeCore(std::string name, std::string session_id);

  /// A client connected: serverInfo, then the advertisement of every channel.
  Effects Open(ConnId conn);
  /// A client left: its subscriptions and requests are forgotten.
  void Close(ConnId conn);
  /// A client's text message (one JSON operation). Malformed or unknown operations get a status message.
  Effects OnText(ConnId conn, std::string_view text);
  /// A client's binary message: the bridge takes no client publishing, so a status warning.
  Effects OnBinary(ConnId conn);
  /// The server's answer to a ParamAsk (matched by request_id; others are ignored).
  Effects OnParamList(const protocol::ParamList& list);
  Effects OnParamReply(const protocol::ParamReply& reply);
  /// A parameter changed in the session (a logged parameter event "path = value"): parameterValues to
  /// the clients subscribed to its updates.
  Effects OnParamChanged(const std::string& path, const std::string& toml_value);
  /// Replaces the channel set: new topics are advertised to every client, gone ones unadvertised (their
  /// subscriptions end); a topic whose spec changed is unadvertised and advertised under a new id.
  Effects SetChannels(const std::vector<ChannelSpec>& specs);

  /// Subscribers of channel `channel_id`.
  std::vector<Target> Subscribers(uint32_t channel_id) const;
  /// The channel id of `topic`, if advertised.
  std::optional<uint32_t> ChannelOf(std::string_view topic) const;
  /// Parameter requests waiting for the server's answer.
  size_t PendingParams() const { return pending_.size(); }
  /// Open connections.
  size_t Connections() const { return conns_.size(); }

 private:
  struct Conn {
    std::map<uint32_t, uint32_t> subscriptions;  // subscription id -> channel id
    std::set<std::string> param_updates;          // parameter paths subscribed to
    bool all_param_updates = false;
  };
  // The requests of one getParameters or setParameters, answered together.
  struct Group {
    ConnId conn = 0;
    std::optional<std::string> id;  // the client's request id
    bool set = false;
    size_t waiting = 0;
    std::vector<protocol::Parameter> values;
    std::vector<std::string> errors;
  };
  Effects Subscribe(ConnId conn, Conn& c, const JsonValue& op);
  Effects Unsubscribe(ConnId conn, Conn& c, const JsonValue& op);
  Effects GetParameters(ConnId conn, const JsonValue& op);
  Effects SetParameters(ConnId conn, const JsonValue& op);
  Effects ParamUpdates(ConnId conn, Conn& c, const JsonValue& op, bool subscribe);
  std::string AdvertiseJson(const std::vector<uint32_t>& ids) const;
  // Records one answer of group `g`; sends the group's reply when it was the last.
  Effects Answered(uint64_t request_id, const protocol::Parameter* value, const std::string& error,
                   const std::vector<protocol::Parameter>* list);

  std::string name_, session_id_;
  std::map<uint32_t, ChannelSpec> channels_;
  uint32_t next_channel_ = 1;
  std::map<ConnId, Conn> conns_;
  std::map<uint64_t, uint64_t> pending_;  // request id -> group
  std::map<uint64_t, Group> groups_;
  uint64_t next_request_ = 1, next_group_ = 1;
};

/// {"op":"status","level":L,"message":...}.
std::string StatusJson(int level, std::string_view message);
/// Binary Message Data: opcode 0x01, subscription id (uint32 LE), log time (uint64 LE ns), payload.
std::string MessageDataFrame(uint32_t subscription_id, uint64_t log_time_ns, std::string_view payload);
/// Binary Time: opcode 0x02, timestamp (uint64 LE ns).
std::string TimeFrame(uint64_t time_ns);
/// A platoon parameter value (TOML literal) as a JSON value for parameterValues: booleans and finite
/// numbers as such, strings unquoted to JSON strings; `type` ("bool", "int", "float", "string", "") helps.
std::string ParamValueJson(std::string_view toml_value, std::string_view type);
/// A protocol parameter value as the TOML literal ParamSet carries; nullopt with `error` for what
/// platoon parameters cannot hold (arrays, objects, null).
std::optional<std::string> TomlLiteralOf(const JsonValue& value, std::string& error);
/// Compares a presented token with the expected one in time that depends only on their lengths.
bool TokenMatches(std::string_view presented, std::string_view expected);
/// The value of query parameter `key` in a request target such as "/?token=abc" (percent-decoded);
/// nullopt when absent.
std::optional<std::string> QueryValue(std::string_view resource, std::string_view key);

}  // namespace platoon::bridge
