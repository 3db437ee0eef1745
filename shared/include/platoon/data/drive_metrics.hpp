#pragma once
/// Driving-performance metrics of a drive or of a window of it (issue 43, "Driving metrics"): SDLP, time
/// headway (mean, minimum, share below 1 s), minimum TTC, minimum time to line crossing, steering reversal
/// rate, speed mean and SD, and the brake reaction time to an event. Computed online from the data write's
/// rows (data::MetricsRow, one at a time, in sim-time order), so a drive of any length takes constant
/// memory; the same accumulator serves `platoon export --metrics`, the Python package and tests. Pure: no
/// clock, no I/O. Definitions and sources: docs/RECORDING.md, "Driving metrics".

#include "platoon/data/columns.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace platoon::data {

/// Settings of the drive metrics.
struct DriveMetricsDef {
  /// Steering wheel angle at full lock (steer = +-1), in deg: the steer column is normalised, reversal gaps are
  /// steering wheel angles. Passenger cars: 450..540.
  double steering_wheel_lock_deg = 450.0;
  /// Cut-off of the 2nd-order Butterworth low-pass the steering angle passes before reversals are counted, in Hz
  /// (0.6 Hz: Markkula & Engström 2006).
  double reversal_cutoff_hz = 0.6;
  /// Smallest steering wheel movement between a stationary point and the next that counts as a reversal, in deg
  /// (2 deg: small corrective reversals; 3..6 deg for larger ones).
  double reversal_gap_deg = 2.0;
  /// Lane width for the time to line crossing, in m (the rows do not carry it).
  double lane_width_m = 3.5;
  /// Vehicle width for the time to line crossing, in m: a wheel crosses the line when |offset| + width/2 reaches
  /// half the lane width.
  double vehicle_width_m = 1.8;
  /// Brake pedal above this (0..1) counts as braking for the reaction time.
  double brake_threshold = 0.1;
  /// Time headways below this share count into `thw_below_share`, in s.
  double thw_short_s = 1.0;
  /// Sim time of the event the brake reaction time is measured from, in s; NaN: none.
  double event_s = std::numeric_limits<double>::quiet_NaN();
  /// A brake application later than this after the event is no reaction, in s.
  double reaction_window_s = 5.0;
};

/// Checks a DriveMetricsDef: "" when valid, else a message naming the bad field.
std::string ValidateDriveMetricsDef(const DriveMetricsDef& def);

/// The metrics of a drive or window. NaN where the rows gave nothing to compute from (no leader: no headway).
struct DriveMetrics {
  uint64_t rows = 0;                  ///< Rows taken.
  double duration_s = 0;              ///< Sim time from the first row to the last, in s.
  double speed_mean_mps = kNan;       ///< Mean speed, in m/s.
  double speed_sd_mps = kNan;         ///< Standard deviation of the speed, in m/s.
  /// Standard deviation of the lane offset, in m, pooled over the stretches in one lane (a lane change starts a
  /// new stretch, so it adds no deviation): sqrt(sum of squared deviations from each stretch's mean / (n - stretches)).
  double sdlp_m = kNan;
  uint64_t lane_changes = 0;          ///< Changes of the lane column between rows on the carriageway.
  double thw_mean_s = kNan;           ///< Mean time headway over the rows that have one, in s.
  double thw_min_s = kNan;            ///< Smallest time headway, in s.
  double thw_below_share = kNan;      ///< Share of the rows with a time headway whose headway is below thw_short_s.
  double ttc_min_s = kNan;            ///< Smallest time to collision, in s.
  /// Smallest time to line crossing, in s: (lane width/2 - vehicle width/2 - |offset|) / lateral speed towards that
  /// line, the lateral speed from consecutive offsets in one lane (first order, as Godthelp et al. 1984 define it).
  double tlc_min_s = kNan;
  uint64_t reversals = 0;             ///< Steering reversals counted.
  double reversal_rate_per_min = kNan;  ///< Steering reversals per minute of the drive.
  double brake_reaction_s = kNan;     ///< First braking after the event, in s after it; NaN: no event, braking at it, or none in the window.
  static constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
};

/// The metrics of rows taken one at a time in sim-time order.
class DriveMetricsAccumulator {
 public:
  /// `def` must pass ValidateDriveMetricsDef (checked: throws std::invalid_argument naming the field).
  explicit DriveMetricsAccumulator(const DriveMetricsDef& def);
  /// Takes a row (columns sim_time, speed, steer, brake, lane, lane_offset, time_headway, ttc; NaN fields are
  /// skipped for the metrics they feed). A row not later than the previous one is ignored.
  void Add(const MetricsRow& row);
  /// The metrics of the rows so far.
  DriveMetrics Result() const;

 private:
  struct Welford {
    uint64_t n = 0;
    double mean = 0, m2 = 0;
    void Add(double x);
  };
  void AddSteer(double t_s, double angle_deg);
  void CountStationary(double angle_deg);

  DriveMetricsDef def_;
  uint64_t rows_ = 0;
  double first_s_ = 0, last_s_ = 0;
  Welford speed_;
  // Lane offset: the stretch in one lane, and what finished stretches add.
  int lane_ = 0;
  Welford stretch_;
  double pooled_m2_ = 0;
  uint64_t pooled_n_ = 0, stretches_ = 0, lane_changes_ = 0;
  double last_offset_ = kNanValue, last_offset_s_ = 0;
  // Headways.
  uint64_t thw_n_ = 0, thw_short_ = 0;
  double thw_sum_ = 0, thw_min_ = kNanValue, ttc_min_ = kNanValue, tlc_min_ = kNanValue;
  // Steering: the low-pass filter (direct form I), its newest outputs and the reversal counter.
  double b0_ = 0, b1_ = 0, b2_ = 0, a1_ = 0, a2_ = 0;
  double x1_ = 0, x2_ = 0, y1_ = 0, y2_ = 0;
  double filter_dt_s_ = 0;
  uint64_t steer_n_ = 0;
  double prev_y_ = 0;         // newest filtered angle
  int prev_slope_ = 0;        // sign of the newest non-zero slope
  bool have_stationary_ = false;
  double up_k_ = 0, down_k_ = 0;  // the reference stationary angle of upward and downward reversals
  uint64_t reversals_ = 0;
  // Brake reaction.
  bool braking_at_event_ = false, event_seen_ = false;
  double reaction_s_ = kNanValue;
  static constexpr double kNanValue = std::numeric_limits<double>::quiet_NaN();
};

/// The metrics of `rows` (in sim-time order) under `def`.
DriveMetrics ComputeDriveMetrics(const std::vector<MetricsRow>& rows, const DriveMetricsDef& def = {});

/// Steering reversals of an angle trace (in deg) sampled every `dt_s`: low-pass filtered (2nd-order Butterworth at
/// `cutoff_hz`, bilinear transform, run forward), its stationary points found, and the reversals of at least
/// `gap_deg` counted upwards and downwards (Markkula & Engström 2006). The count.
uint64_t CountSteeringReversals(const std::vector<double>& angle_deg, double dt_s, double cutoff_hz, double gap_deg);

/// Names of the DriveMetrics fields in CSV column order ("rows,duration_s,speed_mean_mps,...").
std::string DriveMetricsCsvHeader();
/// The fields of `m` as one CSV line without newline, NaN as an empty field.
std::string DriveMetricsCsvRow(const DriveMetrics& m);

}  // namespace platoon::data
