#!/usr/bin/env python3
"""Writes junctions.xodr: a small town of three junctions for traffic through junctions (docs/ROADS.md).

Written by the platoon team from the OpenDRIVE 1.6 text (roads, planView line/arc, lanes with laneOffset,
lane links, road links into junctions, junction connections with laneLinks); not derived from any other file.

Layout (right-hand traffic, every lane 3.5 m wide):
  J1 (id 100) four-way at (0, 0); J2 (id 200) three-way at (300, 0), arms W N S; J3 (id 300) three-way at
  (0, -300), arms N E W. Each arm's mouth is 15 m from its junction's centre.
  Five roads with two lanes each way (1/-1 inner, 2/-2 outer) join the mouths:
    1: J1 east -> J2 west; 2: J1 south -> J3 north; 3: J1 north -> J2 north (around the top, 50 m corners);
    4: J2 south -> J3 east (a 50 m corner); 5: J1 west -> J3 west (around the left, 50 m corners).
  Connecting roads, one per movement, from the incoming mouth on the arm axis to the outgoing mouth:
    straight: a 30 m line with lanes -1, -2 (inner to inner, outer to outer);
    left turn: an arc of radius 15 with lane -1, from and to the inner lanes (turn lane);
    right turn: an arc of radius 15 with laneOffset -3.5 and lane -1, from and to the outer lanes.
  J1: left, straight and right from every arm; J2: W left/right, N straight/right, S straight/left;
  J3: N left/right, E straight/right, W straight/left. No U-turns.
  Who gives way: stop signs (DE 206) on J1's north and south arms; at J2 and J3 the road that ends there gives
  way to the through road (junction <priority>).
Run: python3 make_junctions.py > junctions.xodr (byte-identical output).
With --uncontrolled: no stop signs and no priorities, so right before left holds at every junction
(tests/data/roads/junctions_uncontrolled.xodr).
"""
import math
import sys

H = 15.0          # junction centre to mouth, in m
W = 3.5           # lane width, in m
R = 50.0          # corner radius of the roads between junctions, in m


def num(x):
    x = 0.0 if abs(x) < 1e-12 else x
    return repr(float(x))


def wrap(h):
    h = math.fmod(h + math.pi, 2 * math.pi)
    if h < 0:
        h += 2 * math.pi
    return h - math.pi


def chain(x, y, h, parts):
    """Geometries of a chain of ('line', L) and ('arc', L, k) parts from (x, y, h): [(s, x, y, h, part)], end."""
    out, s = [], 0.0
    for p in parts:
        out.append((s, x, y, wrap(h), p))
        L = p[1]
        if p[0] == 'line':
            x, y = x + L * math.cos(h), y + L * math.sin(h)
        else:
            k = p[2]
            x, y = x + (math.sin(h + k * L) - math.sin(h)) / k, y - (math.cos(h + k * L) - math.cos(h)) / k
            h = h + k * L
        s += L
    return out, (x, y, wrap(h), s)


def geometry_xml(geoms):
    lines = []
    for s, x, y, h, p in geoms:
        shape = '<line/>' if p[0] == 'line' else '<arc curvature="%s"/>' % num(p[2])
        lines.append('      <geometry s="%s" x="%s" y="%s" hdg="%s" length="%s">%s</geometry>'
                     % (num(s), num(x), num(y), num(h), num(p[1]), shape))
    return '\n'.join(lines)


def lane_xml(lane_id, mark, color='white', pred=None, succ=None):
    link = ''
    if pred is not None or succ is not None:
        link = '<link>%s%s</link>' % ('<predecessor id="%d"/>' % pred if pred is not None else '',
                                      '<successor id="%d"/>' % succ if succ is not None else '')
    return ('          <lane id="%d" type="driving" level="false">%s<width sOffset="0" a="%s" b="0" c="0" d="0"/>'
            '<roadMark sOffset="0" type="%s" color="%s" width="0.12"/></lane>' % (lane_id, link, num(W), mark, color))


def road_xml(rid, name, junction, geoms, length, links, right, left=(), center_mark='solid', center_color='yellow',
             lane_offset=None, signals=()):
    out = ['  <road name="%s" length="%s" id="%d" junction="%d" rule="RHT">' % (name, num(length), rid, junction),
           '    <link>']
    out += ['      ' + l for l in links]
    out += ['    </link>', '    <type s="0" type="town"><speed max="50" unit="km/h"/></type>',
            '    <planView>', geometry_xml(geoms), '    </planView>', '    <lanes>']
    if lane_offset is not None:
        out.append('      <laneOffset s="0" a="%s" b="0" c="0" d="0"/>' % num(lane_offset))
    out.append('      <laneSection s="0">')
    if left:
        out.append('        <left>')
        out += [lane_xml(*l) for l in left]
        out.append('        </left>')
    out += ['        <center>', '          <lane id="0" type="none" level="false"><roadMark sOffset="0" type="%s" '
            'color="%s" width="0.12"/></lane>' % (center_mark, center_color), '        </center>', '        <right>']
    out += [lane_xml(*l) for l in right]
    out += ['        </right>', '      </laneSection>', '    </lanes>']
    if signals:
        out.append('    <signals>')
        out += ['      ' + g for g in signals]
        out.append('    </signals>')
    out.append('  </road>')
    return '\n'.join(out)


DIRS = {'E': (1, 0), 'N': (0, 1), 'W': (-1, 0), 'S': (0, -1)}
JUNCTIONS = [  # id, name, centre, arms
    (100, 'J1 four-way', (0.0, 0.0), 'ENWS'),
    (200, 'J2 three-way', (300.0, 0.0), 'WNS'),
    (300, 'J3 three-way', (0.0, -300.0), 'NEW'),
]
# The ordinary roads: start (junction, arm), end (junction, arm), the parts between the mouths.
ROADS = [
    (1, (100, 'E'), (200, 'W'), [('line', 300 - 2 * H)]),
    (2, (100, 'S'), (300, 'N'), [('line', 300 - 2 * H)]),
    (3, (100, 'N'), (200, 'N'), [('line', 250 - H), ('arc', R * math.pi / 2, -1 / R), ('line', 300 - 2 * R),
                                 ('arc', R * math.pi / 2, -1 / R), ('line', 250 - H)]),
    (4, (200, 'S'), (300, 'E'), [('line', 250 - H), ('arc', R * math.pi / 2, -1 / R), ('line', 250 - H)]),
    (5, (100, 'W'), (300, 'W'), [('line', 250 - H), ('arc', R * math.pi / 2, 1 / R), ('line', 300 - 2 * R),
                                 ('arc', R * math.pi / 2, 1 / R), ('line', 250 - H)]),
]

# Who gives way: at J2 road 1 (from the west) to roads 3 and 4 (north-south), at J3 road 2 (from the north) to
# roads 4 and 5 (east-west); at J1 the north and south arms (roads 3 and 2) have stop signs.
PRIORITIES = {200: [(3, 1), (4, 1)], 300: [(4, 2), (5, 2)]}
STOP_ARMS = 'NS'


def main():
    uncontrolled = '--uncontrolled' in sys.argv[1:]
    stop_arms = '' if uncontrolled else STOP_ARMS
    priorities = {} if uncontrolled else PRIORITIES
    centre = {j[0]: j[2] for j in JUNCTIONS}
    mouth = {}  # (junction, arm) -> (road, 'start' | 'end')
    body = []
    for rid, a, b, parts in ROADS:
        (ja, arm_a), (jb, arm_b) = a, b
        dx, dy = DIRS[arm_a]
        x0, y0 = centre[ja][0] + H * dx, centre[ja][1] + H * dy
        geoms, (x1, y1, h1, length) = chain(x0, y0, math.atan2(dy, dx), parts)
        ex, ey = DIRS[arm_b]
        want = (centre[jb][0] + H * ex, centre[jb][1] + H * ey)
        assert abs(x1 - want[0]) < 1e-9 and abs(y1 - want[1]) < 1e-9, (rid, x1, y1, want)
        assert abs(wrap(h1 - math.atan2(-ey, -ex))) < 1e-12, (rid, h1)
        mouth[(ja, arm_a)] = (rid, 'start')
        mouth[(jb, arm_b)] = (rid, 'end')
        links = ['<predecessor elementType="junction" elementId="%d"/>' % ja,
                 '<successor elementType="junction" elementId="%d"/>' % jb]
        signals = []
        if ja == 100 and arm_a in stop_arms:
            # A stop sign (German 206) for the traffic arriving at J1 on this arm: it drives the left lanes, towards
            # -s, so the sign faces -s and stands right of them (t = 8.5 m), 3 m before the mouth.
            signals.append('<signal s="3" t="8.5" id="stop%d" name="stop" dynamic="no" orientation="-" zOffset="1.5" '
                           'country="DE" type="206" subtype="-1" height="0.9" width="0.9"/>' % rid)
        body.append(road_xml(rid, 'road %d' % rid, -1, geoms, length, links,
                             right=[(-1, 'broken'), (-2, 'solid')], left=[(2, 'solid'), (1, 'broken')],  # descending ids
                             signals=signals))
    junction_xml = []
    for jid, name, (cx, cy), arms in JUNCTIONS:
        connections = []
        n = 0
        for arm_in in arms:
            for arm_out in arms:
                if arm_out == arm_in:
                    continue
                a, b = DIRS[arm_in], DIRS[arm_out]
                travel = (-a[0], -a[1])
                cross = travel[0] * b[1] - travel[1] * b[0]
                turn = 'straight' if cross == 0 else ('left' if cross > 0 else 'right')
                n += 1
                cid = jid * 10 + n
                road_in, contact_in = mouth[(jid, arm_in)]
                road_out, contact_out = mouth[(jid, arm_out)]
                sign_in = 1 if contact_in == 'start' else -1     # arriving lanes: left when at the road's start
                sign_out = -1 if contact_out == 'start' else 1   # leaving lanes: right when at the road's start
                x0, y0 = cx + H * a[0], cy + H * a[1]
                h0 = math.atan2(travel[1], travel[0])
                if turn == 'straight':
                    parts = [('line', 2 * H)]
                    lanes = [(-1, 'none', 'white', sign_in * 1, sign_out * 1), (-2, 'none', 'white', sign_in * 2, sign_out * 2)]
                    lane_links = [(sign_in * 1, -1), (sign_in * 2, -2)]
                    offset = None
                elif turn == 'left':
                    parts = [('arc', H * math.pi / 2, 1 / H)]
                    lanes = [(-1, 'none', 'white', sign_in * 1, sign_out * 1)]
                    lane_links = [(sign_in * 1, -1)]
                    offset = None
                else:
                    parts = [('arc', H * math.pi / 2, -1 / H)]
                    lanes = [(-1, 'none', 'white', sign_in * 2, sign_out * 2)]
                    lane_links = [(sign_in * 2, -1)]
                    offset = -W
                geoms, (x1, y1, h1, length) = chain(x0, y0, h0, parts)
                assert abs(x1 - (cx + H * b[0])) < 1e-9 and abs(y1 - (cy + H * b[1])) < 1e-9, (cid, x1, y1)
                assert abs(wrap(h1 - math.atan2(b[1], b[0]))) < 1e-12
                links = ['<predecessor elementType="road" elementId="%d" contactPoint="%s"/>' % (road_in, contact_in),
                         '<successor elementType="road" elementId="%d" contactPoint="%s"/>' % (road_out, contact_out)]
                body.append(road_xml(cid, '%s %s from %s to %s' % (name.split()[0], turn, arm_in, arm_out), jid, geoms,
                                     length, links, right=lanes, center_mark='none', center_color='white',
                                     lane_offset=offset))
                connections.append('    <connection id="%d" incomingRoad="%d" connectingRoad="%d" contactPoint="start">\n%s\n'
                                   '    </connection>' % (n, road_in, cid, '\n'.join(
                                       '      <laneLink from="%d" to="%d"/>' % l for l in lane_links)))
        # The three-way junctions' through roads have priority over the road that ends there.
        for high, low in priorities.get(jid, []):
            connections.append('    <priority high="%d" low="%d"/>' % (high, low))
        junction_xml.append('  <junction id="%d" name="%s">\n%s\n  </junction>' % (jid, name, '\n'.join(connections)))
    print('<?xml version="1.0" encoding="UTF-8"?>')
    print('<!-- A town of three junctions (a four-way, two three-way with turn lanes) joined by five roads%s; written by '
          'make_junctions.py from the OpenDRIVE 1.6 text -->' % (', no signs and no priorities' if uncontrolled else ''))
    print('<OpenDRIVE>')
    print('  <header revMajor="1" revMinor="6" name="junctions" version="1.00" vendor="platoon"/>')
    print('\n'.join(body))
    print('\n'.join(junction_xml))
    print('</OpenDRIVE>')


if __name__ == '__main__':
    main()
