#pragma once
/// The fusion role (seed 002 §4.2.3): lidar clouds from several sensor hosts, each on its own PC, merged
/// into one motion-compensated cloud in the ego vehicle frame. Timing model and figures: docs/FUSION.md.
///
/// Pure parts (no clock, no socket): EgoTrack (ego pose at any sim time from the world state),
/// FuseClouds (transform + motion compensation + merge) and FrameAssembler (which clouds make a frame,
/// when it is published, what is late or missing). FusionModule wires them to the node runtime.

#include "platoon/config/session.hpp"
#include "platoon/config/table.hpp"
#include "platoon/node/module.hpp"
#include "platoon/node/writer_thread.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/protocol/codec_in_place.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/sensors/point_cloud.hpp"

#include <spdlog/logger.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace platoon::node {

/// The [node.fusion] table.
struct FusionDef {
  std::vector<std::string> sources;  ///< Lidar stream ids to merge (required, 1..255).
  std::string stream_id = "fused";   ///< Id of the fused stream this node publishes.
  double period_s = 0.1;             ///< Scan period of the sources (they are phase-locked to the sim clock), in s.
  double timeout_s = 0.05;           ///< A frame waits at most this long after its first cloud arrived, in s.
  bool motion_compensation = true;   ///< Compensate every point to the reference time (false: mounting only).
  double voxel_m = 0;                ///< Voxel downsampling edge, in m (0: off).
  bool ground_removal = false;       ///< Remove ground points (grid method, docs/CLOUD_PROCESSING.md).
  bool clustering = false;           ///< Euclidean clusters -> object list, scored against ground truth.
  double cluster_tolerance_m = 0.5;  ///< Clustering distance, in m.
  std::string record_path;           ///< Fused frames are appended here (docs/FUSION.md); "" = none.
  std::string pcd_dir;               ///< PCD export directory; "" = none.
  int pcd_every = 0;                 ///< Export every n-th fused frame (and its source clouds) as PCD; 0 = never.
  bool pcd_binary = true;            ///< Binary (true) or ASCII PCD.
};

/// Reads [node.fusion]; throws config::ConfigError naming file, line and key.
FusionDef ReadFusionDef(const config::Table& t);

/// Ego pose at any sim time, from the states the world state delivered: the newest state not after
/// the time (else the oldest), extrapolated with RVB (constant twist: exact on circles).
class EgoTrack {
 public:
  /// Adds a received state (ignored unless its stamp is new). Keeps `horizon_s` of history.
  void Add(const KinematicState& state, double horizon_s = 5.0);
  bool Empty() const { return states_.empty(); }
  /// Pose at sim time `t_ns`. Precondition: !Empty().
  Pose PoseAt(int64_t t_ns) const;

 private:
  std::deque<KinematicState> states_;
};

/// One source cloud going into a frame, with its source index.
struct SourceCloud {
  const protocol::PointCloud* cloud = nullptr;
  uint8_t source = 0;
};

/// A point cloud as received: the wire bytes, its fields decoded in place (`cloud.points` stays empty)
/// and where its point blob lies inside the bytes, which are never copied (they may be the socket's own
/// buffer: ChannelDef::share_from_bytes).
struct ReceivedCloud {
  transport::SharedBytes bytes;  ///< The message as received.
  protocol::PointCloud cloud;    ///< Every field but `points` (empty).
  size_t blob_offset = 0, blob_size = 0;
  std::string_view Blob() const { return bytes.view.substr(blob_offset, blob_size); }
};

/// Decodes received bytes in place (protocol::DecodeInPlace); nullopt when they are no valid point cloud,
/// or one whose scan duration is negative or over an hour or whose stamp is beyond +-2^62 ns (so that
/// stamp + duration, the scan end, cannot overflow).
/// Bytes not 8-byte aligned (which Cap'n Proto cannot read in place) are copied once into aligned storage.
std::optional<ReceivedCloud> DecodeReceivedCloud(transport::SharedBytes bytes);

/// Motion compensation composes (F1) exactly at knots this far apart on a scan's time axis and interpolates
/// linearly between them. The rotation is then off by at most (omega * knot)^2 / 8: at 2.4 rad/s, 0.18 um per
/// metre of range, 0.02 mm at 120 m, about three floats' rounding there (docs/FUSION.md).
inline constexpr int64_t kCompensationKnotNs = 500'000;
/// A point's time offset that is not finite or beyond this (s) is taken as 0, the scan's start.
inline constexpr float kMaxTimeOffsetS = 10.0f;

/// FuseClouds for one cloud: transforms its `cloud.point_count` records of `cloud.point_stride` bytes in
/// `blob` into `out` (point_count packed records, point_record::kStride bytes each) with source index
/// `source`. Returns the points written: 0 for a malformed blob (stride below the record, too short).
uint32_t FuseCloudInto(const protocol::PointCloud& cloud, std::string_view blob, uint8_t source, int64_t reference_ns,
                       const std::function<Pose(int64_t)>& ego_pose, bool compensate, char* out);

/// Transforms every point of `clouds` into the vehicle frame at `reference_ns`. With `compensate`, a
/// point fired at t = stamp + time_offset is placed by the ego pose at t, then brought into the vehicle
/// frame at the reference time: p_V(ref) = T_WV(ref)^-1 T_WV(t) T_VS p_S. Without, p_V = T_VS p_S.
/// Poses are evaluated once per distinct firing time (one column). Points get their source index.
std::vector<sensors::CloudPoint> FuseClouds(std::span<const SourceCloud> clouds, int64_t reference_ns,
                                            const std::function<Pose(int64_t)>& ego_pose, bool compensate);

/// Fuses the clouds of a frame as they arrive, so that when the frame is due only the last cloud's share
/// is left (docs/FUSION.md, "Incremental fusion"). Each cloud is transformed once, on arrival, straight
/// from its received bytes into one output blob (packed wire records), after the groups of the clouds
/// that came before it (nothing already fused is moved; Result::groups says where each source lies), and
/// reused from frame to frame; the blob has room in front for the envelope (protocol::EncodeFusedInPlace),
/// so the fused frame goes to the socket without another copy. A cloud is compensated to its own scan end
/// on arrival; Finish re-fuses the rare cloud whose scan end (or compensation) is not the frame's, so each
/// source's group equals FuseClouds' records of that cloud, and clouds added in source order give
/// FuseClouds' frame to the bit. Pure: poses come from the caller.
class FrameFuser {
 public:
  /// One output buffer: kFusedHeadroomBytes for the envelope, then the blob. Shared with the socket while
  /// a frame in it is sent; reused once nobody else holds it.
  struct Buffer {
    std::unique_ptr<uint64_t[]> words;
    size_t blob_capacity = 0;  ///< Bytes the blob may take (a multiple of 8).
    char* Blob() { return reinterpret_cast<char*>(words.get()) + protocol::kFusedHeadroomBytes; }
  };
  /// A finished frame: `count` records at `blob` inside `buffer`, and the clouds that went into it.
  struct Result {
    std::shared_ptr<Buffer> buffer;
    char* blob = nullptr;
    uint32_t count = 0;
    std::vector<std::optional<ReceivedCloud>> clouds;  ///< Indexed like the sources.
    /// Each source's records in the blob: {first, count}; {0, 0} for a source not in the frame.
    std::vector<std::pair<uint32_t, uint32_t>> groups;
  };

  explicit FrameFuser(size_t sources);
  /// Fuses `cloud` of source `source` into the open frame (opening one when none is), replacing an earlier
  /// cloud of that source. With `compensate`, its points go to the vehicle frame at its own scan end.
  void Add(size_t source, ReceivedCloud cloud, const std::function<Pose(int64_t)>& ego_pose, bool compensate);
  /// Closes the frame with the sources where `keep[i]` (the others are taken out), all compensated to
  /// `reference_ns` (when `compensate`). The next Add opens a new frame in a buffer nobody holds.
  Result Finish(const std::vector<bool>& keep, int64_t reference_ns, const std::function<Pose(int64_t)>& ego_pose,
                bool compensate);

  /// Bytes moved: to close the gap a replaced or dropped cloud left, and to grow the buffer (first frames).
  uint64_t MovedBytes() const { return moved_bytes_; }
  /// Clouds fused a second time at Finish (scan end or compensation not the frame's).
  uint64_t Refused() const { return refused_; }
  /// Output buffers allocated so far: one per frame in flight at once (held by the socket, the record's and
  /// the PCD export's queues), at most; none while frames are let go as fast as they are made.
  uint64_t BuffersAllocated() const { return allocated_; }
  /// Output buffers pooled now: those in flight and the open one, plus at most kFreeBuffersKept free ones.
  size_t BuffersPooled() const { return pool_.size(); }

  /// Free buffers kept for the next frames; more go back to the system at the next frame.
  static constexpr size_t kFreeBuffersKept = 2;
  /// Buffers pooled at most (in flight at once beyond it, each further frame gets a buffer of its own).
  static constexpr size_t kMaxPooledBuffers = 64;

 private:
  struct Slot {
    std::optional<ReceivedCloud> cloud;
    size_t offset = 0;      // first record in the blob
    uint32_t count = 0;     // records
    int64_t fused_ref = 0;  // reference it was compensated to
    bool compensated = false;
  };
  void Open(size_t min_bytes);
  void Grow(size_t min_bytes);
  void Remove(size_t source);  // takes the source's records out, moving the later ones down

  std::vector<Slot> slots_;
  std::vector<std::shared_ptr<Buffer>> pool_;
  std::shared_ptr<Buffer> open_;
  size_t used_ = 0;             // records in the open blob
  size_t last_frame_bytes_ = 0;
  uint64_t moved_bytes_ = 0, refused_ = 0, allocated_ = 0;
};

/// Decides which clouds form a frame and when it is published (docs/FUSION.md, "Timing model").
class FrameAssembler {
 public:
  /// `period_ns`: the lidars' scan period (stale rule); `timeout_ns`: wait after a frame's first cloud.
  FrameAssembler(std::vector<std::string> sources, int64_t period_ns, int64_t timeout_ns);

  /// A cloud arrived at sim time `now_ns`. Returns false (and counts it) when it is stale: older than
  /// the last frame's reference minus one period, or not newer than the last cloud used from its source.
  bool Offer(protocol::PointCloud cloud, int64_t now_ns);
  /// Whether a frame is due at `now_ns`: every source has a cloud, or the timeout ran out.
  bool Due(int64_t now_ns) const;
  /// The frame's clouds (nullopt where missing) and per-source metadata; resets for the next frame.
  struct Frame {
    std::vector<std::optional<protocol::PointCloud>> clouds;  ///< Indexed like sources.
    std::vector<protocol::FusedSource> meta;
    int64_t reference_ns = 0;   ///< Latest scan end of the clouds in the frame.
    int64_t opened_ns = 0;      ///< When its first cloud arrived.
  };
  Frame Take();

  const std::vector<std::string>& Sources() const { return sources_; }
  int SourceIndex(const std::string& sensor_id) const;
  uint64_t Stale() const { return stale_; }
  uint64_t Replaced() const { return replaced_; }

 private:
  std::vector<std::string> sources_;
  int64_t period_ns_, timeout_ns_;
  std::vector<std::optional<protocol::PointCloud>> pending_;
  std::vector<int64_t> last_used_stamp_;
  std::vector<bool> late_since_last_;
  int64_t opened_ns_ = -1;
  int64_t last_reference_ns_ = INT64_MIN;
  uint64_t stale_ = 0, replaced_ = 0;
};

/// Writes fused frames to a record: a session log (MCAP, docs/RECORDING.md) with the frames on
/// /platoon/data/<fusion stream id> at their reference time, each frame closing its own CRC-checked chunk,
/// so a crash loses at most the frame being written and a damaged chunk costs only its frame. A record is
/// never appended to or truncated: when `path` exists (a restarted fusion node), the next free
/// `<stem>.1<ext>`, `<stem>.2<ext>`, ... is written instead (Path()). A failed write (a full disk) stops the
/// recorder with Error() naming the path and the reason; it never throws after the file is open.
class FusedRecorder {
 public:
  /// Throws std::runtime_error naming the path when no record can be created there.
  explicit FusedRecorder(const std::string& path);
  /// Writes through `sink` instead of a file (tests: a disk that fills up).
  explicit FusedRecorder(mcap::Sink& sink);
  ~FusedRecorder();
  /// Writes one frame; false once the recorder has stopped after a write error.
  bool Write(const protocol::FusedCloud& frame);
  /// Writes one frame already encoded (`wire`, a FusedCloud of stream `stream_id` at `reference_ns`).
  bool WriteEncoded(std::string_view wire, const std::string& stream_id, int64_t reference_ns);
  /// Frames written.
  uint64_t Frames() const { return frames_; }
  /// The file written (the path asked for, or the next free numbered one).
  const std::string& Path() const { return path_; }
  /// The first write error ("" while healthy), naming the path.
  const std::string& Error() const { return writer_->Error(); }

 private:
  std::string path_;
  std::unique_ptr<session_log::Writer> writer_;
  uint64_t frames_ = 0;
};

/// A FusedRecorder on a WriterThread, so that a slow disk never holds up fusion: Push queues an encoded
/// frame (its bytes stay where they are, kept alive by `owner`) and returns at once; the thread writes the
/// frames in order. Past `max_bytes` queued (the disk has stalled for several frames) a frame is left out of
/// the record and counted (Dropped); a frame larger than the whole queue goes in alone. A write error (or an
/// exception: out of memory) stops the record as in FusedRecorder. Frames, Dropped, Error and PeakBytes may
/// be read from any thread. The queue counts the frames' wire bytes; the buffers they are kept in are
/// somewhat larger. The FrameFuser pools a buffer for every frame the queue holds, so a full queue costs no
/// allocation per frame, and lets the spare ones go once the queue is written.
class FusedRecordThread {
 public:
  /// The queue of a fusion node's record: about 20 frames of four HDL-64E scans (2 s at 10 Hz).
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;
  /// How long Finish waits at exit for the queue to be written.
  static constexpr std::chrono::milliseconds kCloseWait = WriterThread::kCloseWait;
  explicit FusedRecordThread(std::unique_ptr<FusedRecorder> recorder, size_t max_bytes = kDefaultMaxBytes);
  /// Finish(kCloseWait), then closes the record (waiting only for the frame being written).
  ~FusedRecordThread();
  FusedRecordThread(const FusedRecordThread&) = delete;
  FusedRecordThread& operator=(const FusedRecordThread&) = delete;
  /// Queues one encoded frame; false when it is left out (queue full, or the record has stopped).
  bool Push(std::string_view wire, std::shared_ptr<const void> owner, const std::string& stream_id, int64_t reference_ns);
  /// Waits until every queued frame is written or `timeout` passes; true when none is left.
  bool WaitWritten(std::chrono::milliseconds timeout) const { return writer_.WaitWritten(timeout); }
  /// WaitWritten(timeout); the frames still queued then (a stalled disk) are left out and counted as
  /// Dropped. False when some were.
  bool Finish(std::chrono::milliseconds timeout) { return writer_.Finish(timeout); }
  uint64_t Frames() const { return writer_.Done(); }        ///< Frames written.
  uint64_t Dropped() const { return writer_.Dropped(); }    ///< Frames left out because the queue was full.
  size_t PeakBytes() const { return writer_.PeakBytes(); }  ///< Most bytes ever queued at once.
  std::string Error() const { return writer_.Error(); }     ///< The first write error ("" while healthy), naming the path.
  const std::string& Path() const { return path_; }

 private:
  std::unique_ptr<FusedRecorder> recorder_;  // used by the writer's thread only
  const std::string path_;
  WriterThread writer_;  // declared last: stopped (and joined) before the record closes
};

/// Reads the fused frames of a record (a session log; every topic's fused clouds, in file order). A cut
/// file gives every frame before the cut (`truncated` true); a damaged chunk is skipped and named in
/// `problems`. Throws std::runtime_error naming the file when it is no readable record at all.
std::vector<protocol::FusedCloud> ReadFusedRecord(const std::string& path, bool* truncated = nullptr,
                                                  std::vector<std::string>* problems = nullptr);

/// Lock-step: scan end of the newest cloud that a source measuring at whole multiples of `period_ns`
/// (phase lock) has finished at or before sim time `t_ns`, i.e. floor(t / period) * period, in ns.
/// A cloud finished at step t carries stamp_ns = t - duration_ns, so its scan end is t.
int64_t LastScanEndNs(int64_t t_ns, int64_t period_ns);

/// The fusion node's module: subscribes to the sources, follows the ego, assembles, fuses, publishes.
/// In lock-step (ModuleContext::StepNs() > 0) a step does not end while a live source's cloud measured
/// at or before the previous step is still in flight; the wait is bounded in wall time (docs/FUSION.md).
class FusionModule final : public Module {
 public:
  /// The PCD export's queue (pcd_every > 0): about ten frames of four HDL-64E scans.
  static constexpr size_t kPcdQueueBytes = size_t{256} << 20;
  FusionModule(const config::SessionDef& session, const config::NodeDef& node, std::shared_ptr<spdlog::logger> log);
  ~FusionModule() override;
  std::string Name() const override { return "fusion"; }
  double RateHz() const override { return 1000.0; }
  void Step(const StepInfo& info, ModuleContext& context) override;
  std::vector<protocol::DataEndpoint> Streams() const override;
  void Summarize(std::vector<std::string>& fields) const override;

 private:
  // What lock-step knows of one source.
  struct LockstepSource {
    int64_t period_ns = 0;            // measurement period, from the source's [[node.sensor]] (else period_s)
    int64_t last_end_ns = INT64_MIN;  // newest scan end received from it
    bool gave_up = false;             // its due cloud missed the wall deadline: not awaited until one arrives
  };

  void Publish(FrameAssembler::Frame frame, int64_t now_ns, ModuleContext& context);
  // Decodes a received message in place and counts it; nullopt (counted as bad input) when it is no cloud.
  std::optional<ReceivedCloud> DecodeCloud(transport::SharedBytes bytes);
  // Offers a cloud to the assembler and, when taken, fuses it into the open frame at once.
  void OfferCloud(ReceivedCloud cloud, int64_t now_ns);
  void StepLockstep(const StepInfo& info, int64_t step_ns, ModuleContext& context);
  // Lock-step: notes a received cloud; due at this step when its scan ended by `due_until_ns`, else held back.
  void AcceptLockstep(transport::SharedBytes bytes, int64_t due_until_ns);
  // Lock-step: indices of live sources whose cloud with scan end <= `due_until_ns` has not arrived.
  std::vector<int> MissingDue(const std::vector<const protocol::NodeInfo*>& hosts, int64_t due_until_ns,
                              int64_t step_ns) const;

  struct Stats;
  std::shared_ptr<spdlog::logger> log_;
  FusionDef def_;
  uint64_t ego_id_;
  EgoTrack ego_;
  std::unique_ptr<FrameAssembler> assembler_;
  std::unique_ptr<FrameFuser> fuser_;
  double frame_fuse_ms_ = 0;  // fusing the open frame's clouds on arrival, so far
  double step_fuse_ms_ = 0;   // of which in this step (after its sim time was taken)
  std::unique_ptr<FusedRecordThread> recorder_;
  bool record_failed_ = false;  // the record stopped after a write error (logged once)
  uint64_t record_dropped_logged_ = 0;  // frames left out of the record (queue full) when last logged
  std::unique_ptr<WriterThread> pcd_writer_;  // the PCD export (pcd_every > 0), on its own thread
  mutable bool pcd_failed_ = false;           // the PCD export stopped after an error (logged once)
  std::string pcd_error_;                     // ... on this thread (out of memory), not the writer's
  uint64_t pcd_dropped_logged_ = 0;           // frames left out of the PCD export (queue full) when last logged
  std::unique_ptr<Stats> stats_;
  bool subscribed_ = false;
  uint64_t sequence_ = 0;
  int last_ok_ = -1;
  std::vector<sensors::TruthObject> truth_;  // static scene boxes, for scoring clusters
  // Lock-step state.
  std::vector<LockstepSource> lockstep_;                          // indexed like def_.sources
  std::vector<ReceivedCloud> held_;                               // arrived before they were due, in arrival order
  std::vector<ReceivedCloud> due_;                                // lock-step: due at this step, offered in source order
  std::map<std::pair<uint32_t, uint32_t>, int64_t> host_seen_ns_;  // (node id, pid) -> sim time first seen in the table
  int64_t ego_since_ns_ = INT64_MAX;                              // sim time the ego was first in the world
  int64_t wait_budget_ns_ = 0;                                    // longest wall wait per step for due clouds
};

}  // namespace platoon::node
