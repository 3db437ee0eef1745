"""Scores of the standard tasks (docs/TASKS.md): the lane change test, the detection response task and car
following with a sinusoidal lead speed, from data-write CSVs as platoon.read_csv gives them. The same C++
functions as `platoon task score` (platoon/data/standard_tasks.hpp)."""

import math
import re

from . import _platoon

_SIGN = re.compile(r"^lct:(-?\d+)@([-+0-9.eE]+)$")


def _markers(df):
    """(sim time, text) of every marker in a data-write DataFrame's marker column (several in a row joined by ' | ')."""
    if "marker" not in df.columns:
        raise ValueError("expected a marker column (the seat's data write, or platoon export --markers); columns: "
                         + ", ".join(str(c) for c in df.columns))
    out = []
    for t, cell in zip(df["sim_time_s"].to_numpy(dtype=float), df["marker"].fillna("").astype(str)):
        if cell:
            out.extend((float(t), m) for m in cell.split(" | "))
    return out


def _lane_centre(lane, lane_width_m):
    return -(-lane - 0.5) * lane_width_m if lane < 0 else (lane - 0.5) * lane_width_m


def score_lct(df, signs=None, lane_width_m=3.5, onset_before_sign_m=10.0, change_length_m=20.0, start_lane=-2,
              from_s_m=-math.inf, to_s_m=math.inf):
    """Lane change test (ISO 26022): mean absolute deviation of the driven lateral position from the normative path.

    df: a data-write DataFrame (platoon.read_csv) with s_m, lane, lane_offset_m and, without `signs`, marker.
    signs: [(s_m, lane), ...]; None: from the lct:LANE@S markers the template's sign events log.

        df = platoon.read_csv("data/participant.csv")
        platoon.score_lct(df)["mean_deviation_m"]

    Returns a dict: mean_deviation_m, length_m, samples, signs.
    """
    if signs is None:
        signs = []
        for _, text in _markers(df):
            m = _SIGN.match(text)
            if m:
                signs.append((float(m.group(2)), int(m.group(1))))
        if not signs:
            raise ValueError("score_lct: expected lct:LANE@S markers of the sign events (or give signs), got none")
    signs = sorted((float(s), int(lane)) for s, lane in signs)
    s_m, lateral_m = [], []
    for s, lane, off in zip(df["s_m"].to_numpy(dtype=float), df["lane"].to_numpy(dtype=float),
                            df["lane_offset_m"].to_numpy(dtype=float)):
        if math.isfinite(s) and math.isfinite(lane) and lane != 0 and math.isfinite(off):
            s_m.append(float(s))
            lateral_m.append(_lane_centre(int(lane), lane_width_m) + float(off))
    return _platoon.score_lct_of_trace(s_m, lateral_m, signs, lane_width_m, onset_before_sign_m, change_length_m,
                                       start_lane, from_s_m, to_s_m)


def score_drt(df=None, onsets=None, responses=None, stimulus="drt:stimulus", response=("key:space",)):
    """Detection response task (ISO 17488): hits 100-2500 ms after each onset, hit rate, response times.

    Either df, a data-write DataFrame whose marker column holds the stimulus and response markers, or onsets and
    responses as lists of sim times in s.

    Returns a dict: stimuli, hits, misses, hit_rate, mean_rt_s, median_rt_s, premature, extra, and trials (a list
    of dicts: onset_s, hit, response_time_s, premature).
    """
    if df is not None:
        marks = _markers(df)
        if isinstance(response, str):
            response = (response,)
        onsets = [t for t, m in marks if m == stimulus]
        responses = [t for t, m in marks if m in response]
    if onsets is None or responses is None:
        raise ValueError("score_drt: give df, or onsets and responses")
    return _platoon.score_drt_of_times([float(t) for t in onsets], [float(t) for t in responses])


def score_car_following(follower, lead, frequency_hz, periods_per_segment=2, from_s=-math.inf, to_s=math.inf):
    """Car following with a sinusoidal lead speed: gain, delay and coherence of the follower's speed at the lead's
    frequency (Brookhuis, de Waard & Mulder 1994).

    follower, lead: DataFrames with sim_time_s and speed_mps (the lead's speed is interpolated at the follower's
    times).

    Returns a dict: gain, delay_s, phase_rad, coherence, segments, lead_amplitude_mps, follower_amplitude_mps.
    """
    lt = lead["sim_time_s"].to_numpy(dtype=float)
    lv = lead["speed_mps"].to_numpy(dtype=float)
    t_s, lead_mps, follower_mps = [], [], []
    j = 0
    for t, v in zip(follower["sim_time_s"].to_numpy(dtype=float), follower["speed_mps"].to_numpy(dtype=float)):
        if not (math.isfinite(t) and math.isfinite(v)) or t < from_s or t > to_s or len(lt) == 0:
            continue
        while j + 1 < len(lt) and lt[j + 1] <= t:
            j += 1
        if t < lt[0] or t > lt[-1]:
            continue
        if lt[j] == t or j + 1 >= len(lt):
            l = lv[j]
        else:
            l = lv[j] + (t - lt[j]) / (lt[j + 1] - lt[j]) * (lv[j + 1] - lv[j])
        t_s.append(float(t))
        lead_mps.append(float(l))
        follower_mps.append(float(v))
    return _platoon.score_car_following_of_speeds(t_s, lead_mps, follower_mps, float(frequency_hz),
                                                  int(periods_per_segment))
