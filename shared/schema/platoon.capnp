@0xce2adc387b885763;
# platoon wire protocol. Every message on every socket is one Envelope.
# Versioning rules are in docs/PROTOCOL.md: a change that an older peer cannot read
# bumps kProtocolVersion; field additions at the end of a struct do not.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("platoon::wire");

const magic :UInt32 = 0x504c544e;   # "PLTN": tells platoon traffic from stray bytes.
const protocolVersion :UInt16 = 1;

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

struct NodeState {
  nodeId @0 :UInt32;
  sequence @1 :UInt64;
  entities @2 :List(EntityState);
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
  entities @5 :List(EntityState);
  removedEntities @6 :List(UInt64);
  nodes @7 :List(NodeInfo);
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
  }
}

struct SessionStatus {
  phase @0 :SessionPhase;
  simTimeNs @1 :Int64;
  serverTimeNs @2 :Int64;
  startAtNs @3 :Int64;
}

struct Parameter {
  path @0 :Text;                # e.g. "server.broadcast_hz"
  value @1 :Text;               # TOML literal: 60, 0.5, true, "text"
  writable @2 :Bool;
  description @3 :Text;
}

struct ParamListRequest {
  prefix @0 :Text;
}

struct ParamList {
  params @0 :List(Parameter);
}

struct ParamGet {
  path @0 :Text;
}

struct ParamSet {
  path @0 :Text;
  value @1 :Text;
}

struct ParamReply {
  ok @0 :Bool;
  param @1 :Parameter;
  error @2 :Text;
}

struct StatusRequest {}

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
  }
}
