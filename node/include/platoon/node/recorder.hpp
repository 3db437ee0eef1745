#pragma once
/// The recorder role: writes the session to an MCAP session log (docs/RECORDING.md, "The recorder role").
/// It records every world-state broadcast as received (raw envelope bytes), the session file once, the
/// session and node events derived from the world states, the data streams named in its config, and
/// Foxglove channels (scene, transforms, point clouds) at a modest rate, and with `ros2 = true` the ROS 2
/// channels (platoon/log/ros2_bag.hpp: the mapping `platoon export --ros2` uses) and, at the end, a
/// rosbag2 metadata.yaml beside the file.
///
/// Threads: the network thread hands each world-state broadcast to the world tap, which only copies it
/// into a bounded RecordQueue; the module step (module thread, or the network thread in lock-step)
/// moves received data-stream messages into the same queue. A writer thread of its own drains the queue
/// into the RecordingWriter and closes the open chunk every flush interval (50 ms) of wall time, so a
/// kill -9 loses at most that much, and nothing that receives ever waits on the disk. A full queue drops
/// (and counts) instead of waiting. On the first write error the recorder logs one error naming the file
/// and the reason, stops recording, leaves what it wrote readable and stays in the session.

#include "platoon/config/session.hpp"
#include "platoon/log/foxglove.hpp"
#include "platoon/log/mcap.hpp"
#include "platoon/log/ros2_bag.hpp"
#include "platoon/log/session_events.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/node/module.hpp"

#include <spdlog/logger.h>

#include <atomic>
#include <condition_variable>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace platoon::node {

/// One received message waiting to be written.
struct RecordItem {
  enum class Kind : uint8_t { kWorld, kData };
  Kind kind = Kind::kWorld;
  std::string bytes;          ///< The envelope as received.
  int64_t received_ns = 0;    ///< CLOCK_MONOTONIC when it was received, in ns (flush latency).
};

/// A bounded FIFO between the receiving threads and the writer thread. Push never waits for the
/// writer (it takes one short lock); past `max_bytes` queued it drops the item and counts it.
class RecordQueue {
 public:
  /// `max_bytes`: the most message bytes held at once. Typical 128 MiB.
  explicit RecordQueue(size_t max_bytes) : max_bytes_(max_bytes) {}
  /// Queues `item`; false when it was dropped (queue full, or closed).
  bool Push(RecordItem item);
  /// Waits until something is queued, `deadline` passes or the queue is closed; then moves every
  /// queued item into `out` (appended). Returns false once the queue is closed and empty.
  bool PopAll(std::vector<RecordItem>& out, std::chrono::steady_clock::time_point deadline);
  /// No more pushes; PopAll returns what is left, then false.
  void Close();
  uint64_t Dropped() const { return dropped_.load(); }           ///< Items dropped because the queue was full.
  uint64_t DroppedBytes() const { return dropped_bytes_.load(); } ///< Their bytes.
  size_t PeakBytes() const;                                        ///< Most bytes ever queued at once.

 private:
  size_t max_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RecordItem> items_;
  size_t bytes_ = 0, peak_bytes_ = 0;
  bool closed_ = false;
  std::atomic<uint64_t> dropped_{0}, dropped_bytes_{0};
};

/// What a recording did (the recorder's SUMMARY fields).
struct RecorderStats {
  uint64_t world_recorded = 0;     ///< World states written to /platoon/world.
  uint64_t world_seq_gaps = 0;     ///< Times the world-state sequence jumped forward (states the recorder never received).
  uint64_t world_seq_missing = 0;  ///< World states missing in those jumps.
  uint64_t world_seq_resets = 0;   ///< Times the sequence went back (a restarted server).
  uint64_t data_recorded = 0;      ///< Data-stream messages written.
  uint64_t data_ignored = 0;       ///< Data messages of streams not chosen (same publisher socket), not written.
  uint64_t undecodable = 0;        ///< Received bytes that did not decode; not written.
  uint64_t not_written = 0;        ///< Messages received after a write error.
  uint64_t flushes = 0;            ///< Flush-timer firings that closed a chunk.
  std::vector<int64_t> flush_latency_ns;  ///< Per flush: receive of the oldest message in it -> in the file, in ns.
  uint64_t foxglove_messages = 0;  ///< Foxglove (JSON) messages written.
  uint64_t foxglove_bytes = 0;     ///< Their payload bytes.
  int64_t foxglove_cpu_ns = 0;     ///< Writer-thread CPU time making and writing them, in ns.
  uint64_t ros2_messages = 0;      ///< ROS 2 (CDR) messages written.
  uint64_t ros2_bytes = 0;         ///< Their payload bytes.
  int64_t ros2_cpu_ns = 0;         ///< Writer-thread CPU time converting and writing them, in ns.
};

/// The recorder's core, apart from threads and sockets: handed received messages (and the time),
/// it writes the session log. Tests drive it directly.
class RecordingWriter {
 public:
  /// Writes through `writer`; `path` names the file in messages. `def` is the node's RecorderDef;
  /// `naming` how the session names its vehicles (config::SessionNaming), for the ROS 2 frames and topics.
  RecordingWriter(const config::RecorderDef& def, std::unique_ptr<session_log::Writer> writer, std::string path,
                  std::shared_ptr<spdlog::logger> log, std::vector<NodeNaming> naming = {});

  /// The /platoon/session message (session name, session file text and path, recorder name), once, first.
  void Begin(const session_log::SessionInfo& info);
  /// Writes one received message: a world state (and the events and Foxglove messages it leads to),
  /// or a data-stream message (when its stream is chosen; and its Foxglove cloud).
  void Write(const RecordItem& item);
  /// Closes the open chunk when `now_ns` (CLOCK_MONOTONIC) reached the next flush instant: a timer every
  /// `flush_interval_ns` of wall time from the first call, whether messages arrive or not. True when
  /// it closed a chunk (there was something to write).
  bool FlushDue(int64_t now_ns);
  /// When FlushDue is next due, in ns (one interval after `now_ns` before the first call).
  int64_t NextFlushNs(int64_t now_ns) const;
  /// Writes the summary and the footer (nothing after a write error).
  void Finish();

  /// Streams to record: the config's ids (all when it said "*").
  bool Wants(std::string_view stream_id) const;
  bool Failed() const { return !error_.empty(); }
  /// The first write error ("" while healthy), naming the file and the reason.
  const std::string& Error() const { return error_; }
  const RecorderStats& Stats() const { return stats_; }
  const session_log::Writer& Log() const { return *writer_; }
  const std::string& Path() const { return path_; }
  /// The ROS 2 channels written so far (ros2 = true; empty otherwise), for metadata.yaml.
  const ros2::BagTally& Ros2Tally() const { return ros2_tally_; }
  /// Interval of the flush timer, in ns. Default 50 ms: half the 100 ms crash-loss bound.
  int64_t flush_interval_ns = 50'000'000;

 private:
  void WriteWorld(const RecordItem& item, const protocol::WorldState& w);
  void WriteData(const RecordItem& item, const protocol::Message& m);
  void WriteFoxgloveScene(const protocol::WorldState& w);
  void WriteRos2(const protocol::Message* data, const protocol::WorldState* world);
  void WriteFoxgloveCloud(const std::string& id, int64_t stamp_ns, const protocol::Message& m);
  void Check(const mcap::Status& status);

  config::RecorderDef def_;
  std::unique_ptr<session_log::Writer> writer_;
  std::string path_;
  std::shared_ptr<spdlog::logger> log_;
  std::string error_;
  RecorderStats stats_;
  session_log::EventDeriver events_;
  // The merged world as the broadcasts carry it, for the Foxglove scene.
  std::map<uint64_t, protocol::EntityState> entities_;
  std::map<uint32_t, protocol::NodeInfo> nodes_;
  bool seq_known_ = false;
  uint64_t last_seq_ = 0;
  int64_t scene_slot_ = INT64_MIN;     // sim time / transforms period of the last transforms
  int64_t scene_second_ = INT64_MIN;   // sim second of the last scene update
  std::vector<foxglove::SceneEntity> scene_look_;  // what the last scene update showed
  std::map<std::string, int64_t, std::less<>> cloud_slot_;  // stream id -> last Foxglove cloud slot
  std::unique_ptr<ros2::Converter> ros2_;            // ros2 = true
  ros2::BagTally ros2_tally_;
  std::vector<ros2::BagMessage> ros2_out_;
  std::map<std::string, std::string, std::less<>> ros2_definitions_;  // type -> its full ros2msg text
  int64_t next_flush_ns_ = -1;        // -1: nothing written since the last flush
  int64_t oldest_unflushed_ns_ = -1;  // receive time of the oldest message not yet in the file
};

/// The recorder role's module (role "recorder"). Owns the RecordingWriter and its writer thread.
class RecorderModule final : public Module {
 public:
  /// Opens the file from the node's RecorderDef (placeholders replaced, parent folder created). Throws
  /// config::ConfigError when the file exists and overwrite is false, std::runtime_error when it
  /// cannot be created.
  RecorderModule(const config::SessionDef& session, const config::NodeDef& node, std::shared_ptr<spdlog::logger> log);
  /// Tests: writes through `sink` (which must outlive the module) instead of a file.
  RecorderModule(const config::SessionDef& session, const config::NodeDef& node, std::shared_ptr<spdlog::logger> log,
                 mcap::Sink& sink);
  ~RecorderModule() override;

  std::string Name() const override { return "recorder"; }
  /// How often received data messages are moved to the writer, in Hz. 100.
  double RateHz() const override { return 100.0; }
  /// Starts the writer thread and installs the world tap.
  void Attach(ModuleContext& context) override;
  /// Follows the chosen streams in the node table and queues every data message received.
  void Step(const StepInfo& info, ModuleContext& context) override;
  /// Removes the tap, writes what is queued and closes the file.
  void Detach(ModuleContext& context) override;
  void Summarize(std::vector<std::string>& fields) const override;

  /// The world tap (public for tests): queues one world-state broadcast.
  void OnWorldBroadcast(std::string_view bytes);
  /// Stops the writer thread after it wrote everything queued, and closes the file (idempotent).
  void Stop();
  /// The file being written.
  const std::string& Path() const { return path_; }
  /// The core (read it after Stop()).
  const RecordingWriter& Writer() const { return *core_; }
  /// Messages dropped because the queue was full.
  uint64_t Dropped() const { return queue_.Dropped(); }

 private:
  struct Opened {
    std::unique_ptr<session_log::Writer> writer;
    std::string path;
  };
  static Opened Open(const config::SessionDef& session, const config::NodeDef& node);
  RecorderModule(const config::SessionDef& session, const config::NodeDef& node, std::shared_ptr<spdlog::logger> log,
                 Opened opened);
  void Run();
  void WriteRos2Metadata();
  static int64_t NowNs();

  config::RecorderDef def_;
  std::string path_;
  std::shared_ptr<spdlog::logger> log_;
  session_log::SessionInfo info_;
  std::unique_ptr<RecordingWriter> core_;
  RecordQueue queue_;
  std::thread writer_thread_;
  std::atomic<bool> failed_{false};
  bool stopped_ = false;
  bool to_file_ = true;  // false: writing through a test's sink (no metadata.yaml)
  std::vector<std::string> subscribed_;
  int64_t next_resolve_ns_ = 0;
  int64_t started_ns_ = 0, stopped_ns_ = 0;
  int64_t flush_call_max_ns_ = 0;  // longest Flush() call (writing the chunk), ns
  double writer_cpu_s_ = 0;
};

}  // namespace platoon::node
