#include "platoon/protocol/codec.hpp"
#include "platoon/protocol/codec_in_place.hpp"

#include "platoon.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/array.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <vector>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace platoon::protocol {
namespace {

static_assert(kProtocolVersion == wire::PROTOCOL_VERSION, "messages.hpp and platoon.capnp disagree on the version");

// Reader limits: a world state of 10^5 entities is about 30 MB; beyond 64 MB is not platoon traffic.
constexpr uint64_t kTraversalLimitWords = 8ull * 1024 * 1024;
// Words a decode may traverse per word of the message. Cap'n Proto charges a list of zero-sized elements one
// word per element and a part read twice twice, so with the limit a multiple of the message's own size a few
// hundred bytes cannot claim 8 million empty entities (each a whole C++ object: 1.5 GB and 30 s, found by
// tests/fuzz). Decoding reads every part once, so 4 leaves room.
constexpr uint64_t kTraversalWordsPerWord = 4;

// --- core -> wire ---

void Put(wire::Vec3::Builder b, const Vec3& v) {
  b.setX(v.x());
  b.setY(v.y());
  b.setZ(v.z());
}
void Put(wire::Quat::Builder b, const Quat& q) {
  b.setW(q.w());
  b.setX(q.x());
  b.setY(q.y());
  b.setZ(q.z());
}
Vec3 Get(wire::Vec3::Reader r) { return Vec3(r.getX(), r.getY(), r.getZ()); }
Quat Get(wire::Quat::Reader r) { return Quat(r.getW(), r.getX(), r.getY(), r.getZ()); }

template <class To, class From>
To CastEnum(From from) {
  return static_cast<To>(static_cast<std::underlying_type_t<From>>(from));
}

EntityState Get(wire::EntityState::Reader r) {
  EntityState e;
  e.id = r.getId();
  e.owner_node = r.getOwnerNode();
  e.kind = CastEnum<EntityKind>(r.getKind());
  e.kinematics.stamp_ns = r.getStampNs();
  e.kinematics.pose.position_m = Get(r.getPosition());
  e.kinematics.pose.orientation = Get(r.getOrientation());
  e.kinematics.velocity_mps = Get(r.getVelocity());
  e.kinematics.acceleration_mps2 = Get(r.getAcceleration());
  e.kinematics.angular_velocity_radps = Get(r.getAngularVelocity());
  e.box_size_m = Get(r.getBoxSize());
  auto c = r.getControls();
  e.controls = Controls{c.getSteer(), c.getThrottle(), c.getBrake()};
  auto l = r.getLights();
  e.lights = Lights{l.getHeadlights(), l.getBrake(), l.getIndicatorLeft(), l.getIndicatorRight(), l.getReverse()};
  e.stale = r.getStale();
  return e;
}

// Lights and the stale flag as CompactEntity's flags.
constexpr uint16_t kStaleFlag = 1u << 0, kHeadlightsFlag = 1u << 1, kBrakeLightFlag = 1u << 2,
                   kIndicatorLeftFlag = 1u << 3, kIndicatorRightFlag = 1u << 4, kReverseFlag = 1u << 5;

void Put(wire::CompactEntity::Builder b, const EntityState& e) {
  const KinematicState& k = e.kinematics;
  auto f = [](double x) { return static_cast<float>(x); };
  b.setId(e.id);
  b.setStampNs(k.stamp_ns);
  b.setOwnerNode(e.owner_node);
  b.setKind(CastEnum<wire::EntityKind>(e.kind));
  b.setFlags(static_cast<uint16_t>((e.stale ? kStaleFlag : 0) | (e.lights.headlights ? kHeadlightsFlag : 0) |
                                   (e.lights.brake ? kBrakeLightFlag : 0) | (e.lights.indicator_left ? kIndicatorLeftFlag : 0) |
                                   (e.lights.indicator_right ? kIndicatorRightFlag : 0) | (e.lights.reverse ? kReverseFlag : 0)));
  b.setPx(k.pose.position_m.x());
  b.setPy(k.pose.position_m.y());
  b.setPz(k.pose.position_m.z());
  b.setQw(f(k.pose.orientation.w()));
  b.setQx(f(k.pose.orientation.x()));
  b.setQy(f(k.pose.orientation.y()));
  b.setQz(f(k.pose.orientation.z()));
  b.setVx(f(k.velocity_mps.x()));
  b.setVy(f(k.velocity_mps.y()));
  b.setVz(f(k.velocity_mps.z()));
  b.setAx(f(k.acceleration_mps2.x()));
  b.setAy(f(k.acceleration_mps2.y()));
  b.setAz(f(k.acceleration_mps2.z()));
  b.setWx(f(k.angular_velocity_radps.x()));
  b.setWy(f(k.angular_velocity_radps.y()));
  b.setWz(f(k.angular_velocity_radps.z()));
  b.setLength(f(e.box_size_m.x()));
  b.setWidth(f(e.box_size_m.y()));
  b.setHeight(f(e.box_size_m.z()));
  b.setSteer(e.controls.steer);
  b.setThrottle(e.controls.throttle);
  b.setBrake(e.controls.brake);
}

EntityState Get(wire::CompactEntity::Reader r) {
  EntityState e;
  KinematicState& k = e.kinematics;
  e.id = r.getId();
  k.stamp_ns = r.getStampNs();
  e.owner_node = r.getOwnerNode();
  e.kind = CastEnum<EntityKind>(r.getKind());
  const uint16_t flags = r.getFlags();
  e.stale = (flags & kStaleFlag) != 0;
  e.lights = Lights{(flags & kHeadlightsFlag) != 0, (flags & kBrakeLightFlag) != 0, (flags & kIndicatorLeftFlag) != 0,
                    (flags & kIndicatorRightFlag) != 0, (flags & kReverseFlag) != 0};
  k.pose.position_m = Vec3(r.getPx(), r.getPy(), r.getPz());
  k.pose.orientation = Quat(r.getQw(), r.getQx(), r.getQy(), r.getQz());
  k.velocity_mps = Vec3(r.getVx(), r.getVy(), r.getVz());
  k.acceleration_mps2 = Vec3(r.getAx(), r.getAy(), r.getAz());
  k.angular_velocity_radps = Vec3(r.getWx(), r.getWy(), r.getWz());
  e.box_size_m = Vec3(r.getLength(), r.getWidth(), r.getHeight());
  e.controls = Controls{r.getSteer(), r.getThrottle(), r.getBrake()};
  return e;
}

void Put(wire::DataEndpoint::Builder b, const DataEndpoint& e) {
  b.setStreamId(e.stream_id);
  b.setKind(CastEnum<wire::StreamKind>(e.kind));
  b.setPort(e.port);
  b.setAddress(e.address);
}

DataEndpoint Get(wire::DataEndpoint::Reader r) {
  return DataEndpoint{r.getStreamId(), CastEnum<StreamKind>(r.getKind()), r.getPort(), r.getAddress()};
}

void Put(wire::SensorHeader::Builder b, const SensorHeader& h) {
  b.setSensorId(h.sensor_id);
  b.setKind(CastEnum<wire::StreamKind>(h.kind));
  b.setNodeId(h.node_id);
  b.setSequence(h.sequence);
  b.setStampNs(h.stamp_ns);
  b.setEntityId(h.entity_id);
  Put(b.initMountPosition(), h.mount_position_m);
  Put(b.initMountOrientation(), h.mount_orientation);
  b.setHostEpoch(h.host_epoch);
}

SensorHeader Get(wire::SensorHeader::Reader r) {
  SensorHeader h;
  h.sensor_id = r.getSensorId();
  h.kind = CastEnum<StreamKind>(r.getKind());
  h.node_id = r.getNodeId();
  h.sequence = r.getSequence();
  h.stamp_ns = r.getStampNs();
  h.entity_id = r.getEntityId();
  h.mount_position_m = Get(r.getMountPosition());
  h.mount_orientation = Get(r.getMountOrientation());
  h.host_epoch = r.getHostEpoch();
  return h;
}

void Put(wire::RadarDetection::Builder b, const RadarDetection& d) {
  b.setRangeM(d.range_m);
  b.setAzimuthRad(d.azimuth_rad);
  b.setRangeRateMps(d.range_rate_mps);
  b.setRcsDbsm(d.rcs_dbsm);
  b.setObjectClass(d.object_class);
  b.setEntityId(d.entity_id);
  b.setFalsePositive(d.false_positive);
  b.setLengthM(d.length_m);
  b.setWidthM(d.width_m);
  b.setOrientationRad(d.orientation_rad);
  b.setXM(d.x_m);
  b.setYM(d.y_m);
}

RadarDetection Get(wire::RadarDetection::Reader r) {
  return RadarDetection{r.getRangeM(),  r.getAzimuthRad(), r.getRangeRateMps(),   r.getRcsDbsm(),
                        r.getObjectClass(), r.getEntityId(), r.getFalsePositive(), r.getLengthM(),
                        r.getWidthM(),  r.getOrientationRad(), r.getXM(),          r.getYM()};
}

void Put(wire::CameraRoi::Builder b, const CameraRoi& c) {
  b.setEntityId(c.entity_id);
  b.setClassId(c.class_id);
  b.setUMin(c.u_min);
  b.setVMin(c.v_min);
  b.setUMax(c.u_max);
  b.setVMax(c.v_max);
  b.setDepthM(c.depth_m);
  b.setOcclusionRatio(c.occlusion_ratio);
  b.setTruncated(c.truncated);
  b.setDetail(c.detail);
}

CameraRoi Get(wire::CameraRoi::Reader r) {
  return CameraRoi{r.getEntityId(), r.getClassId(), r.getUMin(),           r.getVMin(),     r.getUMax(),
                   r.getVMax(),     r.getDepthM(),  r.getOcclusionRatio(), r.getTruncated(), r.getDetail()};
}

void Put(wire::FusedSource::Builder b, const FusedSource& f) {
  b.setSensorId(f.sensor_id);
  b.setStampNs(f.stamp_ns);
  b.setPointCount(f.point_count);
  b.setStatus(CastEnum<wire::SourceStatus>(f.status));
  b.setHostEpoch(f.host_epoch);
  b.setSequence(f.sequence);
  b.setFirstPoint(f.first_point);
}

FusedSource Get(wire::FusedSource::Reader r) {
  return FusedSource{r.getSensorId(), r.getStampNs(),  r.getPointCount(), CastEnum<SourceStatus>(r.getStatus()),
                     r.getHostEpoch(), r.getSequence(), r.getFirstPoint()};
}

capnp::Data::Reader AsData(const std::string& bytes) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size());
}
std::string FromData(capnp::Data::Reader d) { return std::string(reinterpret_cast<const char*>(d.begin()), d.size()); }

void Put(wire::Parameter::Builder b, const Parameter& p) {
  b.setPath(p.path);
  b.setValue(p.value);
  b.setWritable(p.writable);
  b.setDescription(p.description);
  b.setType(p.type);
  b.setUnit(p.unit);
  b.setMin(p.min);
  b.setMax(p.max);
}

Parameter Get(wire::Parameter::Reader r) {
  return Parameter{r.getPath(), r.getValue(), r.getWritable(), r.getDescription(),
                   r.getType(), r.getUnit(), r.getMin(), r.getMax()};
}

void Put(wire::LoggedEvent::Builder b, const LoggedEvent& e) {
  b.setSequence(e.sequence);
  b.setSimTimeNs(e.sim_time_ns);
  b.setKind(CastEnum<wire::LoggedEvent::Kind>(e.kind));
  b.setSource(e.source);
  b.setText(e.text);
  b.setDetail(e.detail);
  b.setTargetNode(e.target_node);
  b.setEntityId(e.entity_id);
}

LoggedEvent Get(wire::LoggedEvent::Reader r) {
  return LoggedEvent{r.getSequence(), r.getSimTimeNs(), CastEnum<LoggedEvent::Kind>(r.getKind()),
                     r.getSource(),   r.getText(),      r.getDetail(),
                     r.getTargetNode(), r.getEntityId()};
}

// Variable message signs a WorldConditions carries at most (more are left out).
constexpr size_t kMaxVariableSigns = 1024;

void PutConditions(wire::WorldConditions::Builder b, const world::WorldConditions& c) {
  b.setTimeOfDayH(c.light.time_of_day_h);
  b.setDayOfYear(c.light.day_of_year);
  b.setLatitudeDeg(c.light.latitude_deg);
  b.setSunElevationDeg(c.light.sun_elevation_deg);
  b.setSunAzimuthDeg(c.light.sun_azimuth_deg);
  b.setSunSetDirectly(c.light.sun_set_directly);
  b.setHeadlights(c.light.headlights);
  b.setHighBeam(c.light.high_beam);
  b.setStreetLights(c.light.street_lights);
  b.setHeadlightsAuto(c.light.headlights_auto);
  b.setStreetLightsAuto(c.light.street_lights_auto);
  b.setFogVisibilityM(c.weather.fog_visibility_m);
  b.setRainMmH(c.weather.rain_mm_h);
  b.setRoadWetness(c.weather.road_wetness);
  b.setRoadBrightness(c.surface.road_brightness);
  b.setMarkingContrast(c.surface.marking_contrast);
  auto signs = b.initVariableSigns(static_cast<unsigned>(std::min<size_t>(c.variable_signs.size(), kMaxVariableSigns)));
  for (unsigned i = 0; i < signs.size(); ++i) {
    signs[i].setId(c.variable_signs[i].id);
    signs[i].setType(c.variable_signs[i].type);
    signs[i].setValue(c.variable_signs[i].value);
  }
}

// Conditions as received; values that are not finite or out of their range are clamped to the nearest
// allowed one (garbage cannot blind every sensor of a node with a NaN).
world::WorldConditions GetConditions(wire::WorldConditions::Reader r) {
  const auto in = [](double v, double lo, double hi, double fallback) {
    return std::isfinite(v) ? std::clamp(v, lo, hi) : fallback;
  };
  world::WorldConditions c;
  world::LightConditions& l = c.light;
  l.time_of_day_h = in(r.getTimeOfDayH(), 0, 24, l.time_of_day_h);
  l.day_of_year = std::clamp(r.getDayOfYear(), 1, 366);
  l.latitude_deg = in(r.getLatitudeDeg(), -90, 90, l.latitude_deg);
  l.sun_elevation_deg = in(r.getSunElevationDeg(), -90, 90, l.sun_elevation_deg);
  l.sun_azimuth_deg = in(r.getSunAzimuthDeg(), 0, 360, l.sun_azimuth_deg);
  l.sun_set_directly = r.getSunSetDirectly();
  l.headlights = r.getHeadlights();
  l.high_beam = r.getHighBeam();
  l.street_lights = r.getStreetLights();
  l.headlights_auto = r.getHeadlightsAuto();
  l.street_lights_auto = r.getStreetLightsAuto();
  world::WeatherConditions& w = c.weather;
  w.fog_visibility_m = in(r.getFogVisibilityM(), 0, 1e6, 0);
  w.rain_mm_h = in(r.getRainMmH(), 0, 1000, 0);
  w.road_wetness = in(r.getRoadWetness(), 0, 1, 0);
  c.surface.road_brightness = in(r.getRoadBrightness(), 0.1, 3, 1);
  c.surface.marking_contrast = in(r.getMarkingContrast(), 0, 1, 1);
  const auto signs = r.getVariableSigns();
  for (unsigned i = 0; i < signs.size() && i < kMaxVariableSigns; ++i)
    c.variable_signs.push_back({signs[i].getId(), signs[i].getType(), in(signs[i].getValue(), 0, 65535, 0)});
  return c;
}

NodeInfo Get(wire::NodeInfo::Reader r);  // defined below, used by GetList

template <class T, class ListBuilder, class F>
void PutList(ListBuilder list, const std::vector<T>& items, F&& put) {
  for (unsigned i = 0; i < items.size(); ++i) put(list[i], items[i]);
}

template <class T, class ListReader>
std::vector<T> GetList(ListReader list) {
  std::vector<T> out;
  out.reserve(list.size());
  for (auto item : list) out.push_back(Get(item));
  return out;
}

// The entities of a NodeState or WorldState: version 1's EntityState list, then version 2's CompactEntity
// list (a message holds one or the other; both are read, in that order).
std::vector<EntityState> GetEntities(capnp::List<wire::EntityState>::Reader v1,
                                     capnp::List<wire::CompactEntity>::Reader v2) {
  std::vector<EntityState> out;
  out.reserve(v1.size() + v2.size());
  for (auto e : v1) out.push_back(Get(e));
  for (auto e : v2) out.push_back(Get(e));
  return out;
}

void Put(wire::NodeInfo::Builder b, const NodeInfo& n) {
  b.setNodeId(n.node_id);
  b.setName(n.name);
  b.setRole(CastEnum<wire::Role>(n.role));
  b.setHost(n.host);
  b.setClockOffsetNs(n.clock_offset_ns);
  b.setRttNs(n.rtt_ns);
  b.setUpdateRateHz(n.update_rate_hz);
  b.setLossFraction(n.loss_fraction);
  b.setLastSeenNs(n.last_seen_ns);
  b.setLost(n.lost);
  PutList(b.initEndpoints(n.endpoints.size()), n.endpoints, [](auto x, const auto& e) { Put(x, e); });
  b.setPid(n.pid);
}

NodeInfo Get(wire::NodeInfo::Reader r) {
  NodeInfo n;
  n.node_id = r.getNodeId();
  n.name = r.getName();
  n.role = CastEnum<Role>(r.getRole());
  n.host = r.getHost();
  n.clock_offset_ns = r.getClockOffsetNs();
  n.rtt_ns = r.getRttNs();
  n.update_rate_hz = r.getUpdateRateHz();
  n.loss_fraction = r.getLossFraction();
  n.last_seen_ns = r.getLastSeenNs();
  n.lost = r.getLost();
  n.endpoints = GetList<DataEndpoint>(r.getEndpoints());
  n.pid = r.getPid();
  return n;
}


// One overload per message: fills the envelope body.
struct BodyWriter {
  wire::Envelope::Body::Builder body;

  void operator()(const Join& m) {
    auto b = body.initJoin();
    b.setName(m.name);
    b.setRole(CastEnum<wire::Role>(m.role));
    b.setHost(m.host);
    b.setProtocolVersion(m.protocol_version);
    b.setPid(m.pid);
    b.setSessionPhase(CastEnum<wire::SessionPhase>(m.session_phase));
    b.setSimAnchorNs(m.sim_anchor_ns);
    b.setRefAnchorNs(m.ref_anchor_ns);
    PutList(b.initEndpoints(m.endpoints.size()), m.endpoints, [](auto x, const auto& e) { Put(x, e); });
    b.setLockstepMember(m.lockstep_member);
  }
  void operator()(const Welcome& m) {
    auto b = body.initWelcome();
    b.setNodeId(m.node_id);
    b.setSessionName(m.session_name);
    b.setHeartbeatIntervalNs(m.heartbeat_interval_ns);
    b.setLostTimeoutNs(m.lost_timeout_ns);
    b.setServerTimeNs(m.server_time_ns);
    b.setTimePort(m.time_port);
    b.setWorldPort(m.world_port);
    b.setStatePort(m.state_port);
    b.setStepNs(m.step_ns);
    b.setTimeControl(m.time_control);
    b.setStateToken(m.state_token);
    b.setSessionFile(m.session_file);
    b.setSessionFilePath(m.session_file_path);
  }
  void operator()(const Refuse& m) {
    auto b = body.initRefuse();
    b.setReason(m.reason);
    b.setServerProtocolVersion(m.server_protocol_version);
  }
  void operator()(const Leave& m) {
    auto b = body.initLeave();
    b.setNodeId(m.node_id);
    b.setReason(m.reason);
  }
  void operator()(const Heartbeat& m) {
    auto b = body.initHeartbeat();
    b.setNodeId(m.node_id);
    b.setSimTimeNs(m.sim_time_ns);
    b.setClockOffsetNs(m.clock_offset_ns);
    b.setRttNs(m.rtt_ns);
    b.setRateCorrectionPpb(m.rate_correction_ppb);
  }
  void operator()(const TimeRequest& m) {
    auto b = body.initTimeRequest();
    b.setNodeId(m.node_id);
    b.setSequence(m.sequence);
    b.setT1Ns(m.t1_ns);
  }
  void operator()(const TimeReply& m) {
    auto b = body.initTimeReply();
    b.setSequence(m.sequence);
    b.setT1Ns(m.t1_ns);
    b.setT2Ns(m.t2_ns);
    b.setT3Ns(m.t3_ns);
  }
  void operator()(const NodeState& m) {
    auto b = body.initNodeState();
    b.setNodeId(m.node_id);
    b.setSequence(m.sequence);
    PutList(b.initCompactEntities(m.entities.size()), m.entities, [](auto x, const auto& e) { Put(x, e); });
    b.setStepDone(m.step_done);
    b.setNextStep(m.next_step);
    b.setToken(m.token);
  }
  void operator()(const WorldState& m) {
    auto b = body.initWorldState();
    b.setSequence(m.sequence);
    b.setServerTimeNs(m.server_time_ns);
    b.setSimTimeNs(m.sim_time_ns);
    b.setPhase(CastEnum<wire::SessionPhase>(m.phase));
    b.setKeyframe(m.keyframe);
    PutList(b.initCompactEntities(m.entities.size()), m.entities, [](auto x, const auto& e) { Put(x, e); });
    auto removed = b.initRemovedEntities(m.removed_entities.size());
    for (unsigned i = 0; i < m.removed_entities.size(); ++i) removed.set(i, m.removed_entities[i]);
    PutList(b.initNodes(m.nodes.size()), m.nodes, [](auto x, const auto& n) { Put(x, n); });
    b.setStep(m.step);
    b.setSimRate(m.sim_rate == 1.0 ? 0.0 : m.sim_rate);  // 0 on the wire: 1 (peers that predate the field)
    if (!m.events.empty())
      PutList(b.initEvents(m.events.size()), m.events, [](auto x, const auto& e) { Put(x, e); });
    b.setKeyframePart(m.keyframe_part);
    b.setKeyframeParts(m.keyframe_parts);
    if (!m.kept_entities.empty()) {
      auto kept = b.initKeptEntities(m.kept_entities.size());
      for (unsigned i = 0; i < m.kept_entities.size(); ++i) kept.set(i, m.kept_entities[i]);
    }
    if (m.conditions) PutConditions(b.initConditions(), *m.conditions);
  }
  void operator()(const SessionControl& m) {
    auto b = body.initSessionControl();
    b.setCommand(CastEnum<wire::SessionControl::Command>(m.command));
    b.setAtServerTimeNs(m.at_server_time_ns);
    b.setSimT0Ns(m.sim_t0_ns);
    b.setSpeed(m.speed);
    if (!m.reason.empty()) b.setReason(m.reason);
  }
  void operator()(const SessionStatus& m) {
    auto b = body.initSessionStatus();
    b.setPhase(CastEnum<wire::SessionPhase>(m.phase));
    b.setSimTimeNs(m.sim_time_ns);
    b.setServerTimeNs(m.server_time_ns);
    b.setStartAtNs(m.start_at_ns);
    if (!m.error.empty()) b.setError(m.error);
  }
  void operator()(const ParamListRequest& m) {
    auto b = body.initParamList();
    b.setPrefix(m.prefix);
    b.setRequestId(m.request_id);
  }
  void operator()(const ParamList& m) {
    auto b = body.initParamListReply();
    PutList(b.initParams(m.params.size()), m.params, [](auto x, const auto& p) { Put(x, p); });
    b.setRequestId(m.request_id);
    auto errors = b.initErrors(m.errors.size());
    for (unsigned i = 0; i < m.errors.size(); ++i) errors.set(i, m.errors[i]);
  }
  void operator()(const ParamGet& m) {
    auto b = body.initParamGet();
    b.setPath(m.path);
    b.setRequestId(m.request_id);
  }
  void operator()(const ParamSet& m) {
    auto b = body.initParamSet();
    b.setPath(m.path);
    b.setValue(m.value);
    b.setRequestId(m.request_id);
  }
  void operator()(const ParamReply& m) {
    auto b = body.initParamReply();
    b.setOk(m.ok);
    Put(b.initParam(), m.param);
    b.setError(m.error);
    b.setRequestId(m.request_id);
  }
  void operator()(const Mark& m) {
    auto b = body.initMark();
    b.setText(m.text);
    b.setSimTimeNs(m.sim_time_ns);
    b.setRequestId(m.request_id);
  }
  void operator()(const EventsRequest& m) {
    auto b = body.initEventsRequest();
    b.setAfterSequence(m.after_sequence);
    b.setRequestId(m.request_id);
  }
  void operator()(const EventList& m) {
    auto b = body.initEventList();
    PutList(b.initEvents(m.events.size()), m.events, [](auto x, const auto& e) { Put(x, e); });
    b.setRequestId(m.request_id);
    b.setError(m.error);
  }
  void operator()(const StatusRequest&) { body.initStatusRequest(); }
  void operator()(const OperatorHello& m) { body.initOperatorHello().setToken(m.token); }
  void operator()(const PointCloud& m) {
    auto b = body.initPointCloud();
    Put(b.initHeader(), m.header);
    b.setDurationNs(m.duration_ns);
    b.setPointCount(m.point_count);
    b.setPointStride(m.point_stride);
    b.setPoints(AsData(m.points));
    b.setVehicleFrame(m.vehicle_frame);
  }
  void operator()(const RadarScan& m) {
    auto b = body.initRadarScan();
    Put(b.initHeader(), m.header);
    PutList(b.initDetections(m.detections.size()), m.detections, [](auto x, const auto& d) { Put(x, d); });
  }
  void operator()(const ImuMeasurement& m) {
    auto b = body.initImuMeasurement();
    Put(b.initHeader(), m.header);
    Put(b.initAngularVelocity(), m.angular_velocity_radps);
    Put(b.initAcceleration(), m.acceleration_mps2);
  }
  void operator()(const GnssMeasurement& m) {
    auto b = body.initGnssMeasurement();
    Put(b.initHeader(), m.header);
    b.setLatitudeDeg(m.latitude_deg);
    b.setLongitudeDeg(m.longitude_deg);
    b.setAltitudeM(m.altitude_m);
    Put(b.initVelocityEnu(), m.velocity_enu_mps);
    b.setHorizontalSigmaM(m.horizontal_sigma_m);
    b.setVerticalSigmaM(m.vertical_sigma_m);
  }
  void operator()(const CameraFrame& m) {
    auto b = body.initCameraFrame();
    Put(b.initHeader(), m.header);
    b.setWidth(m.width);
    b.setHeight(m.height);
    b.setFx(m.fx);
    b.setFy(m.fy);
    b.setCx(m.cx);
    b.setCy(m.cy);
    PutList(b.initRois(m.rois.size()), m.rois, [](auto x, const auto& r) { Put(x, r); });
    b.setEncoding(m.encoding);
    b.setImage(AsData(m.image));
  }
  void operator()(const FusedCloud& m) {
    auto b = body.initFusedCloud();
    b.setSensorId(m.sensor_id);
    b.setNodeId(m.node_id);
    b.setSequence(m.sequence);
    b.setReferenceNs(m.reference_ns);
    b.setEntityId(m.entity_id);
    PutList(b.initSources(m.sources.size()), m.sources, [](auto x, const auto& f) { Put(x, f); });
    b.setPointCount(m.point_count);
    b.setPointStride(m.point_stride);
    b.setPoints(AsData(m.points));
    b.setMotionCompensated(m.motion_compensated);
  }
  void operator()(const ObjectList& m) {
    auto b = body.initObjectList();
    Put(b.initHeader(), m.header);
    PutList(b.initObjects(m.objects.size()), m.objects, [](auto x, const DetectedObject& o) {
      x.setTrackId(o.track_id);
      x.setObjectClass(o.object_class);
      x.setTruthClass(o.truth_class);
      Put(x.initPosition(), o.position_m);
      Put(x.initVelocity(), o.velocity_mps);
      Put(x.initSize(), o.size_m);
    });
  }
};

// wire -> core, for one body.
// With `blob` set, the point blob of a PointCloud or FusedCloud is viewed there instead of copied.
std::optional<Message> ReadBody(wire::Envelope::Body::Reader body, std::string_view* blob = nullptr) {
  auto points = [&](capnp::Data::Reader d) {
    if (!blob) return FromData(d);
    *blob = std::string_view(reinterpret_cast<const char*>(d.begin()), d.size());
    return std::string();
  };
  using W = wire::Envelope::Body;
  switch (body.which()) {
    case W::JOIN: {
      auto r = body.getJoin();
      return Join{r.getName(),  CastEnum<Role>(r.getRole()),           r.getHost(),      r.getProtocolVersion(),
                  r.getPid(),   CastEnum<SessionPhase>(r.getSessionPhase()), r.getSimAnchorNs(), r.getRefAnchorNs(),
                  GetList<DataEndpoint>(r.getEndpoints()), r.getLockstepMember()};
    }
    case W::WELCOME: {
      auto r = body.getWelcome();
      return Welcome{r.getNodeId(),     r.getSessionName(), r.getHeartbeatIntervalNs(), r.getLostTimeoutNs(),
                     r.getServerTimeNs(), r.getTimePort(),  r.getWorldPort(),          r.getStatePort(),
                     r.getStepNs(),     r.getTimeControl(),      r.getStateToken(),
                     r.getSessionFile(), r.getSessionFilePath()};
    }
    case W::REFUSE: {
      auto r = body.getRefuse();
      return Refuse{r.getReason(), r.getServerProtocolVersion()};
    }
    case W::LEAVE: {
      auto r = body.getLeave();
      return Leave{r.getNodeId(), r.getReason()};
    }
    case W::HEARTBEAT: {
      auto r = body.getHeartbeat();
      return Heartbeat{r.getNodeId(), r.getSimTimeNs(), r.getClockOffsetNs(), r.getRttNs(), r.getRateCorrectionPpb()};
    }
    case W::TIME_REQUEST: {
      auto r = body.getTimeRequest();
      return TimeRequest{r.getNodeId(), r.getSequence(), r.getT1Ns()};
    }
    case W::TIME_REPLY: {
      auto r = body.getTimeReply();
      return TimeReply{r.getSequence(), r.getT1Ns(), r.getT2Ns(), r.getT3Ns()};
    }
    case W::NODE_STATE: {
      auto r = body.getNodeState();
      return NodeState{r.getNodeId(), r.getSequence(), GetEntities(r.getEntities(), r.getCompactEntities()),
                       r.getStepDone(), r.getNextStep(), r.getToken()};
    }
    case W::WORLD_STATE: {
      auto r = body.getWorldState();
      WorldState m;
      m.sequence = r.getSequence();
      m.server_time_ns = r.getServerTimeNs();
      m.sim_time_ns = r.getSimTimeNs();
      m.phase = CastEnum<SessionPhase>(r.getPhase());
      m.keyframe = r.getKeyframe();
      m.entities = GetEntities(r.getEntities(), r.getCompactEntities());
      for (uint64_t id : r.getRemovedEntities()) m.removed_entities.push_back(id);
      m.nodes = GetList<NodeInfo>(r.getNodes());
      m.step = r.getStep();
      m.sim_rate = r.getSimRate() == 0.0 ? 1.0 : r.getSimRate();
      m.events = GetList<LoggedEvent>(r.getEvents());
      m.keyframe_parts = r.getKeyframeParts();
      // A slice index past the slice count is no slice (garbage-safe: nothing is dropped on its word).
      m.keyframe_part = r.getKeyframePart();
      if (m.keyframe_part >= m.keyframe_parts) m.keyframe_part = m.keyframe_parts = 0;
      for (uint64_t id : r.getKeptEntities()) m.kept_entities.push_back(id);
      if (r.hasConditions()) m.conditions = GetConditions(r.getConditions());
      return m;
    }
    case W::SESSION_CONTROL: {
      auto r = body.getSessionControl();
      return SessionControl{CastEnum<SessionControl::Command>(r.getCommand()), r.getAtServerTimeNs(), r.getSimT0Ns(),
                            r.getSpeed(), r.getReason()};
    }
    case W::SESSION_STATUS: {
      auto r = body.getSessionStatus();
      return SessionStatus{CastEnum<SessionPhase>(r.getPhase()), r.getSimTimeNs(), r.getServerTimeNs(), r.getStartAtNs(),
                           r.getError()};
    }
    case W::PARAM_LIST: {
      auto r = body.getParamList();
      return ParamListRequest{r.getPrefix(), r.getRequestId()};
    }
    case W::PARAM_LIST_REPLY: {
      auto r = body.getParamListReply();
      ParamList m{GetList<Parameter>(r.getParams()), r.getRequestId(), {}};
      for (auto e : r.getErrors()) m.errors.emplace_back(e);
      return m;
    }
    case W::PARAM_GET: {
      auto r = body.getParamGet();
      return ParamGet{r.getPath(), r.getRequestId()};
    }
    case W::PARAM_SET: {
      auto r = body.getParamSet();
      return ParamSet{r.getPath(), r.getValue(), r.getRequestId()};
    }
    case W::PARAM_REPLY: {
      auto r = body.getParamReply();
      return ParamReply{r.getOk(), Get(r.getParam()), r.getError(), r.getRequestId()};
    }
    case W::MARK: {
      auto r = body.getMark();
      return Mark{r.getText(), r.getSimTimeNs(), r.getRequestId()};
    }
    case W::EVENTS_REQUEST: {
      auto r = body.getEventsRequest();
      return EventsRequest{r.getAfterSequence(), r.getRequestId()};
    }
    case W::EVENT_LIST: {
      auto r = body.getEventList();
      return EventList{GetList<LoggedEvent>(r.getEvents()), r.getRequestId(), r.getError()};
    }
    case W::STATUS_REQUEST:
      return StatusRequest{};
    case W::OPERATOR_HELLO:
      return OperatorHello{body.getOperatorHello().getToken()};
    case W::POINT_CLOUD: {
      auto r = body.getPointCloud();
      return PointCloud{Get(r.getHeader()), r.getDurationNs(), r.getPointCount(), r.getPointStride(),
                        points(r.getPoints()), r.getVehicleFrame()};
    }
    case W::RADAR_SCAN: {
      auto r = body.getRadarScan();
      return RadarScan{Get(r.getHeader()), GetList<RadarDetection>(r.getDetections())};
    }
    case W::IMU_MEASUREMENT: {
      auto r = body.getImuMeasurement();
      return ImuMeasurement{Get(r.getHeader()), Get(r.getAngularVelocity()), Get(r.getAcceleration())};
    }
    case W::GNSS_MEASUREMENT: {
      auto r = body.getGnssMeasurement();
      return GnssMeasurement{Get(r.getHeader()),    r.getLatitudeDeg(),       r.getLongitudeDeg(),
                             r.getAltitudeM(),      Get(r.getVelocityEnu()),  r.getHorizontalSigmaM(),
                             r.getVerticalSigmaM()};
    }
    case W::CAMERA_FRAME: {
      auto r = body.getCameraFrame();
      return CameraFrame{Get(r.getHeader()), r.getWidth(), r.getHeight(), r.getFx(), r.getFy(), r.getCx(), r.getCy(),
                         GetList<CameraRoi>(r.getRois()), r.getEncoding(), FromData(r.getImage())};
    }
    case W::FUSED_CLOUD: {
      auto r = body.getFusedCloud();
      return FusedCloud{r.getSensorId(), r.getNodeId(), r.getSequence(), r.getReferenceNs(), r.getEntityId(),
                        GetList<FusedSource>(r.getSources()), r.getPointCount(), r.getPointStride(),
                        points(r.getPoints()), r.getMotionCompensated()};
    }
    case W::OBJECT_LIST: {
      auto r = body.getObjectList();
      ObjectList m{Get(r.getHeader()), {}};
      const auto objects = r.getObjects();
      m.objects.reserve(objects.size());
      for (auto o : objects)
        m.objects.push_back(DetectedObject{o.getTrackId(), o.getObjectClass(), o.getTruthClass(), Get(o.getPosition()),
                                           Get(o.getVelocity()), Get(o.getSize())});
      return m;
    }
  }
  return std::nullopt;
}

// `blob_size`: the size of a blob decoded in place (the message's own `points` are empty then).
bool EnumsInRange(const Message& m, std::optional<size_t> blob_size = std::nullopt) {
  // Cap'n Proto keeps unknown enumerants as numbers; reject what this version cannot name.
  auto role_ok = [](Role r) { return r <= Role::kRecorder; };
  auto kind_ok = [](EntityKind k) { return k <= EntityKind::kStaticObject; };
  auto phase_ok = [](SessionPhase p) { return p <= SessionPhase::kStopped; };
  auto stream_ok = [](StreamKind k) { return k <= StreamKind::kObjects; };
  auto endpoints_ok = [&](const std::vector<DataEndpoint>& es) {
    for (const auto& e : es)
      if (!stream_ok(e.kind)) return false;
    return true;
  };
  // Packed point blobs must hold exactly count x stride bytes.
  auto blob_ok = [&](uint32_t count, uint16_t stride, const std::string& bytes) {
    return static_cast<uint64_t>(count) * stride == blob_size.value_or(bytes.size());
  };
  if (auto* p = std::get_if<PointCloud>(&m))
    return stream_ok(p->header.kind) && blob_ok(p->point_count, p->point_stride, p->points);
  if (auto* f = std::get_if<FusedCloud>(&m)) {
    for (const auto& src : f->sources)
      if (src.status > SourceStatus::kMissing) return false;
    return blob_ok(f->point_count, f->point_stride, f->points) && FusedGroups(*f).has_value();
  }
  auto entities_ok = [&](const std::vector<EntityState>& es) {
    for (const auto& e : es)
      if (!kind_ok(e.kind)) return false;
    return true;
  };
  if (auto* j = std::get_if<Join>(&m)) return role_ok(j->role) && phase_ok(j->session_phase) && endpoints_ok(j->endpoints);
  if (auto* n = std::get_if<NodeState>(&m)) return entities_ok(n->entities);
  if (auto* w = std::get_if<WorldState>(&m)) {
    for (const auto& n : w->nodes)
      if (!role_ok(n.role) || !endpoints_ok(n.endpoints)) return false;
    const bool rate_ok = std::isfinite(w->sim_rate) && w->sim_rate > 0 && w->sim_rate <= 1000;
    return phase_ok(w->phase) && entities_ok(w->entities) && rate_ok;
  }
  if (auto* o = std::get_if<ObjectList>(&m)) {
    for (const auto& obj : o->objects)
      if (obj.object_class > 5 || obj.truth_class > 5) return false;
    return stream_ok(o->header.kind);
  }
  if (auto* s = std::get_if<SessionStatus>(&m)) return phase_ok(s->phase);
  if (auto* c = std::get_if<SessionControl>(&m))
    return c->command <= SessionControl::Command::kRestart &&
           (c->command != SessionControl::Command::kSpeed || (std::isfinite(c->speed) && c->speed > 0 && c->speed <= 1000));
  return true;
}

}  // namespace

std::string_view DecodeErrorName(DecodeError error) {
  switch (error) {
    case DecodeError::kNone: return "none";
    case DecodeError::kBadSize: return "bad_size";
    case DecodeError::kMalformed: return "malformed";
    case DecodeError::kBadMagic: return "bad_magic";
    case DecodeError::kVersionMismatch: return "version_mismatch";
    case DecodeError::kUnknownBody: return "unknown_body";
  }
  return "unknown";
}

// Words to give the builder's first segment: large blobs (clouds, images) then fit in one allocation.
unsigned FirstSegmentWords(const Message& message) {
  size_t blob = 0;
  if (const auto* p = std::get_if<PointCloud>(&message)) blob = p->points.size();
  if (const auto* f = std::get_if<FusedCloud>(&message)) blob = f->points.size();
  if (const auto* c = std::get_if<CameraFrame>(&message)) blob = c->image.size();
  return static_cast<unsigned>(std::max<size_t>(capnp::SUGGESTED_FIRST_SEGMENT_WORDS, blob / sizeof(capnp::word) + 4096));
}

std::string EncodeWithVersion(const Message& message, uint16_t version) {
  capnp::MallocMessageBuilder builder(FirstSegmentWords(message));
  auto env = builder.initRoot<wire::Envelope>();
  env.setMagic(wire::MAGIC);
  env.setVersion(version);
  std::visit(BodyWriter{env.initBody()}, message);
  // Serialised straight into the string: large point clouds are copied once less.
  std::string out(capnp::computeSerializedSizeInWords(builder) * sizeof(capnp::word), '\0');
  kj::ArrayOutputStream stream(kj::arrayPtr(reinterpret_cast<kj::byte*>(out.data()), out.size()));
  capnp::writeMessage(stream, builder);
  return out;
}

std::string Encode(const Message& message) { return EncodeWithVersion(message, kProtocolVersion); }

namespace {
Decoded DecodeImpl(std::string_view bytes, std::string_view* blob) {
  Decoded out;
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    out.error = DecodeError::kBadSize;
    out.detail = "size " + std::to_string(bytes.size()) + " is not a non-zero multiple of 8 bytes";
    return out;
  }
  // Cap'n Proto reads words in place; bytes that are not 8-byte aligned are copied into aligned storage.
  kj::Array<capnp::word> copy;
  kj::ArrayPtr<const capnp::word> words;
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(capnp::word) == 0) {
    words = kj::arrayPtr(reinterpret_cast<const capnp::word*>(bytes.data()), bytes.size() / sizeof(capnp::word));
  } else if (blob) {
    out.error = DecodeError::kBadSize;
    out.detail = "bytes are not 8-byte aligned: a decode in place cannot copy them";
    return out;
  } else {
    copy = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
    std::memcpy(copy.begin(), bytes.data(), bytes.size());
    words = copy.asPtr();
  }

  kj::Maybe<kj::Exception> failure = kj::runCatchingExceptions([&]() {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = std::min<uint64_t>(kTraversalLimitWords, kTraversalWordsPerWord * words.size() + 64);
    capnp::FlatArrayMessageReader reader(words, options);
    auto env = reader.getRoot<wire::Envelope>();
    if (env.getMagic() != wire::MAGIC) {
      out.error = DecodeError::kBadMagic;
      out.detail = "magic is not PLTN";
      return;
    }
    out.peer_version = env.getVersion();
    if (blob) *blob = {};
    auto message = ReadBody(env.getBody(), blob);
    if (!message || !EnumsInRange(*message, blob ? std::optional<size_t>(blob->size()) : std::nullopt)) {
      out.error = DecodeError::kUnknownBody;
      out.detail = "body or enumerant unknown to protocol version " + std::to_string(kProtocolVersion);
      return;
    }
    if (out.peer_version < kOldestReadableVersion || out.peer_version > kProtocolVersion) {
      out.error = DecodeError::kVersionMismatch;
      out.detail = "peer speaks protocol version " + std::to_string(out.peer_version) + ", this build speaks " +
                   std::to_string(kProtocolVersion);
      // Join and Refuse stay readable across versions so both ends can refuse clearly.
      if (std::holds_alternative<Join>(*message) || std::holds_alternative<Refuse>(*message)) out.message = std::move(message);
      return;
    }
    out.message = std::move(message);
  });
  KJ_IF_MAYBE(e, failure) {
    out.message.reset();
    if (blob) *blob = {};
    out.error = DecodeError::kMalformed;
    out.detail = std::string("malformed message: ") + e->getDescription().cStr();
  }
  return out;
}
}  // namespace

Decoded Decode(std::string_view bytes) { return DecodeImpl(bytes, nullptr); }

Decoded DecodeInPlace(std::string_view bytes, std::string_view* blob) {
  Decoded d = DecodeImpl(bytes, blob);
  if (!d.message) *blob = {};
  return d;
}

std::string_view EncodeFusedInPlace(const FusedCloud& message, char* blob, size_t blob_bytes, size_t headroom) {
  constexpr size_t kWord = sizeof(capnp::word);
  if (!message.points.empty()) throw std::invalid_argument("EncodeFusedInPlace: the message's points must be empty");
  if (reinterpret_cast<uintptr_t>(blob) % kWord != 0) throw std::invalid_argument("EncodeFusedInPlace: blob not 8-byte aligned");
  const size_t padded = (blob_bytes + kWord - 1) / kWord * kWord;
  std::memset(blob + blob_bytes, 0, padded - blob_bytes);
  capnp::MallocMessageBuilder builder(1024);
  auto env = builder.initRoot<wire::Envelope>();
  env.setMagic(wire::MAGIC);
  env.setVersion(kProtocolVersion);
  BodyWriter{env.initBody()}(message);
  // Every other part is allocated by now; the blob joins as an external segment (the last one).
  const bool external = blob_bytes > 0;
  if (external) {
    auto orphan = builder.getOrphanage().referenceExternalData(
        capnp::Data::Reader(reinterpret_cast<const kj::byte*>(blob), blob_bytes));
    env.getBody().getFusedCloud().adoptPoints(kj::mv(orphan));
  }
  const auto segments = builder.getSegmentsForOutput();
  const size_t n = segments.size();
  const size_t own = external ? n - 1 : n;  // segments written into the headroom
  if (external && (n < 2 || reinterpret_cast<const char*>(segments[n - 1].begin()) != blob))
    throw std::logic_error("EncodeFusedInPlace: the blob is not the message's last segment");
  // Stream framing (capnp/serialize.h): segment count - 1, each segment's size in words, padded to a word.
  const size_t table_words = (n + 2) / 2;
  size_t head = table_words * kWord;
  for (size_t i = 0; i < own; ++i) head += segments[i].size() * kWord;
  if (head > headroom) throw std::length_error("EncodeFusedInPlace: envelope of " + std::to_string(head) +
                                               " bytes does not fit the headroom of " + std::to_string(headroom));
  char* start = blob - head;
  std::vector<uint32_t> table(table_words * 2, 0);
  table[0] = static_cast<uint32_t>(n - 1);
  for (size_t i = 0; i < n; ++i) table[i + 1] = static_cast<uint32_t>(segments[i].size());
  for (auto& v : table)
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(start, table.data(), table_words * kWord);
  char* at = start + table_words * kWord;
  for (size_t i = 0; i < own; ++i) {
    std::memcpy(at, segments[i].begin(), segments[i].size() * kWord);
    at += segments[i].size() * kWord;
  }
  return std::string_view(start, head + padded);
}

}  // namespace platoon::protocol
