#pragma once
/// The driver seat's eye tracker (docs/INPUTS.md "Eye tracker"): a thread receives Pupil Core's gaze
/// (input::PupilGazeClient) and hands each sample to the module thread through a bounded queue; the module
/// thread stamps it with the session's synced sim time at the step that takes it, maps it to what the
/// driver looks at (input::GazeTarget: a vehicle, a mirror, or nothing) and queues a row; the same thread
/// writes the rows to a CSV. The module thread never blocks, locks or touches the file.

#include "platoon/data/spsc_queue.hpp"
#include "platoon/input/gaze_target.hpp"
#include "platoon/input/pupil_gaze.hpp"

#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace platoon::node {

/// What a GazeRecorder connects to, how it maps and where it writes.
struct GazeRecorderDef {
  input::PupilGazeDef pupil;                  ///< Pupil Remote's endpoint and the topic.
  std::string path = "data/gaze.csv";         ///< The gaze CSV; its folders are created.
  double min_confidence = 0.6;                ///< Samples below it are written with an empty target, not mapped.
  /// The main screen's view in the vehicle frame: eye_m (vehicle frame, m), camera (camera body to vehicle)
  /// and the frustum's tangents; the recorder moves it with the car at every sample.
  input::GazeView view_in_vehicle;
  std::vector<input::GazeMirror> mirrors;     ///< Mirror insets on the main screen.
};

/// Counts of a GazeRecorder.
struct GazeRecorderStats {
  uint64_t samples = 0;         ///< Samples taken by the module thread.
  uint64_t on_entity = 0;       ///< Mapped to a vehicle (or other entity).
  uint64_t on_mirror = 0;       ///< Mapped to a mirror.
  uint64_t on_nothing = 0;      ///< Mapped to nothing.
  uint64_t low_confidence = 0;  ///< Below min_confidence: not mapped.
  uint64_t dropped = 0;         ///< Lost to a full queue.
  uint64_t rows_written = 0;    ///< Rows in the file.
  uint64_t malformed = 0;       ///< Messages the decoder refused.
};

class GazeRecorder {
 public:
  /// Opens the file (header written), starts the thread, which connects to Pupil Remote (retrying every
  /// 2 s while it does not answer, logging once). An unusable path is logged as an error; then nothing is written.
  GazeRecorder(GazeRecorderDef def, std::shared_ptr<spdlog::logger> log);
  /// Stops the thread after writing what is queued.
  ~GazeRecorder();
  GazeRecorder(const GazeRecorder&) = delete;
  GazeRecorder& operator=(const GazeRecorder&) = delete;

  /// Module thread: takes the samples that arrived, stamps them with `sim_ns`, maps each through the view
  /// carried by the car at `own` among `boxes` (names by `name_of`) and queues their rows.
  void Step(int64_t sim_ns, const Pose& own, std::span<const input::GazeBox> boxes,
            const std::function<std::string(uint64_t)>& name_of);
  /// Module thread: whether samples wait for Step.
  bool Pending() const { return in_.Size() > 0; }
  /// Stops the thread (writes what is queued); Stats are final afterwards. Idempotent.
  void Close();
  GazeRecorderStats Stats() const;
  /// The file's header line (no newline).
  static std::string Header();

 private:
  // A sample as received (module thread's input), and a row as written: plain values for the SPSC queues.
  struct Raw {
    double x, y, confidence, pupil_time_s;
  };
  struct Row {
    int64_t sim_ns;
    double pupil_time_s, x, y, confidence, distance_m;
    uint64_t entity_id;
    uint8_t kind;          // 0 nothing, 1 entity, 2 mirror, 3 low confidence
    char target[56];       // entity name or mirror name, NUL-terminated
  };
  void Run();

  GazeRecorderDef def_;
  std::shared_ptr<spdlog::logger> log_;
  data::SpscQueue<Raw> in_{1024};
  data::SpscQueue<Row> out_{4096};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> dropped_{0}, written_{0}, malformed_{0};
  uint64_t samples_ = 0, on_entity_ = 0, on_mirror_ = 0, on_nothing_ = 0, low_confidence_ = 0;
  int fd_ = -1;
  std::thread thread_;
};

}  // namespace platoon::node
