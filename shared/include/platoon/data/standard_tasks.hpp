#pragma once
/// Scoring of the standard secondary and primary tasks of driving studies (issue 43, "Standard tasks"): the lane
/// change test (ISO 26022: normative path, mean deviation), the detection response task (ISO 17488: hits, misses,
/// response times in the 100..2500 ms window) and car following with a sinusoidal lead speed (gain, delay and
/// coherence at the forcing frequency, after Brookhuis, de Waard & Mulder 1994). Pure: no clock, no I/O; the
/// `platoon task` command and the tests call them. Definitions and sources: docs/TASKS.md.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace platoon::data {

// ---------------------------------------------------------------------------------------------------------------
// Lane change test (ISO 26022)

/// One lane change sign: where it stands and which lane it points to.
struct LctSign {
  double s_m = 0;  ///< Arc length of the sign along the road, in m (the signs of a 3 km track stand ~150 m apart).
  int lane = -1;   ///< Target lane as the road numbers it: -1 first right of the reference line, -2, -3.
};

/// Settings of the lane change test's normative path.
struct LctDef {
  /// Width of every lane, in m. Typical 3.5..3.85.
  double lane_width_m = 3.5;
  /// The normative lane change starts this far before the sign, in m (0: at the sign). Typical 10.
  double onset_before_sign_m = 10.0;
  /// Distance over which the normative path moves from one lane centre to the next, in m. Typical 20.
  double change_length_m = 20.0;
  /// Lane the drive starts in (-1, -2, ...), held until the first sign.
  int start_lane = -2;
};

/// The default lane change test: lane width 3.5 m, change from 10 m before the sign over 20 m, start in lane -2.
LctDef DefaultLctDef();
/// Checks an LctDef: "" when valid, else a message naming the bad field.
std::string ValidateLctDef(const LctDef& def);

/// A point of a path or trace: lateral position over arc length.
struct LateralPoint {
  double s_m = 0;        ///< Arc length along the road, in m.
  double lateral_m = 0;  ///< Lateral position from the road's reference line, left positive, in m.
};

/// Lateral position of the centre of lane `lane` (-1, -2, ... right of the reference line; 1, 2 left), in m.
double LaneCentreLateral(int lane, double lane_width_m);

/// The normative path of a drive past `signs` (sorted by s_m; checked: throws std::invalid_argument naming the
/// sign): piecewise linear in s, lane centre to lane centre, each change from sign.s_m - onset_before_sign_m over
/// change_length_m. A sign pointing to the lane already driven adds no change. Holds the last lane to +infinity.
std::vector<LateralPoint> LctNormativePath(const LctDef& def, const std::vector<LctSign>& signs);

/// Lateral position of a piecewise linear path at `s_m` (held before its first and after its last point).
double PathLateralAt(const std::vector<LateralPoint>& path, double s_m);

/// The lane change test's score over [from_s_m, to_s_m].
struct LctScore {
  double mean_deviation_m = std::numeric_limits<double>::quiet_NaN();  ///< Mean |driven - normative|, in m.
  double length_m = 0;        ///< Length of track scored, in m.
  uint64_t samples = 0;       ///< Trace points inside the scored stretch.
};

/// Mean absolute deviation between the driven `trace` (sorted by s_m; points with a non-increasing s are skipped)
/// and the normative `path` over the track [from_s_m, to_s_m], averaged over distance: the integral of
/// |trace(s) - path(s)| ds / length, both linear between their points (the deviation is integrated exactly on
/// every piece between the union of their breakpoints, including sign changes). NaN when the trace covers less
/// than 1 m of the stretch.
LctScore ScoreLct(const std::vector<LateralPoint>& trace, const std::vector<LateralPoint>& path, double from_s_m,
                  double to_s_m);

// ---------------------------------------------------------------------------------------------------------------
// Detection response task (ISO 17488)

/// Settings of the detection response task.
struct DrtDef {
  double min_response_s = 0.1;   ///< A response earlier than this after the onset is premature (no hit), in s.
  double max_response_s = 2.5;   ///< A response later than this after the onset is no hit (a miss), in s.
  double min_interval_s = 3.0;   ///< Shortest onset-to-onset interval of a schedule, in s.
  double max_interval_s = 5.0;   ///< Longest onset-to-onset interval of a schedule, in s.
  double stimulus_s = 1.0;       ///< How long a stimulus shows (or until the response), in s.
};

/// The ISO 17488 settings: responses 0.1..2.5 s after onset, onsets 3..5 s apart, stimulus 1 s.
DrtDef DefaultDrtDef();
/// Checks a DrtDef: "" when valid, else a message naming the bad field.
std::string ValidateDrtDef(const DrtDef& def);

/// Onset times of a stimulus schedule from `from_s` to before `to_s`, in s: the first at from_s, then intervals
/// drawn uniformly in [min_interval_s, max_interval_s] from a SplitMix64 stream of `seed` (the same on every
/// platform). Needs a valid def and to_s >= from_s.
std::vector<double> DrtSchedule(const DrtDef& def, uint64_t seed, double from_s, double to_s);

/// What became of one stimulus.
struct DrtTrial {
  double onset_s = 0;    ///< Onset of the stimulus, in s.
  bool hit = false;      ///< A response came min_response_s..max_response_s after the onset.
  double response_time_s = std::numeric_limits<double>::quiet_NaN();  ///< Of the hit, in s; NaN on a miss.
  uint32_t premature = 0;  ///< Responses earlier than min_response_s after this onset (ignored for the hit).
};

/// The detection response task's score.
struct DrtScore {
  std::vector<DrtTrial> trials;  ///< One per stimulus, in onset order.
  uint32_t hits = 0;             ///< Stimuli with a hit.
  uint32_t misses = 0;           ///< Stimuli without one.
  double hit_rate = std::numeric_limits<double>::quiet_NaN();  ///< hits / stimuli; NaN without stimuli.
  double mean_rt_s = std::numeric_limits<double>::quiet_NaN();    ///< Mean response time of the hits, in s.
  double median_rt_s = std::numeric_limits<double>::quiet_NaN();  ///< Median response time of the hits, in s.
  uint32_t premature = 0;        ///< Responses earlier than min_response_s after the latest onset.
  /// Responses that belong to no stimulus: before the first onset, later than max_response_s after the latest
  /// onset, or a second response to a stimulus already hit.
  uint32_t extra = 0;
};

/// Scores `responses` (times in s) against stimulus `onsets` (times in s; both sorted ascending, else
/// std::invalid_argument). A response belongs to the latest onset at or before it; the first response of a
/// stimulus inside [onset + min_response_s, onset + max_response_s] is its hit (bounds included); a premature one
/// is counted and does not end the trial.
DrtScore ScoreDrt(const DrtDef& def, const std::vector<double>& onsets, const std::vector<double>& responses);

// ---------------------------------------------------------------------------------------------------------------
// Car following with a sinusoidal lead speed

/// Settings of the car-following analysis.
struct CarFollowingDef {
  double frequency_hz = 0.05;      ///< Frequency of the lead's speed sine, in Hz. Typical 0.02..0.1.
  uint32_t periods_per_segment = 2;  ///< Whole periods in each segment the spectra are averaged over (Welch). >= 1.
};

/// Checks a CarFollowingDef: "" when valid, else a message naming the bad field.
std::string ValidateCarFollowingDef(const CarFollowingDef& def);

/// One sample of both speeds.
struct SpeedPair {
  double t_s = 0;             ///< Sim time, in s.
  double lead_mps = 0;        ///< Speed of the lead vehicle, in m/s.
  double follower_mps = 0;    ///< Speed of the follower, in m/s.
};

/// The follower's response at the forcing frequency.
struct CarFollowingScore {
  double gain = std::numeric_limits<double>::quiet_NaN();      ///< |S_lf| / S_ll: follower amplitude per lead amplitude.
  double phase_rad = std::numeric_limits<double>::quiet_NaN(); ///< Phase lag of the follower, in rad in [0, 2 pi).
  double delay_s = std::numeric_limits<double>::quiet_NaN();   ///< phase_rad / (2 pi f), in s.
  double coherence = std::numeric_limits<double>::quiet_NaN(); ///< |S_lf|^2 / (S_ll S_ff), 0..1; 1 with one segment.
  uint32_t segments = 0;          ///< Segments averaged.
  double lead_amplitude_mps = std::numeric_limits<double>::quiet_NaN();      ///< Lead speed amplitude at f, in m/s.
  double follower_amplitude_mps = std::numeric_limits<double>::quiet_NaN();  ///< Follower speed amplitude at f, in m/s.
};

/// Gain, delay and coherence between lead and follower speed at the forcing frequency (Brookhuis, de Waard &
/// Mulder 1994): the samples (sorted by t_s) are cut into consecutive segments of periods_per_segment whole
/// periods from the first sample; in each the mean is removed and the Fourier coefficient at f is integrated
/// (trapezoids, so uneven sampling is fine); the auto- and cross-spectra are averaged over the segments. NaN
/// fields (segments = 0) when the samples span less than one segment.
CarFollowingScore ScoreCarFollowing(const CarFollowingDef& def, const std::vector<SpeedPair>& samples);

}  // namespace platoon::data
