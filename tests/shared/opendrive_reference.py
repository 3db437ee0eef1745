#!/usr/bin/env python3
"""Independent reference points for the OpenDRIVE import tests (tests/shared/opendrive_import_test.cpp).

Reads an .xodr fixture with the Python standard library only and evaluates the ASAM OpenDRIVE formulas by
itself, sharing no code with platoon: every geometry is evaluated from its own <geometry> x, y, hdg (no
chaining), lines, arcs and spirals by composite Simpson quadrature of the heading
theta(u) = hdg + k0 u + (k1 - k0) u^2 / (2 L), poly3 by bisection on its arc length (Simpson again), paramPoly3
directly with p = ds (arcLength) or ds / length (normalized). Lane boundaries: laneOffset + the sum of the lane
widths outwards (a border record gives the outer edge's t directly); heights from elevation, roll from
superelevation, z at (s, t) = h + t tan(roll).

Usage: opendrive_reference.py FIXTURE.xodr OUT.csv [STEP_M]
Writes one row per road, s (every STEP_M metres, default 7, and the road's end) and lane (0 for the reference
line): road,s,lane,x,y,z,heading. For a lane the point is its centre on the road surface.
"""
import math
import sys
import xml.etree.ElementTree as ET


def simpson(f, a, b, n=4000):
    if b == a:
        return 0.0
    if n % 2:
        n += 1
    h = (b - a) / n
    total = f(a) + f(b)
    for i in range(1, n):
        total += (4 if i % 2 else 2) * f(a + i * h)
    return total * h / 3


def cubic(records, s, key="s"):
    """a + b ds + c ds^2 + d ds^3 of the last record starting at or before s (the first before its start)."""
    if not records:
        return 0.0
    rec = records[0]
    for r in records:
        if float(r.get(key)) <= s:
            rec = r
    ds = s - float(rec.get(key))
    a, b, c, d = (float(rec.get(k, "0")) for k in "abcd")
    return a + b * ds + c * ds * ds + d * ds ** 3


def geometry_point(g, ds):
    x0, y0, hdg, length = (float(g.get(k)) for k in ("x", "y", "hdg", "length"))
    shape = [c for c in g if c.tag != "userData"][0]
    if shape.tag in ("line", "arc", "spiral"):
        if shape.tag == "line":
            k0 = k1 = 0.0
        elif shape.tag == "arc":
            k0 = k1 = float(shape.get("curvature"))
        else:
            k0, k1 = float(shape.get("curvStart")), float(shape.get("curvEnd"))
        theta = lambda u: hdg + k0 * u + (k1 - k0) * u * u / (2 * length)
        x = x0 + simpson(lambda u: math.cos(theta(u)), 0.0, ds)
        y = y0 + simpson(lambda u: math.sin(theta(u)), 0.0, ds)
        return x, y, theta(ds)
    if shape.tag == "poly3":
        a, b, c, d = (float(shape.get(k)) for k in "abcd")
        dv = lambda u: b + 2 * c * u + 3 * d * u * u
        arc = lambda u: simpson(lambda w: math.sqrt(1 + dv(w) ** 2), 0.0, u, 400)
        lo, hi = 0.0, ds
        for _ in range(60):  # arc(u) >= u, so the u of arc length ds lies in [0, ds]
            mid = 0.5 * (lo + hi)
            if arc(mid) < ds:
                lo = mid
            else:
                hi = mid
        u = 0.5 * (lo + hi)
        v = a + b * u + c * u * u + d * u ** 3
        return (x0 + u * math.cos(hdg) - v * math.sin(hdg), y0 + u * math.sin(hdg) + v * math.cos(hdg),
                hdg + math.atan2(dv(u), 1.0))
    if shape.tag == "paramPoly3":
        cu = [float(shape.get(k)) for k in ("aU", "bU", "cU", "dU")]
        cv = [float(shape.get(k)) for k in ("aV", "bV", "cV", "dV")]
        p = ds / length if shape.get("pRange", "normalized") == "normalized" else ds
        u = cu[0] + cu[1] * p + cu[2] * p * p + cu[3] * p ** 3
        v = cv[0] + cv[1] * p + cv[2] * p * p + cv[3] * p ** 3
        du = cu[1] + 2 * cu[2] * p + 3 * cu[3] * p * p
        dv = cv[1] + 2 * cv[2] * p + 3 * cv[3] * p * p
        return (x0 + u * math.cos(hdg) - v * math.sin(hdg), y0 + u * math.sin(hdg) + v * math.cos(hdg),
                hdg + math.atan2(dv, du))
    raise ValueError("unknown geometry " + shape.tag)


def reference_point(road, s):
    geoms = road.find("planView").findall("geometry")
    g = geoms[0]
    for cand in geoms:
        if float(cand.get("s")) <= s + 1e-12:
            g = cand
    ds = min(s - float(g.get("s")), float(g.get("length")))
    return geometry_point(g, ds)


def lane_t(road, s, lane_id):
    """(inner, outer) t of lane lane_id at s."""
    lanes = road.find("lanes")
    t0 = cubic(lanes.findall("laneOffset"), s)
    sections = lanes.findall("laneSection")
    sec = sections[0]
    for cand in sections:
        if float(cand.get("s")) <= s + 1e-12:
            sec = cand
    ds = s - float(sec.get("s"))
    side = sec.find("left" if lane_id > 0 else "right")
    by_id = {int(l.get("id")): l for l in side.findall("lane")}
    sign = 1 if lane_id > 0 else -1
    t = t0
    inner = t0
    for i in range(1, abs(lane_id) + 1):
        lane = by_id[sign * i]
        inner = t
        widths = lane.findall("width")
        if widths:
            t = t + sign * cubic(widths, ds, "sOffset")
        else:
            t = cubic(lane.findall("border"), ds, "sOffset")
    return inner, t


def lane_ids(road, s):
    sections = road.find("lanes").findall("laneSection")
    sec = sections[0]
    for cand in sections:
        if float(cand.get("s")) <= s + 1e-12:
            sec = cand
    ids = []
    for side in ("left", "right"):
        el = sec.find(side)
        if el is not None:
            ids += [int(l.get("id")) for l in el.findall("lane")]
    return sorted(ids)


def main():
    path, out = sys.argv[1], sys.argv[2]
    step = float(sys.argv[3]) if len(sys.argv) > 3 else 7.0
    root = ET.parse(path).getroot()
    rows = []
    for road in root.findall("road"):
        length = float(road.get("length"))
        elev = road.find("elevationProfile")
        elev = elev.findall("elevation") if elev is not None else []
        lat = road.find("lateralProfile")
        sup = lat.findall("superelevation") if lat is not None else []
        ss = []
        s = 0.0
        while s < length - 1e-9:
            ss.append(s)
            s += step
        ss.append(length)
        for s in ss:
            x, y, hdg = reference_point(road, s)
            h = cubic(elev, s)
            roll = cubic(sup, s)
            rows.append((road.get("id"), s, 0, x, y, h, hdg))
            for lid in lane_ids(road, s):
                inner, outer = lane_t(road, s, lid)
                t = 0.5 * (inner + outer)
                rows.append((road.get("id"), s, lid, x - t * math.sin(hdg), y + t * math.cos(hdg),
                             h + t * math.tan(roll), hdg))
    with open(out, "w") as f:
        f.write("road,s,lane,x,y,z,heading\n")
        for r in rows:
            f.write("%s,%.17g,%d,%.17g,%.17g,%.17g,%.17g\n" % r)


if __name__ == "__main__":
    main()
