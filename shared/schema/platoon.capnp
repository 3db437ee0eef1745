@0xce2adc387b885763;
# platoon wire protocol. Every message on every socket is one Envelope.
# Versioning rules are in docs/PROTOCOL.md: a change that an older peer cannot read
# bumps kProtocolVersion; field additions at the end of a struct do not.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("platoon::wire");

const magic :UInt32 = 0x504c544e;   # "PLTN": tells platoon traffic from stray bytes.
const protocolVersion :UInt16 = 3;
# Version 2: entities travel as CompactEntity (compactEntities); version 1's EntityState lists are still
# read (recordings made before), never written.
# Version 3: a rolling keyframe slice lists unchanged, recently sent entities by id (WorldState.keptEntities).

struct Vec3 {
  x @0 :Float64;
  y @1 :Float64;
  z @2 :Float64;
}

struct Quat {
  w @0 :Float64 = 1.0;
  x @1 :Float64;
  y @2 :Float64;
  z @3 :Float64;
}

enum Role {
  unknown @0;
  observer @1;
  traffic @2;
  driver @3;
  sensor @4;
  fusion @5;
  viewer @6;
  recorder @7;                  # records the session (world, events, chosen data streams) to a log
}

enum EntityKind {
  unknown @0;
  car @1;
  truck @2;
  motorcycle @3;
  bicycle @4;
  pedestrian @5;
  staticObject @6;
}

# --- membership (control socket: node DEALER -> server ROUTER) ---

struct Join {
  name @0 :Text;            # unique node name within the session
  role @1 :Role;
  host @2 :Text;            # hostname of the node's PC
  protocolVersion @3 :UInt16;
  pid @4 :UInt32;
  # The node's view of the session clock, so that a restarted server can resume the same session.
  sessionPhase @5 :SessionPhase;
  simAnchorNs @6 :Int64;        # sim time at refAnchorNs (valid when sessionPhase is running/paused)
  refAnchorNs @7 :Int64;
  endpoints @8 :List(DataEndpoint);  # data streams this node publishes (sensor hosts, fusion)
  lockstepMember @9 :Bool;      # lock-step sessions wait for this node's step acknowledgements (nodes: true; viewers, tools: false)
}

# --- discovery of data streams (sensor outputs never pass through the server) ---

enum StreamKind {
  unknown @0;
  lidar @1;
  radar @2;
  camera @3;
  imu @4;
  gnss @5;
  fused @6;
  objects @7;                   # object lists (object-list sensors)
}

struct DataEndpoint {
  streamId @0 :Text;            # sensor id, unique in the session, e.g. "lidar_front"
  kind @1 :StreamKind;
  port @2 :UInt16;              # TCP port of the node's data PUB socket
  address @3 :Text;             # empty in a Join: the server fills in the address it saw the join come from
}

struct Welcome {
  nodeId @0 :UInt32;            # server-assigned id, also the owner id of the node's entities
  sessionName @1 :Text;
  heartbeatIntervalNs @2 :Int64;
  lostTimeoutNs @3 :Int64;
  serverTimeNs @4 :Int64;       # reference clock at the moment of sending
  timePort @5 :UInt16;          # TCP ports of the other sockets, on the address the node joined
  worldPort @6 :UInt16;
  statePort @7 :UInt16;
  stepNs @8 :Int64;             # lock-step period of the session in ns; 0: real time
  timeControl @9 :Bool;         # the server accepts seek and speed commands (a replay)
  stateToken @10 :UInt64;       # random per join: every NodeState of this node must carry it
  sessionFile @11 :Text;        # the session file's TOML text ("" when the server has none), so that a
                                # client started without it (a viewer with only --server) draws its road
  sessionFilePath @12 :Text;    # where that file was on the server's PC (a relative road file is beside it)
}

struct Refuse {
  reason @0 :Text;
  serverProtocolVersion @1 :UInt16;
}

struct Leave {
  nodeId @0 :UInt32;
  reason @1 :Text;
}

struct Heartbeat {
  nodeId @0 :UInt32;
  simTimeNs @1 :Int64;          # the node's synced reference time when sent
  clockOffsetNs @2 :Int64;      # the node's current offset estimate against the server
  rttNs @3 :Int64;              # the node's last filtered round-trip time
  rateCorrectionPpb @4 :Int64;  # the node's current rate correction, in parts per billion
}

# --- time (time socket: node DEALER -> server ROUTER) ---

struct TimeRequest {
  nodeId @0 :UInt32;
  sequence @1 :UInt32;
  t1Ns @2 :Int64;               # node local time at send
}

struct TimeReply {
  sequence @0 :UInt32;
  t1Ns @1 :Int64;               # echoed
  t2Ns @2 :Int64;               # server reference time at receive
  t3Ns @3 :Int64;               # server reference time at send
}

# --- world (state socket upstream: node PUSH -> server PULL; world socket: server PUB -> node SUB) ---

struct Controls {
  steer @0 :Float32;            # normalised steering command, -1 (right) .. 1 (left)
  throttle @1 :Float32;         # 0 .. 1
  brake @2 :Float32;            # 0 .. 1
}

struct Lights {
  headlights @0 :Bool;
  brake @1 :Bool;
  indicatorLeft @2 :Bool;
  indicatorRight @3 :Bool;
  reverse @4 :Bool;
}

struct EntityState {
  id @0 :UInt64;
  ownerNode @1 :UInt32;
  kind @2 :EntityKind;
  stampNs @3 :Int64;            # sim time the state is valid at
  position @4 :Vec3;            # world frame, m
  orientation @5 :Quat;         # body to world
  velocity @6 :Vec3;            # world frame, m/s
  acceleration @7 :Vec3;        # world frame, m/s^2
  angularVelocity @8 :Vec3;     # world frame, rad/s
  boxSize @9 :Vec3;             # length, width, height, m
  controls @10 :Controls;
  lights @11 :Lights;
  stale @12 :Bool;              # set by the server when the owner is lost
}

# An entity as version 2 sends it: every field inline (no pointers), so a list of them is one tag word and
# 16 words an entity, 128 bytes, where EntityState's nested structs take 264. The position stays Float64
# (sub-um 100 km from the origin); orientation, rates, box and controls are Float32 (7 digits: 2 um/s at
# 30 m/s, 1e-7 rad).
struct CompactEntity {
  id @0 :UInt64;
  stampNs @1 :Int64;            # sim time the state is valid at
  ownerNode @2 :UInt32;
  kind @3 :EntityKind;
  flags @4 :UInt16;             # bit 0 stale (set by the server); lights: bit 1 headlights, 2 brake,
                                # 3 indicator left, 4 indicator right, 5 reverse
  px @5 :Float64;               # position, world frame, m
  py @6 :Float64;
  pz @7 :Float64;
  qw @8 :Float32 = 1.0;         # orientation, body to world
  qx @9 :Float32;
  qy @10 :Float32;
  qz @11 :Float32;
  vx @12 :Float32;              # velocity, world frame, m/s
  vy @13 :Float32;
  vz @14 :Float32;
  ax @15 :Float32;              # acceleration, world frame, m/s^2
  ay @16 :Float32;
  az @17 :Float32;
  wx @18 :Float32;              # angular velocity, world frame, rad/s
  wy @19 :Float32;
  wz @20 :Float32;
  length @21 :Float32;          # box size, m
  width @22 :Float32;
  height @23 :Float32;
  steer @24 :Float32;           # controls, as in Controls
  throttle @25 :Float32;
  brake @26 :Float32;
}

struct NodeState {
  nodeId @0 :UInt32;
  sequence @1 :UInt64;
  entities @2 :List(EntityState);  # version 1 only; version 2 sends compactEntities
  stepDone @3 :UInt64;          # lock-step: this node finished step stepDone (sent after its states); 0: real time
  nextStep @4 :UInt64;          # lock-step: the node computes nothing before this step (not waited for); 0: the next one
  token @5 :UInt64;             # the stateToken of the node's Welcome: states without it are refused
  compactEntities @6 :List(CompactEntity);  # the node's entities (version 2)
}

struct NodeInfo {
  nodeId @0 :UInt32;
  name @1 :Text;
  role @2 :Role;
  host @3 :Text;
  clockOffsetNs @4 :Int64;
  rttNs @5 :Int64;
  updateRateHz @6 :Float32;
  lossFraction @7 :Float32;
  lastSeenNs @8 :Int64;         # server reference time of the last message from the node
  lost @9 :Bool;
  endpoints @10 :List(DataEndpoint);  # the node's data streams, addresses filled in by the server
  pid @11 :UInt32;              # process id: changes when the node restarts
}

enum SessionPhase {
  waiting @0;                   # nodes may join; sim time does not run
  starting @1;                  # start scheduled at startAtNs
  running @2;
  paused @3;
  stopped @4;
}

struct WorldState {
  sequence @0 :UInt64;
  serverTimeNs @1 :Int64;       # reference clock when built
  simTimeNs @2 :Int64;          # session sim time when built
  phase @3 :SessionPhase;
  keyframe @4 :Bool;            # true: entities is the full set; false: only changes
  entities @5 :List(EntityState);  # version 1 only; version 2 sends compactEntities
  removedEntities @6 :List(UInt64);
  nodes @7 :List(NodeInfo);
  step @8 :UInt64;              # lock-step: this state grants step `step` at simTimeNs; 0: real time
  simRate @9 :Float64;          # sim ns per reference ns while running (replay speed); 0 means 1
  events @10 :List(LoggedEvent);  # events of the last second (repeated for loss); dedupe by sequence
  keyframePart @11 :UInt16;     # rolling keyframe (keyframe = false, keyframeParts > 1): this state also lists
  keyframeParts @12 :UInt16;    # every live entity whose id % keyframeParts == keyframePart; 0: no slice
  compactEntities @13 :List(CompactEntity);  # the entities (version 2): changes, or the full set of a keyframe
  keptEntities @14 :List(UInt64);  # version 3, rolling keyframe slice: live ids of the slice listed by id only
                                   # (unchanged since their state went out within the last keyframe interval)
  conditions @15 :WorldConditions;  # light and weather: on keyframes and after a change; absent: unchanged
}

# The session's light ([light], light.*), weather ([weather], weather.*) and road surface ([scene],
# scene.road_brightness, scene.marking_contrast), docs/WORLD.md.
struct WorldConditions {
  timeOfDayH @0 :Float64;       # local solar time, h
  dayOfYear @1 :Int32;          # 1..366
  latitudeDeg @2 :Float64;      # latitude of the map, deg
  sunElevationDeg @3 :Float64;  # deg above the horizon
  sunAzimuthDeg @4 :Float64;    # deg clockwise from north (+y)
  sunSetDirectly @5 :Bool;      # the sun angles were given, not computed from time and date
  headlights @6 :Bool;
  highBeam @7 :Bool;
  streetLights @8 :Bool;
  headlightsAuto @9 :Bool;      # headlights follow the sun until set
  streetLightsAuto @10 :Bool;   # street lights follow the sun until set
  fogVisibilityM @11 :Float64;  # meteorological visibility, m; 0: no fog
  rainMmH @12 :Float64;         # rain rate, mm/h
  roadWetness @13 :Float64;     # 0 dry .. 1 standing water
  roadBrightness @14 :Float64 = 1.0;   # [scene] road_brightness: scale of the road surface's albedo
  markingContrast @15 :Float64 = 1.0;  # [scene] marking_contrast: markings 0 (road) .. 1 (white paint)
  variableSigns @16 :List(VariableSignContent);  # what each variable message sign shows (signs.vms_<id>)
}

struct VariableSignContent {
  id @0 :UInt32;                # the sign's id in the session's sign list
  type @1 :UInt8;               # road::SignType number
  value @2 :Float64;            # its number (a limit in the country's unit; 0 none)
}

# --- session control and parameters (control socket) ---

struct SessionControl {
  command @0 :Command;
  atServerTimeNs @1 :Int64;     # for start: the reference time at which sim time T0 begins
  simT0Ns @2 :Int64;            # for start: the sim time at that instant
  enum Command {
    start @0;
    pause @1;
    resume @2;
    stop @3;
    seek @4;                    # replay: sim time jumps to simT0Ns (phase kept)
    speed @5;                   # replay: sim time runs `speed` times the reference clock
    restart @6;                 # operator only, in any phase: sim time T0 (simT0Ns) at atServerTimeNs, as start
  }
  speed @3 :Float64;            # for speed: the new rate (> 0)
  reason @4 :Text;              # for restart: why (required, logged by the server)
}

struct SessionStatus {
  phase @0 :SessionPhase;
  simTimeNs @1 :Int64;
  serverTimeNs @2 :Int64;
  startAtNs @3 :Int64;
  error @4 :Text;               # non-empty: the command was refused, and why (nothing changed)
}

struct Parameter {
  path @0 :Text;                # e.g. "server.broadcast_hz"
  value @1 :Text;               # TOML literal: 60, 0.5, true, "text"
  writable @2 :Bool;
  description @3 :Text;
  type @4 :Text;                # "float", "int", "bool", "string" (empty: not stated)
  unit @5 :Text;                # SI unit, e.g. "m/s"; empty: none
  min @6 :Float64 = -inf;       # numeric range, inclusive; values outside it are refused
  max @7 :Float64 = inf;
}

# requestId: chosen by the asker, copied into the answer. The server forwards node.<name>.* paths to the
# node that owns them under a requestId of its own and answers the asker with the node's reply.
struct ParamListRequest {
  prefix @0 :Text;
  requestId @1 :UInt64;
}

struct ParamList {
  params @0 :List(Parameter);
  requestId @1 :UInt64;
  errors @2 :List(Text);        # nodes that did not answer in time, "node.<name>: <why>"
}

struct ParamGet {
  path @0 :Text;
  requestId @1 :UInt64;
}

struct ParamSet {
  path @0 :Text;
  value @1 :Text;
  requestId @2 :UInt64;
}

struct ParamReply {
  ok @0 :Bool;
  param @1 :Parameter;
  error @2 :Text;
  requestId @3 :UInt64;
}

# --- session events: markers, parameter changes, scenario firings and actions ---

# One entry of the session's event log, numbered by the server. World states carry the entries of the
# last second (receivers drop sequences they have seen); the recorder writes them to /platoon/events.
struct LoggedEvent {
  sequence @0 :UInt64;          # 1, 2, ... per server run
  simTimeNs @1 :Int64;          # session sim time of the event
  kind @2 :Kind;
  enum Kind {
    marker @0;                  # a marker (platoon ctl mark, a key on a seat, a scenario action)
    param @1;                   # a parameter changed: text "path = value"
    fired @2;                   # a scenario event fired: text is its name
    action @3;                  # a scenario action for node targetNode to carry out at simTimeNs
    message @4;                 # a message to show in seat windows (targetNode 0: every seat)
  }
  source @3 :Text;              # who: "ctl", a node name, "event:<name>"
  text @4 :Text;                # marker text, "path = value", event name, action name, message
  detail @5 :Text;              # JSON object: the values that fired an event, an action's arguments
  targetNode @6 :UInt32;        # action/message: the node that carries it out; 0: none or every node
  entityId @7 :UInt64;          # the entity concerned; 0: none
}

# Client -> server (control socket): put a marker on the synced clock. Answered with an EventList
# holding the logged marker.
struct Mark {
  text @0 :Text;
  simTimeNs @1 :Int64;          # sim time of the marker; 0: the server's sim time on arrival
  requestId @2 :UInt64;
}

# Client -> server: the logged events after `afterSequence`, oldest first (the server keeps the last 1000).
struct EventsRequest {
  afterSequence @0 :UInt64;
  requestId @1 :UInt64;
}

struct EventList {
  events @0 :List(LoggedEvent);
  requestId @1 :UInt64;
  error @2 :Text;               # a refused Mark says why
}

struct StatusRequest {}

# Client -> server (control socket), on a session without CURVE: the operator token the server wrote to a
# file only its user can read (docs/DEPLOYMENT.md). A right token makes this connection an operator;
# nothing is answered. A wrong one is counted (server.refused.not_operator) and logged.
struct OperatorHello {
  token @0 :Text;
}

# --- sensor data (data socket: one PUB per publishing node -> SUBs; subscribers filter by sensorId) ---

struct SensorHeader {
  sensorId @0 :Text;
  kind @1 :StreamKind;
  nodeId @2 :UInt32;            # publishing node
  sequence @3 :UInt64;          # per stream, from 1; restarts at 1 when the host restarts
  stampNs @4 :Int64;            # sim time of the measurement (scan start for a lidar)
  entityId @5 :UInt64;          # entity the sensor is mounted on
  mountPosition @6 :Vec3;       # sensor frame origin in the vehicle frame (rear-axle centre), m
  mountOrientation @7 :Quat;    # sensor to vehicle rotation
  hostEpoch @8 :UInt64;         # random per host process run: tells a restarted host's stream apart
}

struct PointCloud {
  header @0 :SensorHeader;
  durationNs @1 :Int64;         # scan duration; every point's time offset lies in [0, durationNs]
  pointCount @2 :UInt32;
  pointStride @3 :UInt16;       # bytes per point record (32, layout in docs/PROTOCOL.md)
  points @4 :Data;              # packed little-endian point records
  vehicleFrame @5 :Bool;        # false: sensor frame at each point's own time; true: vehicle frame
}

struct RadarDetection {
  rangeM @0 :Float32;
  azimuthRad @1 :Float32;
  rangeRateMps @2 :Float32;
  rcsDbsm @3 :Float32;
  objectClass @4 :UInt8;        # 1 car, 2 truck, 3 pedestrian, 4 motorcycle, 5 bicycle, 6 unknown
  entityId @5 :UInt32;          # ground truth; 0 for a false positive
  falsePositive @6 :Bool;
  lengthM @7 :Float32;
  widthM @8 :Float32;
  orientationRad @9 :Float32;
  xM @10 :Float32;
  yM @11 :Float32;
}

struct RadarScan {
  header @0 :SensorHeader;
  detections @1 :List(RadarDetection);
}

struct ImuMeasurement {
  header @0 :SensorHeader;
  angularVelocity @1 :Vec3;     # sensor frame, rad/s
  acceleration @2 :Vec3;        # sensor frame, m/s^2 (specific force, gravity included)
}

struct GnssMeasurement {
  header @0 :SensorHeader;
  latitudeDeg @1 :Float64;
  longitudeDeg @2 :Float64;
  altitudeM @3 :Float64;
  velocityEnu @4 :Vec3;         # m/s
  horizontalSigmaM @5 :Float64;
  verticalSigmaM @6 :Float64;
}

struct CameraRoi {
  entityId @0 :UInt32;
  classId @1 :UInt32;
  uMin @2 :Float32;             # px, image u right, v down
  vMin @3 :Float32;
  uMax @4 :Float32;
  vMax @5 :Float32;
  depthM @6 :Float32;
  occlusionRatio @7 :Float32;
  truncated @8 :Bool;
  detail @9 :UInt32;            # class detail: a sign's type * 65536 + its value (docs/WORLD.md "Signs"); 0 none
}

struct CameraFrame {
  header @0 :SensorHeader;
  width @1 :UInt32;
  height @2 :UInt32;
  fx @3 :Float64;
  fy @4 :Float64;
  cx @5 :Float64;
  cy @6 :Float64;
  rois @7 :List(CameraRoi);
  encoding @8 :Text;            # "" (no image), "rgb8" or "png"
  image @9 :Data;
}

enum SourceStatus {
  ok @0;
  late @1;                      # arrived after the fusion timeout: not in this frame
  missing @2;                   # no cloud for this frame
}

struct FusedSource {
  sensorId @0 :Text;
  stampNs @1 :Int64;            # scan start of the merged cloud (0 when missing)
  pointCount @2 :UInt32;
  status @3 :SourceStatus;
  hostEpoch @4 :UInt64;
  sequence @5 :UInt64;          # the source cloud's sequence number
  firstPoint @6 :UInt32 = 0xffffffff;  # its first record in the fused blob; the default (frames written
                                       # before this field): the groups lie in source order
}

struct FusedCloud {
  sensorId @0 :Text;            # the fusion stream id
  nodeId @1 :UInt32;
  sequence @2 :UInt64;
  referenceNs @3 :Int64;        # sim time every point is compensated to
  entityId @4 :UInt64;          # the ego vehicle; points are in its frame at referenceNs
  sources @5 :List(FusedSource);
  pointCount @6 :UInt32;
  pointStride @7 :UInt16;
  points @8 :Data;              # packed point records, source index in each
  motionCompensated @9 :Bool;
}

struct DetectedObject {
  trackId @0 :UInt32;           # ground-truth entity id the track follows; 0 for a false positive
  objectClass @1 :UInt8;        # 0 unclassified, 1 car, 2 truck, 3 motorbike, 4 bicycle, 5 pedestrian
  truthClass @2 :UInt8;         # ground truth class (for evaluation)
  position @3 :Vec3;            # reference point in the sensor frame, m
  velocity @4 :Vec3;            # absolute velocity in sensor-frame axes, m/s
  size @5 :Vec3;                # length, width, height, m
}

struct ObjectList {
  header @0 :SensorHeader;
  objects @1 :List(DetectedObject);
}

struct Envelope {
  magic @0 :UInt32;
  version @1 :UInt16;
  body :union {
    join @2 :Join;
    welcome @3 :Welcome;
    refuse @4 :Refuse;
    leave @5 :Leave;
    heartbeat @6 :Heartbeat;
    timeRequest @7 :TimeRequest;
    timeReply @8 :TimeReply;
    nodeState @9 :NodeState;
    worldState @10 :WorldState;
    sessionControl @11 :SessionControl;
    sessionStatus @12 :SessionStatus;
    paramList @13 :ParamListRequest;
    paramListReply @14 :ParamList;
    paramGet @15 :ParamGet;
    paramSet @16 :ParamSet;
    paramReply @17 :ParamReply;
    statusRequest @18 :StatusRequest;
    pointCloud @19 :PointCloud;
    radarScan @20 :RadarScan;
    imuMeasurement @21 :ImuMeasurement;
    gnssMeasurement @22 :GnssMeasurement;
    cameraFrame @23 :CameraFrame;
    fusedCloud @24 :FusedCloud;
    objectList @25 :ObjectList;
    mark @26 :Mark;
    eventsRequest @27 :EventsRequest;
    eventList @28 :EventList;
    operatorHello @29 :OperatorHello;
  }
}
