#pragma once
/// A platoon session log: what the channels of an MCAP recording are called and carry, and one writer
/// and one reader over platoon::mcap that every tool uses (recorder, export, replay, validate).
///
/// Channels (docs/RECORDING.md "Channels"):
///   /platoon/session        JSON, once at the start: session name, the session file's text, recorder
///   /platoon/world          Cap'n Proto Envelope(WorldState), every world state the server broadcast
///   /platoon/events         JSON, one object per session event, node event, parameter change, marker
///   /platoon/data/<id>      Cap'n Proto Envelope of data stream <id> (point_cloud, radar_scan, ...)
///   /foxglove/...           JSON in Foxglove schemas, for watching the log in Foxglove (optional)
///
/// Log time of every message is the session's sim time in ns (clamped at 0: the countdown before the
/// start is logged at 0); publish time is the server's reference time where known, else the log time.
/// The Cap'n Proto channels use schema encoding and message encoding "capnp"; the schema record holds
/// the text of shared/schema/platoon.capnp, so a log can be decoded without platoon's sources.

#include "platoon/log/mcap.hpp"
#include "platoon/protocol/messages.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::session_log {

inline constexpr std::string_view kSessionTopic = "/platoon/session";
inline constexpr std::string_view kWorldTopic = "/platoon/world";
inline constexpr std::string_view kEventsTopic = "/platoon/events";
inline constexpr std::string_view kDataTopicPrefix = "/platoon/data/";
/// Schema name of the Cap'n Proto channels: every message is one wire Envelope.
inline constexpr std::string_view kEnvelopeSchemaName = "platoon.wire.Envelope";
/// Schema and message encoding of the Cap'n Proto channels.
inline constexpr std::string_view kCapnpEncoding = "capnp";

/// "/platoon/data/<stream_id>".
std::string DataTopic(std::string_view stream_id);
/// The text of shared/schema/platoon.capnp, embedded at build time.
std::string_view EnvelopeSchemaText();
/// Log time for sim time `sim_ns`: the sim time, or 0 for negative times.
uint64_t LogTimeNs(int64_t sim_ns);

/// What /platoon/session carries, once at the start of a log, as a JSON object with these keys.
struct SessionInfo {
  std::string name;         ///< "name": the session's name.
  std::string config;       ///< "config": the session file's text (TOML), so tools can rebuild road and settings.
  std::string config_path;  ///< "config_path": where that file was when recorded.
  std::string recorder;     ///< "recorder": the recording node's name.
};
/// The JSON object of `info`.
std::string SessionInfoJson(const SessionInfo& info);
/// Parses what SessionInfoJson wrote (string fields; unknown keys ignored); nullopt when it is no object.
std::optional<SessionInfo> ParseSessionInfo(std::string_view json);
/// `text` as a JSON string literal, quotes included.
std::string JsonQuote(std::string_view text);

/// Writes a session log. Channels are created on their first message. Like mcap::Writer it never
/// throws for I/O: after the first failed write every call returns that error (naming the path).
class Writer {
 public:
  /// Creates or truncates `path`; nullptr with `error` set on failure.
  static std::unique_ptr<Writer> Open(const std::string& path, std::string* error);
  /// As Open, with a chunk layout of one's own (compression: [recorder] compression).
  static std::unique_ptr<Writer> Open(const std::string& path, std::string* error, const mcap::WriterDef& def);
  /// Writes through `sink` (tests: a sink that fails). The sink must outlive the writer.
  explicit Writer(mcap::Sink& sink);
  /// As above, with a chunk layout of one's own.
  Writer(mcap::Sink& sink, const mcap::WriterDef& def);

  /// One Cap'n Proto Envelope (as encoded on the wire) on `topic`.
  mcap::Status WriteEnvelope(std::string_view topic, std::span<const uint8_t> envelope, int64_t sim_ns,
                             int64_t publish_ns);
  /// One world state on /platoon/world, encoded as on the wire, at its sim time and server time.
  mcap::Status WriteWorld(const protocol::WorldState& world);
  /// One JSON object on `topic`; `schema_name` names its JSON schema ("" = none; Foxglove schemas such as
  /// "foxglove.SceneUpdate" are recognised by Foxglove by name) and `json_schema` is its text ("" = none).
  mcap::Status WriteJson(std::string_view topic, std::string_view schema_name, std::string_view json_schema,
                         std::string_view json, int64_t sim_ns, int64_t publish_ns);
  /// One message already encoded as `message_encoding` on `topic`, under the schema `schema_name` of
  /// `schema_encoding` with text `schema_text`; `metadata` goes into the channel record when the topic's
  /// first message makes it. ROS 2 channels: "ros2msg", "cdr", offered_qos_profiles (platoon/log/ros2_bag.hpp).
  mcap::Status WriteEncoded(std::string_view topic, std::string_view schema_name, std::string_view schema_encoding,
                            std::string_view schema_text, std::string_view message_encoding,
                            const std::map<std::string, std::string>& metadata, std::span<const uint8_t> data,
                            int64_t sim_ns, int64_t publish_ns);
  /// Closes the open chunk: everything written so far is in the file. Call on a timer (<= 100 ms).
  mcap::Status Flush();
  /// Writes the summary and footer.
  mcap::Status Close();

  /// Messages written per topic so far.
  const std::map<std::string, uint64_t, std::less<>>& TopicCounts() const { return counts_; }
  /// Counts, times and chunks so far.
  const mcap::Statistics& Stats() const { return writer_.Stats(); }
  /// Bytes in the file so far.
  uint64_t BytesWritten() const { return writer_.BytesWritten(); }
  /// The first error, or "".
  const std::string& Error() const { return writer_.Error(); }

 private:
  mcap::Status Write(std::string_view topic, uint16_t schema_id, std::string_view message_encoding,
                     std::span<const uint8_t> data, int64_t sim_ns, int64_t publish_ns,
                     const std::map<std::string, std::string>* metadata = nullptr);
  uint16_t SchemaId(std::string_view name, std::string_view encoding, std::string_view text);

  std::unique_ptr<mcap::FileSink> file_;  // when opened by path
  mcap::Writer writer_;
  std::map<std::string, uint16_t, std::less<>> schema_ids_;   // schema name -> id
  std::map<std::string, uint16_t, std::less<>> channel_ids_;  // topic -> id
  std::map<std::string, uint64_t, std::less<>> counts_;       // topic -> messages
  std::map<uint16_t, uint32_t> sequences_;                    // channel id -> last sequence
};

/// One message as read back.
struct Entry {
  std::string_view topic;
  std::string_view message_encoding;
  uint64_t log_time_ns = 0;       ///< Sim time (clamped at 0).
  uint64_t publish_time_ns = 0;
  std::span<const uint8_t> data;
};

/// Reads a session log (closed, or cut by a crash: every message before the cut), handing each message
/// to `on_entry` in file order. The result carries the problems found (none for a closed, intact file).
mcap::ReadResult Read(const std::string& path, const std::function<void(const Entry&)>& on_entry);

/// What a streaming read of a session log takes.
struct ReadOptions {
  std::vector<std::string> topics;  ///< Only these topics (empty: every topic); chunks without them are not read.
  uint64_t from_ns = 0;             ///< First log time (sim time) handed, in ns.
  uint64_t until_ns = UINT64_MAX;   ///< Last log time handed, in ns; the read stops after it.
  /// Called as the read goes on with the bytes read and the file's size (for a progress bar); may be empty.
  std::function<void(uint64_t bytes_read, uint64_t file_bytes)> progress;
};

/// Reads a session log with mcap::StreamReader: messages in log-time order (equal times: file order),
/// one chunk in memory at a time whatever the log's length, using the summary's chunk index (a log
/// cut by a crash: a forward scan, up to its last complete chunk). The result carries the summary's
/// statistics and chunk index, the channels and the problems found; `complete` is true for a closed,
/// intact log. It does not check the data-section CRC or cross-check the summary: Read does.
mcap::ReadResult ReadStream(const std::string& path, const ReadOptions& options,
                            const std::function<void(const Entry&)>& on_entry);

}  // namespace platoon::session_log
