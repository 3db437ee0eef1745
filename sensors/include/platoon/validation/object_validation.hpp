#pragma once
/// Validation of an object-producing sensor against recorded ground truth (seed 001: synthetic
/// object lists compared with reference ones). A sensor cycle's reported objects are associated with
/// the ground-truth entities at the cycle's stamp, in the sensor frame: by track id where the sensor
/// gives one, else by nearest neighbour within a gate. The result is a detection rate and position
/// error by range bin and by class, and false positives, with 95 % confidence intervals.
/// Pure: no file, no clock. `platoon validate` reads the log and writes the CSVs
/// (docs/RECORDING.md, "Validation reports").

#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"
#include "platoon/sensors/mounting.hpp"
#include "platoon/sensors/object_list.hpp"
#include "platoon/validation/recorded_world.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace platoon::validation {

/// One object as a sensor reported it.
struct ReportedObject {
  uint32_t track_id = 0;           ///< Truth label (sensors::TruthLabel of the entity id) the sensor claims; 0: none.
  Vec3 position_m = Vec3::Zero();  ///< Position in the sensor frame, in m (x forward, y left; z is not compared).
  std::optional<sensors::ObjectClass> reported_class;  ///< Class the sensor reported, if it reports one.
};

/// One sensor cycle to compare: what it reported and where the sensor was.
struct SensorFrame {
  int64_t stamp_ns = 0;                    ///< Sim time of the measurement (SensorHeader::stamp_ns).
  uint64_t ego_id = 0;                     ///< Entity the sensor is mounted on.
  sensors::Mounting mount;                 ///< Sensor pose on that entity (from the SensorHeader).
  std::vector<ReportedObject> objects;     ///< What the sensor reported.
};

/// The cycle of an object-list sensor (track ids, classes).
SensorFrame FrameOf(const protocol::ObjectList& list);
/// The cycle of a radar: detection x/y, entity ids, ARS 408 classes mapped to ObjectClass.
SensorFrame FrameOf(const protocol::RadarScan& scan);

/// One ground-truth object in the sensor frame.
struct TruthObject {
  uint32_t label = 0;                                        ///< sensors::TruthLabel of the entity id.
  sensors::ObjectClass truth_class = sensors::ObjectClass::kUnclassified;  ///< From the entity kind.
  Vec3 position_m = Vec3::Zero();                            ///< Box centre in the sensor frame, in m.
};

/// The box centres of `others` (entity states at the stamp) in the frame of a sensor mounted with
/// `mount` on a vehicle at `ego` (world pose at the stamp): p_S = (T^W_V T^V_S)^-1 p_W.
std::vector<TruthObject> TruthInSensorFrame(const Pose& ego, const sensors::Mounting& mount,
                                            const std::vector<protocol::EntityState>& others);

/// What is compared and how.
struct ValidationDef {
  /// Edges of the horizontal-range bins in the sensor frame, in m, increasing; truth objects outside
  /// [first, last) are not evaluated. Typical 0, 10, 20, 40, 80.
  std::vector<double> range_bins_m = {0, 10, 20, 40, 80};
  /// Nearest-neighbour gate: largest horizontal distance of an association, in m. Typical 2.
  double gate_m = 2.0;
  /// Evaluated region: |atan2(y, x)| in the sensor frame at most this, in rad. pi: all around.
  double azimuth_half_rad = 3.141592653589793;
  /// Associate by track id where the sensor gives one (else: nearest neighbour for every object).
  bool use_track_ids = true;
  /// How the recorded world is evaluated at a stamp.
  TruthMethod truth = TruthMethod::kInterpolate;
};

/// Checks a definition; "" when valid, else a message naming the bad field.
std::string ValidateValidationDef(const ValidationDef& def);

/// A rate with its 95 % confidence interval.
struct Rate {
  uint64_t count = 0;   ///< Successes (or events).
  uint64_t trials = 0;  ///< Trials (or frames, for a rate per frame).
  double value = 0;     ///< count / trials (NaN without trials).
  double lower = 0;     ///< 95 % lower bound.
  double upper = 0;     ///< 95 % upper bound.
};

/// Binomial proportion k / n with the Wilson score interval (z = 1.96).
Rate BinomialRate(uint64_t k, uint64_t n);
/// Events per frame, k / frames, with Garwood's exact Poisson interval of k.
Rate PoissonRate(uint64_t k, uint64_t frames);

/// Position errors (reported minus truth, sensor frame) of associated objects.
struct ErrorStats {
  uint64_t n = 0;                 ///< Associated objects.
  double mean_x_m = 0, mean_y_m = 0;    ///< Mean error per axis, in m (a bias).
  double sigma_x_m = 0, sigma_y_m = 0;  ///< Sample standard deviation per axis, in m.
  double sigma_x_lower_m = 0, sigma_x_upper_m = 0;  ///< 95 % interval of sigma_x (chi-square, n - 1 dof).
  double sigma_y_lower_m = 0, sigma_y_upper_m = 0;  ///< 95 % interval of sigma_y.
  double rmse_m = 0;              ///< sqrt(mean(dx^2 + dy^2)), in m.
};

/// Figures of one range bin or one class.
struct Figures {
  uint64_t truth = 0;           ///< Truth objects evaluated (trials).
  Rate detection;               ///< Associated / truth.
  ErrorStats error;             ///< Of the associated objects.
  uint64_t false_positives = 0; ///< Reported objects with no truth, in this bin (by reported range) or reported class.
  Rate false_positives_per_frame;  ///< false_positives / frames.
  Rate class_correct;           ///< Associated objects whose reported class is their true class (of those with a class).
};

/// One row of the range table.
struct RangeBin {
  double lower_m = 0, upper_m = 0;  ///< [lower, upper) horizontal range, in m.
  Figures figures;
};

/// One row of the class table (by true class; false positives by reported class).
struct ClassRow {
  sensors::ObjectClass object_class = sensors::ObjectClass::kUnclassified;
  Figures figures;
};

/// The whole comparison.
struct Report {
  ValidationDef def;
  uint64_t frames = 0;                ///< Sensor cycles compared.
  uint64_t frames_without_ego = 0;    ///< Cycles skipped: the ego was not in the recorded world at the stamp.
  uint64_t reported = 0;              ///< Objects reported in the compared cycles.
  uint64_t matched_by_id = 0;         ///< Associations by track id (in the region).
  uint64_t matched_by_distance = 0;   ///< Associations by nearest neighbour (in the region).
  uint64_t outside_region = 0;        ///< Reported objects outside the evaluated region (not counted).
  Figures all;                        ///< Over every bin.
  Rate false_positive_fraction;       ///< False positives / reported objects in the region.
  std::vector<RangeBin> by_range;
  std::vector<ClassRow> by_class;     ///< Classes that occurred, in code order.
};

/// Accumulates frames and makes the report.
class Validator {
 public:
  explicit Validator(ValidationDef def);
  /// Compares one cycle with its ground truth (every other entity in the sensor frame at the stamp).
  void Add(const SensorFrame& frame, const std::vector<TruthObject>& truth);
  /// Counts a cycle whose ego was not in the recorded world.
  void SkipWithoutEgo() { ++frames_without_ego_; }
  /// The figures so far.
  Report Finish() const;

 private:
  struct Sums {
    uint64_t truth = 0, detected = 0, fp = 0, classified = 0, class_correct = 0;
    uint64_t n = 0;
    double sx = 0, sy = 0, sxx = 0, syy = 0;
    void AddError(const Vec3& d);
  };
  int BinOf(double range_m) const;  // -1: outside the bins
  Figures Make(const Sums& s) const;

  ValidationDef def_;
  uint64_t frames_ = 0, frames_without_ego_ = 0, reported_ = 0, by_id_ = 0, by_distance_ = 0, outside_ = 0;
  uint64_t reported_in_region_ = 0;
  Sums all_;
  std::vector<Sums> bins_;
  std::map<sensors::ObjectClass, Sums> classes_;
};

/// Compares every frame with `world` (ego and truth at each stamp, by def.truth); `progress` (optional)
/// is called now and then with frames done and the total.
Report Compare(const RecordedWorld& world, std::span<const SensorFrame> frames, const ValidationDef& def,
               const std::function<void(size_t done, size_t total)>& progress = {});

/// summary.csv: one header line and one row (docs/RECORDING.md lists the columns).
std::string SummaryCsv(const Report& report, std::string_view sensor_id, std::string_view kind);
/// by_range.csv: one row per range bin and a last row "all".
std::string ByRangeCsv(const Report& report);
/// by_class.csv: one row per class.
std::string ByClassCsv(const Report& report);
/// The report as a table for a terminal.
std::string FormatTable(const Report& report, std::string_view sensor_id, std::string_view kind);

}  // namespace platoon::validation
