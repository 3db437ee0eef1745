#include "platoon/node/fusion.hpp"

#include "platoon/dead_reckoning.hpp"
#include "platoon/entity_id.hpp"
#include "platoon/node/encoded_publisher.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"
#include "platoon/sensors/pcd.hpp"
#include "platoon/sensors/sensor_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <utility>

namespace platoon::node {
namespace {

// Rigid transform as a 3x3 rotation and a translation (faster to apply than a quaternion).
struct Rigid {
  Eigen::Matrix3d r = Eigen::Matrix3d::Identity();
  Vec3 t = Vec3::Zero();
  Vec3 Apply(const Vec3& p) const { return r * p + t; }
  // Single precision for the points (they are floats on the wire); the transform is composed in double.
  Eigen::Matrix3f RF() const { return r.cast<float>(); }
  Eigen::Vector3f TF() const { return t.cast<float>(); }
  Rigid Then(const Rigid& inner) const { return Rigid{r * inner.r, r * inner.t + t}; }  // this * inner
  Rigid Inverse() const { return Rigid{r.transpose(), -(r.transpose() * t)}; }
};
Rigid FromPose(const Pose& p) { return Rigid{p.orientation.toRotationMatrix(), p.position_m}; }

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q / 100.0 * static_cast<double>(v.size())))];
}

}  // namespace

FusionDef ReadFusionDef(const config::Table& t) {
  FusionDef d;
  d.sources = t.GetStringArray("sources", {});
  if (d.sources.empty() || d.sources.size() > 255) t.Fail("sources", "expected 1 to 255 lidar stream ids");
  for (size_t i = 0; i < d.sources.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (d.sources[i] == d.sources[j]) t.Fail("sources", "stream id \"" + d.sources[i] + "\" is listed twice");
  d.stream_id = t.GetString("stream_id", d.stream_id);
  d.period_s = t.GetDouble("period_s", d.period_s, 1e-3, 10);
  d.timeout_s = t.GetDouble("timeout_s", d.timeout_s, 0, 10);
  d.motion_compensation = t.GetBool("motion_compensation", d.motion_compensation);
  d.voxel_m = t.GetDouble("voxel_m", d.voxel_m, 0, 100);
  d.ground_removal = t.GetBool("ground_removal", d.ground_removal);
  d.clustering = t.GetBool("clustering", d.clustering);
  d.cluster_tolerance_m = t.GetDouble("cluster_tolerance_m", d.cluster_tolerance_m, 0.01, 100);
  d.record_path = t.GetString("record", d.record_path);
  d.pcd_dir = t.GetString("pcd_dir", d.pcd_dir);
  d.pcd_every = static_cast<int>(t.GetInt("pcd_every", d.pcd_every, 0, 1000000));
  d.pcd_binary = t.GetString("pcd_format", "binary", {"binary", "ascii"}) == "binary";
  if (d.pcd_every > 0 && d.pcd_dir.empty()) t.Fail("pcd_every", "needs pcd_dir");
  t.RejectUnknownKeys();
  return d;
}

// --- EgoTrack ---

void EgoTrack::Add(const KinematicState& state, double horizon_s) {
  if (!states_.empty() && state.stamp_ns <= states_.back().stamp_ns) return;
  states_.push_back(state);
  while (states_.size() > 2 && state.stamp_ns - states_.front().stamp_ns > SToNs(horizon_s)) states_.pop_front();
}

Pose EgoTrack::PoseAt(int64_t t_ns) const {
  // Newest state not after t (binary search), else the oldest.
  auto it = std::upper_bound(states_.begin(), states_.end(), t_ns,
                             [](int64_t t, const KinematicState& s) { return t < s.stamp_ns; });
  const KinematicState& base = it == states_.begin() ? states_.front() : *std::prev(it);
  return dr::Extrapolate(dr::Model::kRvb, base, t_ns);
}

// --- FuseClouds ---

std::optional<ReceivedCloud> DecodeReceivedCloud(transport::SharedBytes bytes) {
  if (reinterpret_cast<uintptr_t>(bytes.view.data()) % 8 != 0) bytes = transport::SharedBytes(std::string(bytes.view));
  std::string_view blob;
  auto d = protocol::DecodeInPlace(bytes.view, &blob);
  auto* cloud = d.message ? std::get_if<protocol::PointCloud>(&*d.message) : nullptr;
  if (!cloud) return std::nullopt;
  // Times the assembler and the fuser add up (scan end = stamp + duration) without overflowing: a scan
  // of at most an hour, stamped within about 146 years of sim time 0. Anything else is hostile or broken.
  constexpr int64_t kMaxDurationNs = 3'600'000'000'000, kMaxStampNs = int64_t{1} << 62;
  if (cloud->duration_ns < 0 || cloud->duration_ns > kMaxDurationNs || cloud->header.stamp_ns > kMaxStampNs ||
      cloud->header.stamp_ns < -kMaxStampNs)
    return std::nullopt;
  ReceivedCloud r;
  r.blob_offset = blob.empty() ? 0 : static_cast<size_t>(blob.data() - bytes.view.data());
  r.blob_size = blob.size();
  r.bytes = std::move(bytes);
  r.cloud = std::move(*cloud);
  return r;
}

uint32_t FuseCloudInto(const protocol::PointCloud& cloud, std::string_view blob, uint8_t source, int64_t reference_ns,
                       const std::function<Pose(int64_t)>& ego_pose, bool compensate, char* out) {
  // A malformed blob (stride below the record, too short) contributes no points.
  if (!PointRecordsFit(blob, cloud.point_count, cloud.point_stride)) return 0;
  const auto& h = cloud.header;
  const Rigid mount = FromPose(Pose{h.mount_position_m, h.mount_orientation});
  const Rigid ref_inv = compensate ? FromPose(ego_pose(reference_ns)).Inverse() : Rigid{};
  // (F1) composed exactly at knots kCompensationKnotNs apart on the scan's time axis; a column's transform
  // is interpolated linearly between the two knots around its firing time (docs/FUSION.md). The pair of
  // knots is kept while the columns stay between them, so a scan evaluates the ego pose about once per
  // knot instead of once per column.
  const auto exact = [&](int64_t knot_index) {
    int64_t at = 0;  // a stamp so near the end of time that the knot overflows (hostile bytes): the stamp
    if (__builtin_add_overflow(h.stamp_ns, knot_index * kCompensationKnotNs, &at)) at = h.stamp_ns;
    return ref_inv.Then(FromPose(ego_pose(at))).Then(mount);
  };
  int64_t knot = 0;  // index of the first knot of the pair held, once have_knots
  bool have_knots = false;
  Rigid k0, k1;
  float cached_offset = std::numeric_limits<float>::quiet_NaN();
  Eigen::Matrix3f r = mount.RF();
  Eigen::Vector3f t = mount.TF();
  const char* in = blob.data();
  const size_t stride = cloud.point_stride;
  const uint32_t n = cloud.point_count;
  const auto transform_for = [&](float time_offset_s) {
    if (!compensate || time_offset_s == cached_offset) return;
    cached_offset = time_offset_s;
    // Not a time within the scan's reach (NaN, infinite, beyond +-kMaxTimeOffsetS): the scan's start.
    const double offset_ns =
        std::abs(time_offset_s) <= kMaxTimeOffsetS ? static_cast<double>(time_offset_s) * 1e9 : 0.0;
    const auto q = static_cast<int64_t>(std::floor(offset_ns / static_cast<double>(kCompensationKnotNs)));
    if (!have_knots || q != knot) {
      if (have_knots && q == knot + 1) {  // the next pair: one new knot
        k0 = k1;
        k1 = exact(q + 1);
      } else if (have_knots && q == knot - 1) {  // the pair before (columns in falling time order)
        k1 = k0;
        k0 = exact(q);
      } else {
        k0 = exact(q);
        k1 = exact(q + 1);
      }
      knot = q;
      have_knots = true;
    }
    const double w = (offset_ns - static_cast<double>(q * kCompensationKnotNs)) / static_cast<double>(kCompensationKnotNs);
    r = (k0.r + w * (k1.r - k0.r)).cast<float>();
    t = (k0.t + w * (k1.t - k0.t)).cast<float>();
  };
  if constexpr (std::endian::native == std::endian::little) {
    // Straight from the received bytes to the output: the fields that do not change are copied as one
    // block, the position and source written over it. Going through a PointRecord on the stack cost two
    // thirds of this loop: its fields are written one by one and then read back as whole words, which the
    // CPU cannot forward from the pending small stores and so waits for.
    using namespace point_record;
    for (uint32_t i = 0; i < n; ++i, in += stride, out += kStride) {
      float xyz[3], time_offset_s;
      std::memcpy(xyz, in + kOffsetX, sizeof xyz);
      std::memcpy(&time_offset_s, in + kOffsetTime, sizeof time_offset_s);
      transform_for(time_offset_s);
      const Eigen::Vector3f v = r * Eigen::Vector3f(xyz[0], xyz[1], xyz[2]) + t;
      std::memcpy(out + kOffsetIntensity, in + kOffsetIntensity, kStride - kOffsetIntensity);
      const float x = v.x(), y = v.y(), z = v.z();
      std::memcpy(out + kOffsetX, &x, sizeof x);
      std::memcpy(out + kOffsetY, &y, sizeof y);
      std::memcpy(out + kOffsetZ, &z, sizeof z);
      out[kOffsetSource] = static_cast<char>(source);
    }
    return n;
  }
  for (uint32_t i = 0; i < n; ++i, in += stride, out += point_record::kStride) {
    PointRecord p = ReadPointRecord(in);
    transform_for(p.time_offset_s);
    const Eigen::Vector3f v = r * Eigen::Vector3f(p.x_m, p.y_m, p.z_m) + t;
    p.x_m = v.x();
    p.y_m = v.y();
    p.z_m = v.z();
    p.source = source;
    WritePointRecord(p, out);
  }
  return n;
}

std::vector<sensors::CloudPoint> FuseClouds(std::span<const SourceCloud> clouds, int64_t reference_ns,
                                            const std::function<Pose(int64_t)>& ego_pose, bool compensate) {
  size_t total = 0;
  for (const auto& c : clouds) total += c.cloud->point_count;
  std::vector<sensors::CloudPoint> out(total);
  size_t n = 0;
  for (const auto& c : clouds)
    n += FuseCloudInto(*c.cloud, c.cloud->points, c.source, reference_ns, ego_pose, compensate,
                       reinterpret_cast<char*>(out.data() + n));
  out.resize(n);
  return out;
}

// --- FrameFuser ---

namespace {
constexpr size_t kRecord = point_record::kStride;
}  // namespace

FrameFuser::FrameFuser(size_t sources) : slots_(sources) {}

void FrameFuser::Open(size_t min_bytes) {
  // A buffer nobody else holds (the socket releases its reference once a frame is sent, the record and PCD
  // writers once they wrote it) that fits a frame like the last one; a new one, with room to spare, only
  // while every buffer is still in flight.
  const size_t fits = std::max(min_bytes, last_frame_bytes_);
  const auto free = [](const std::shared_ptr<Buffer>& b) { return b.use_count() == 1; };
  const auto fit = std::find_if(pool_.begin(), pool_.end(), [&](const auto& b) { return free(b) && b->blob_capacity >= fits; });
  if (fit != pool_.end()) {
    // The last other holder (the socket's I/O thread, a writer thread) has let go: its reads of the buffer
    // happen before our writes.
    std::atomic_thread_fence(std::memory_order_acquire);
    open_ = *fit;
  } else {
    // The first frame: room for every source's cloud the size of the first.
    const size_t want = last_frame_bytes_ ? fits + fits / 4 : min_bytes * slots_.size() + min_bytes / 4;
    auto b = std::make_shared<Buffer>();
    b->blob_capacity = (std::max(want, min_bytes) + 4095) / 4096 * 4096;
    b->words.reset(new uint64_t[(protocol::kFusedHeadroomBytes + b->blob_capacity) / sizeof(uint64_t)]);
    ++allocated_;
    // It replaces a free buffer that was too small; otherwise it joins the pool, so that every frame in
    // flight (a record queue filled by a stalled disk holds 20) has its buffer back once it is let go.
    const auto small = std::find_if(pool_.begin(), pool_.end(), free);
    if (small != pool_.end()) *small = b;
    else if (pool_.size() < kMaxPooledBuffers) pool_.push_back(b);
    open_ = b;
  }
  used_ = 0;
  // Free buffers beyond kFreeBuffersKept go back to the system: what a stall put in flight is not held for ever.
  size_t kept = 0;
  std::erase_if(pool_, [&](const auto& b) { return free(b) && ++kept > kFreeBuffersKept; });
}

void FrameFuser::Grow(size_t min_bytes) {
  // A frame larger than the buffer (the first frames, or more points): twice the room, the blob so far copied.
  const std::shared_ptr<Buffer> old = std::move(open_);
  const size_t used = used_, last = last_frame_bytes_;
  last_frame_bytes_ = std::max(min_bytes, 2 * old->blob_capacity);
  Open(min_bytes);
  last_frame_bytes_ = last;
  std::memcpy(open_->Blob(), old->Blob(), used * kRecord);
  moved_bytes_ += used * kRecord;
  used_ = used;
}

void FrameFuser::Remove(size_t source) {
  Slot& s = slots_[source];
  if (!s.cloud) return;
  // The groups after it (arrived later) move down: only for a replaced or dropped cloud.
  const size_t end = s.offset + s.count;
  if (end < used_) {
    std::memmove(open_->Blob() + s.offset * kRecord, open_->Blob() + end * kRecord, (used_ - end) * kRecord);
    moved_bytes_ += (used_ - end) * kRecord;
  }
  for (auto& other : slots_)
    if (other.cloud && other.offset > s.offset) other.offset -= s.count;
  used_ -= s.count;
  s = Slot{};
}

void FrameFuser::Add(size_t source, ReceivedCloud cloud, const std::function<Pose(int64_t)>& ego_pose,
                     bool compensate) {
  if (source >= slots_.size()) return;
  const uint32_t count = PointRecordsFit(cloud.Blob(), cloud.cloud.point_count, cloud.cloud.point_stride)
                             ? cloud.cloud.point_count
                             : 0;
  if (!open_) Open(static_cast<size_t>(count) * kRecord);
  Remove(source);
  if ((used_ + count) * kRecord > open_->blob_capacity) Grow((used_ + count) * kRecord);
  // Its group goes after the groups of the clouds that came before it: nothing already fused moves.
  const size_t at = used_;
  Slot& s = slots_[source];
  s.offset = at;
  s.count = count;
  s.fused_ref = cloud.cloud.header.stamp_ns + cloud.cloud.duration_ns;
  s.compensated = compensate;
  FuseCloudInto(cloud.cloud, cloud.Blob(), static_cast<uint8_t>(source), s.fused_ref, ego_pose, compensate,
                open_->Blob() + at * kRecord);
  s.cloud = std::move(cloud);
  used_ += count;
}

FrameFuser::Result FrameFuser::Finish(const std::vector<bool>& keep, int64_t reference_ns,
                                      const std::function<Pose(int64_t)>& ego_pose, bool compensate) {
  if (!open_) Open(0);
  Result r;
  r.clouds.resize(slots_.size());
  r.groups.assign(slots_.size(), {0, 0});
  for (size_t i = 0; i < slots_.size(); ++i)
    if (i >= keep.size() || !keep[i]) Remove(i);
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (!s.cloud) continue;
    // Fused on arrival at its own scan end; a frame whose reference (or compensation) differs re-fuses it.
    if (s.compensated != compensate || (compensate && s.fused_ref != reference_ns)) {
      FuseCloudInto(s.cloud->cloud, s.cloud->Blob(), static_cast<uint8_t>(i), reference_ns, ego_pose, compensate,
                    open_->Blob() + s.offset * kRecord);
      ++refused_;
    }
    r.groups[i] = {static_cast<uint32_t>(s.offset), s.count};
    r.clouds[i] = std::move(s.cloud);
    s = Slot{};
  }
  r.buffer = std::move(open_);
  r.blob = r.buffer->Blob();
  r.count = static_cast<uint32_t>(used_);
  last_frame_bytes_ = used_ * kRecord;
  used_ = 0;
  return r;
}

// --- FrameAssembler ---

FrameAssembler::FrameAssembler(std::vector<std::string> sources, int64_t period_ns, int64_t timeout_ns)
    : sources_(std::move(sources)), period_ns_(period_ns), timeout_ns_(timeout_ns), pending_(sources_.size()),
      last_used_stamp_(sources_.size(), INT64_MIN), late_since_last_(sources_.size(), false) {}

int FrameAssembler::SourceIndex(const std::string& sensor_id) const {
  for (size_t i = 0; i < sources_.size(); ++i)
    if (sources_[i] == sensor_id) return static_cast<int>(i);
  return -1;
}

bool FrameAssembler::Offer(protocol::PointCloud cloud, int64_t now_ns) {
  const int i = SourceIndex(cloud.header.sensor_id);
  if (i < 0) return false;
  const int64_t end = cloud.header.stamp_ns + cloud.duration_ns;
  // Stale: from a cycle already published, or not newer than what this source gave last.
  // Clouds belong to the cycle their scan ends in; a cycle already published takes no more clouds.
  const bool old_cycle = last_reference_ns_ != INT64_MIN && end < last_reference_ns_ + period_ns_ / 2;
  if (cloud.header.stamp_ns <= last_used_stamp_[i] || old_cycle) {
    ++stale_;
    late_since_last_[i] = true;
    return false;
  }
  auto& slot = pending_[i];
  if (slot) {
    if (slot->header.stamp_ns >= cloud.header.stamp_ns) {
      ++stale_;
      return false;
    }
    ++replaced_;
  }
  slot = std::move(cloud);
  if (opened_ns_ < 0) opened_ns_ = now_ns;
  return true;
}

bool FrameAssembler::Due(int64_t now_ns) const {
  if (opened_ns_ < 0) return false;
  if (now_ns - opened_ns_ >= timeout_ns_) return true;
  return std::all_of(pending_.begin(), pending_.end(), [](const auto& p) { return p.has_value(); });
}

FrameAssembler::Frame FrameAssembler::Take() {
  Frame f;
  f.opened_ns = opened_ns_;
  f.reference_ns = INT64_MIN;
  for (const auto& p : pending_)
    if (p) f.reference_ns = std::max(f.reference_ns, p->header.stamp_ns + p->duration_ns);
  for (size_t i = 0; i < sources_.size(); ++i) {
    auto& p = pending_[i];
    protocol::FusedSource m;
    m.sensor_id = sources_[i];
    // A cloud from an older cycle than the frame's newest never joins it.
    if (p && p->header.stamp_ns + p->duration_ns <= f.reference_ns - period_ns_ / 2) {
      ++stale_;
      late_since_last_[i] = true;
      p.reset();
    }
    if (p) {
      m.stamp_ns = p->header.stamp_ns;
      m.point_count = p->point_count;
      m.status = protocol::SourceStatus::kOk;
      m.host_epoch = p->header.host_epoch;
      m.sequence = p->header.sequence;
      last_used_stamp_[i] = p->header.stamp_ns;
      late_since_last_[i] = false;
    } else {
      m.status = late_since_last_[i] ? protocol::SourceStatus::kLate : protocol::SourceStatus::kMissing;
      late_since_last_[i] = false;
    }
    f.meta.push_back(std::move(m));
    f.clouds.push_back(std::move(p));
    p.reset();
  }
  if (f.reference_ns != INT64_MIN) last_reference_ns_ = f.reference_ns;
  opened_ns_ = -1;
  return f;
}

// --- Recording ---

namespace {
// `path`, or the first of <stem>.1<ext>, <stem>.2<ext>, ... that does not exist yet.
std::string FreeRecordPath(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) return path;
  const fs::path p(path);
  for (int n = 1; n < 100000; ++n) {
    fs::path candidate = p.parent_path() / (p.stem().string() + "." + std::to_string(n) + p.extension().string());
    if (!fs::exists(candidate)) return candidate.string();
  }
  throw std::runtime_error(path + ": no free record name next to it");
}
}  // namespace

FusedRecorder::FusedRecorder(const std::string& path) : path_(FreeRecordPath(path)) {
  std::string error;
  writer_ = session_log::Writer::Open(path_, &error);
  if (!writer_) throw std::runtime_error(path_ + ": cannot open the fused-frame record for writing: " + error);
}

FusedRecorder::FusedRecorder(mcap::Sink& sink) : path_(sink.Name()), writer_(std::make_unique<session_log::Writer>(sink)) {}

FusedRecorder::~FusedRecorder() { (void)writer_->Close(); }

bool FusedRecorder::Write(const protocol::FusedCloud& frame) {
  return WriteEncoded(protocol::Encode(frame), frame.sensor_id, frame.reference_ns);
}

bool FusedRecorder::WriteEncoded(std::string_view wire, const std::string& stream_id, int64_t reference_ns) {
  if (!writer_->Error().empty()) return false;
  const auto* data = reinterpret_cast<const uint8_t*>(wire.data());
  const std::string topic = session_log::DataTopic(stream_id.empty() ? "fused" : stream_id);
  // One chunk per frame: a crash mid-write loses only that frame.
  if (!writer_->WriteEnvelope(topic, std::span(data, wire.size()), reference_ns, 0).Ok() || !writer_->Flush().Ok())
    return false;
  ++frames_;
  return true;
}

// --- FusedRecordThread ---

FusedRecordThread::FusedRecordThread(std::unique_ptr<FusedRecorder> recorder, size_t max_bytes)
    : recorder_(std::move(recorder)), path_(recorder_->Path()), writer_("fused-frame record " + path_, max_bytes) {}

// writer_ goes first (the queue written for at most kCloseWait, its thread joined), then the record closes
// (its summary and footer).
FusedRecordThread::~FusedRecordThread() = default;

bool FusedRecordThread::Push(std::string_view wire, std::shared_ptr<const void> owner, const std::string& stream_id,
                             int64_t reference_ns) {
  FusedRecorder* recorder = recorder_.get();
  return writer_.Push(
      [recorder, wire, owner = std::move(owner), stream_id, reference_ns, path = path_] {
        bool ok = false;
        try {
          ok = recorder->WriteEncoded(wire, stream_id, reference_ns);
        } catch (const std::exception& e) {  // out of memory: the record stops, the process goes on
          throw std::runtime_error(path + ": " + e.what());
        }
        if (!ok) throw std::runtime_error(recorder->Error().empty() ? path + ": the record has stopped" : recorder->Error());
      },
      wire.size());
}

std::vector<protocol::FusedCloud> ReadFusedRecord(const std::string& path, bool* truncated,
                                                  std::vector<std::string>* problems) {
  std::vector<protocol::FusedCloud> out;
  uint64_t others = 0;
  const auto result = session_log::Read(path, [&](const session_log::Entry& e) {
    const auto d = protocol::Decode(std::string_view(reinterpret_cast<const char*>(e.data.data()), e.data.size()));
    const auto* f = d.message ? std::get_if<protocol::FusedCloud>(&*d.message) : nullptr;
    if (f) out.push_back(*f);
    else ++others;
  });
  // No MCAP at all (garbage, an old-format record, no such file): nothing can be trusted.
  if (!result.problems.empty() && result.stopped_at == 0 && out.empty())
    throw std::runtime_error(result.problems.front().message);
  if (truncated) *truncated = !result.complete;
  if (problems)
    for (const auto& p : result.problems) problems->push_back(p.message);
  (void)others;
  return out;
}

// --- FusionModule ---

int64_t LastScanEndNs(int64_t t_ns, int64_t period_ns) {
  assert(period_ns > 0);
  const int64_t q = t_ns / period_ns;
  return (t_ns % period_ns < 0 ? q - 1 : q) * period_ns;  // floor, also before sim time 0
}

struct FusionModule::Stats {
  uint64_t frames = 0, clouds_in = 0, stale = 0, bad = 0, no_ego = 0;
  uint64_t waits = 0, wait_expired = 0;  // lock-step: steps that waited for clouds in flight; waits that ran out
  double wait_ms_max = 0;
  std::map<std::string, uint64_t> bytes_in;
  std::map<std::string, uint64_t> ok, missing, late;
  std::vector<double> fuse_ms, latency_ms;
  std::vector<int> sources_per_frame;
  double precision_sum = 0, recall_sum = 0, position_error_sum = 0;
  uint64_t scored = 0;
  int64_t first_ns = -1, last_ns = -1;
};

FusionModule::FusionModule(const config::SessionDef& session, const config::NodeDef& node,
                           std::shared_ptr<spdlog::logger> log)
    : log_(std::move(log)), ego_id_(AttachedVehicleId(node.attach_to)), stats_(std::make_unique<Stats>()) {
  if (!node.fusion) throw config::ConfigError(session.file + ": node \"" + node.name + "\" has role fusion but no [node.fusion]");
  def_ = ReadFusionDef(*node.fusion);
  assembler_ = std::make_unique<FrameAssembler>(def_.sources, SToNs(def_.period_s), SToNs(def_.timeout_s));
  fuser_ = std::make_unique<FrameFuser>(def_.sources.size());
  if (!def_.record_path.empty()) {
    recorder_ = std::make_unique<FusedRecordThread>(std::make_unique<FusedRecorder>(def_.record_path));
    if (recorder_->Path() != def_.record_path)
      log_->warn("{} exists (an earlier run): recording fused frames to {} instead", def_.record_path, recorder_->Path());
  }
  if (!def_.pcd_dir.empty()) std::filesystem::create_directories(def_.pcd_dir);
  if (def_.pcd_every > 0) pcd_writer_ = std::make_unique<WriterThread>("PCD export to " + def_.pcd_dir, kPcdQueueBytes);
  for (const auto& b : session.scene.boxes)
    truth_.push_back(sensors::TruthObject{b.id, b.position_m + Vec3(0, 0, 0.5 * b.size_m.z()), b.size_m});
  // Lock-step: each source's period from the [[node.sensor]] that publishes it (hosts measure at whole
  // multiples of it); a source not in the session file is taken to scan at period_s.
  lockstep_.resize(def_.sources.size(), LockstepSource{SToNs(def_.period_s)});
  for (const auto& other : session.nodes)
    for (const auto& t : other.sensors) {
      std::optional<sensors::SensorSpec> spec;
      try {
        spec = sensors::ReadSensorSpec(t);
      } catch (const config::ConfigError&) {
        continue;  // that host reports its own config error
      }
      const int i = assembler_->SourceIndex(spec->id);
      if (i >= 0) lockstep_[static_cast<size_t>(i)].period_ns = SToNs(1.0 / spec->rate_hz);
    }
  // Half the server's step deadline: the fusion still acknowledges before the server names it late.
  wait_budget_ns_ = SToNs(0.5 * session.step.deadline_s);
}

FusionModule::~FusionModule() = default;

std::vector<protocol::DataEndpoint> FusionModule::Streams() const {
  return {protocol::DataEndpoint{def_.stream_id, protocol::StreamKind::kFused, 0, ""}};
}

void FusionModule::Step(const StepInfo& info, ModuleContext& context) {
  if (!subscribed_) {
    context.SubscribeData(def_.sources);
    subscribed_ = true;
  }
  for (const auto& r : context.RemoteEntities(info.sim_ns))
    if (r.state.id == ego_id_) ego_.Add(r.state.kinematics);
  step_fuse_ms_ = 0;
  if (const int64_t step_ns = context.StepNs(); step_ns > 0) {
    StepLockstep(info, step_ns, context);
    return;
  }
  // Real time: whatever has arrived joins the open frame; the sim-time timeout bounds the wait.
  for (auto& cloud : held_) OfferCloud(std::move(cloud), info.sim_ns);
  held_.clear();
  while (auto bytes = context.ReceiveData(0))
    if (auto cloud = DecodeCloud(std::move(*bytes))) OfferCloud(std::move(*cloud), info.sim_ns);
  if (assembler_->Due(info.sim_ns)) Publish(assembler_->Take(), info.sim_ns, context);
}

std::optional<ReceivedCloud> FusionModule::DecodeCloud(transport::SharedBytes bytes) {
  const size_t size = bytes.size();
  auto cloud = DecodeReceivedCloud(std::move(bytes));
  if (!cloud) {
    ++stats_->bad;
    return std::nullopt;
  }
  stats_->bytes_in[cloud->cloud.header.sensor_id] += size;
  ++stats_->clouds_in;
  return cloud;
}

void FusionModule::OfferCloud(ReceivedCloud cloud, int64_t now_ns) {
  const int i = assembler_->SourceIndex(cloud.cloud.header.sensor_id);
  if (!assembler_->Offer(cloud.cloud, now_ns)) {  // the fields only: the points stay in the received bytes
    ++stats_->stale;
    return;
  }
  // Taken: fused now, into the open frame, so that a due frame has only its last cloud's share left.
  const auto t0 = std::chrono::steady_clock::now();
  fuser_->Add(static_cast<size_t>(i), std::move(cloud), [&](int64_t t) { return ego_.PoseAt(t); },
              def_.motion_compensation && !ego_.Empty());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  frame_fuse_ms_ += ms;
  step_fuse_ms_ += ms;
}

// Lock-step: sim time runs as fast as the nodes acknowledge, so a sim-time timeout says nothing about
// clouds still on the wire. Every host published the clouds it finished at step k-1 before it
// acknowledged k-1, and step k was granted only after that: at step k each live source's cloud with scan
// end <= t_(k-1) has left its host. The step waits (wall time, bounded) until they are all in, and holds
// back clouds finished at step k itself, which may or may not have arrived: the frames and the instants
// they are published at do not depend on how fast the network is.
void FusionModule::StepLockstep(const StepInfo& info, int64_t step_ns, ModuleContext& context) {
  const int64_t now = info.sim_ns;
  const int64_t due_until = now - step_ns;  // the previous step's sim time
  if (ego_since_ns_ == INT64_MAX && !ego_.Empty()) ego_since_ns_ = now;

  // The host publishing each source, and since when (sim time) this node has seen it in the table.
  const std::vector<protocol::NodeInfo> nodes = context.Nodes();
  std::vector<const protocol::NodeInfo*> hosts(def_.sources.size(), nullptr);
  for (const auto& n : nodes)
    for (const auto& e : n.endpoints)
      if (const int i = assembler_->SourceIndex(e.stream_id); i >= 0) {
        hosts[static_cast<size_t>(i)] = &n;
        host_seen_ns_.try_emplace({n.node_id, n.pid}, now);
      }

  // Clouds held back at an earlier step that are due now, then what has arrived.
  std::vector<ReceivedCloud> later;
  for (auto& cloud : held_) {
    if (cloud.cloud.header.stamp_ns + cloud.cloud.duration_ns > due_until) later.push_back(std::move(cloud));
    else due_.push_back(std::move(cloud));
  }
  held_ = std::move(later);
  while (auto bytes = context.ReceiveData(0)) AcceptLockstep(std::move(*bytes), due_until);

  // Wait for the due clouds still in flight, up to the wall deadline; then go on without them.
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::nanoseconds(wait_budget_ns_);
  bool waited = false;
  for (std::vector<int> missing = MissingDue(hosts, due_until, step_ns); !missing.empty();
       missing = MissingDue(hosts, due_until, step_ns)) {
    const int64_t left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      for (int i : missing) {
        auto& s = lockstep_[static_cast<size_t>(i)];
        s.gave_up = true;
        ++stats_->wait_expired;
        log_->warn("lock-step: no cloud from '{}' with scan end {:.3f} s after waiting {:.0f} ms at step {:.3f} s; "
                   "going on without it until it sends again",
                   def_.sources[static_cast<size_t>(i)], NsToS(LastScanEndNs(due_until, s.period_ns)),
                   NsToS(wait_budget_ns_) * 1e3, NsToS(now));
      }
      break;
    }
    waited = true;
    if (auto bytes = context.ReceiveData(left)) AcceptLockstep(std::move(*bytes), due_until);
  }
  if (waited) {
    ++stats_->waits;
    stats_->wait_ms_max = std::max(
        stats_->wait_ms_max, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  // Offered in source order, not in the order the network brought them: the frame's layout (its groups)
  // is the same in every run.
  std::stable_sort(due_.begin(), due_.end(), [&](const ReceivedCloud& a, const ReceivedCloud& b) {
    return assembler_->SourceIndex(a.cloud.header.sensor_id) < assembler_->SourceIndex(b.cloud.header.sensor_id);
  });
  for (auto& cloud : std::exchange(due_, {})) OfferCloud(std::move(cloud), now);
  if (assembler_->Due(now)) Publish(assembler_->Take(), now, context);
}

void FusionModule::AcceptLockstep(transport::SharedBytes bytes, int64_t due_until_ns) {
  auto cloud = DecodeCloud(std::move(bytes));
  if (!cloud) return;
  const int64_t end = cloud->cloud.header.stamp_ns + cloud->cloud.duration_ns;
  if (const int i = assembler_->SourceIndex(cloud->cloud.header.sensor_id); i >= 0) {
    auto& s = lockstep_[static_cast<size_t>(i)];
    s.last_end_ns = std::max(s.last_end_ns, end);
    s.gave_up = false;
  }
  // Finished at this very step: it joins at the next one, whether or not it is this early everywhere.
  if (end > due_until_ns) {
    held_.push_back(std::move(*cloud));
    return;
  }
  due_.push_back(std::move(*cloud));
}

std::vector<int> FusionModule::MissingDue(const std::vector<const protocol::NodeInfo*>& hosts, int64_t due_until_ns,
                                          int64_t step_ns) const {
  std::vector<int> missing;
  for (size_t i = 0; i < lockstep_.size(); ++i) {
    const LockstepSource& s = lockstep_[i];
    const protocol::NodeInfo* host = hosts[i];
    // Not awaited: a dead or lost host, one that missed the deadline before, or a source faster than
    // the steps (its host cannot measure at every multiple of its period).
    if (!host || host->lost || s.gave_up || s.period_ns < step_ns) continue;
    const int64_t due_end = LastScanEndNs(due_until_ns, s.period_ns);
    if (due_end <= s.last_end_ns) continue;  // in
    // A host measures first at the first multiple after its first step, and only once it sees the ego
    // (the same world this node sees at that step).
    const auto seen = host_seen_ns_.find({host->node_id, host->pid});
    if (seen == host_seen_ns_.end() || due_end <= seen->second || due_end < ego_since_ns_) continue;
    missing.push_back(static_cast<int>(i));
  }
  return missing;
}

namespace {

// The fused frame's points, source by source (the groups are indexed by source, whatever order the clouds
// arrived and lie in the blob in).
std::vector<sensors::CloudPoint> PointsInSourceOrder(const char* blob, const std::vector<std::pair<uint32_t, uint32_t>>& groups) {
  size_t n = 0;
  for (const auto& g : groups) n += g.second;
  std::vector<sensors::CloudPoint> points;
  points.reserve(n);
  for (const auto& [first, count] : groups)
    for (size_t k = first; k < size_t{first} + count; ++k) points.push_back(ReadPointRecord(blob + k * point_record::kStride));
  return points;
}

// One frame's PCD export, written on the export's own thread: the fused points (made already for the
// downstream steps, else read there from the fused blob, source by source) and each source's cloud as
// received.
struct PcdFrame {
  std::string dir;
  uint64_t sequence = 0;
  sensors::PcdFormat format = sensors::PcdFormat::kBinary;
  std::vector<sensors::CloudPoint> points;
  std::shared_ptr<const void> blob_owner;  // set: the fused points are read from `blob` by `groups`
  size_t blob_owner_bytes = 0;             // the whole buffer it keeps alive
  const char* blob = nullptr;
  std::vector<std::pair<uint32_t, uint32_t>> groups;
  std::vector<ReceivedCloud> sources;

  // What the job keeps alive: the points, or the fused frame's whole buffer, and the source messages.
  size_t Bytes() const {
    size_t n = points.size() * sizeof(sensors::CloudPoint) + blob_owner_bytes;
    for (const auto& c : sources) n += c.bytes.size();
    return n;
  }
  // Throws std::runtime_error naming the file (WritePcd) when a write fails.
  void Write() const {
    const std::vector<sensors::CloudPoint> read = blob_owner ? PointsInSourceOrder(blob, groups) : std::vector<sensors::CloudPoint>{};
    sensors::WritePcd(fmt::format("{}/fused_{:06d}.pcd", dir, sequence), blob_owner ? read : points, format);
    for (const auto& c : sources)
      sensors::WritePcd(fmt::format("{}/{}_{:06d}.pcd", dir, c.cloud.header.sensor_id, sequence),
                        UnpackPointRecords(c.Blob(), c.cloud.point_count, c.cloud.point_stride), format);
  }
};

}  // namespace

void FusionModule::Publish(FrameAssembler::Frame frame, int64_t now_ns, ModuleContext& context) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool compensate = def_.motion_compensation && !ego_.Empty();
  if (def_.motion_compensation && ego_.Empty()) ++stats_->no_ego;
  // The clouds were fused on arrival; what is left is the frame's own bookkeeping (rarely a re-fuse).
  std::vector<bool> keep(frame.clouds.size());
  for (size_t i = 0; i < frame.clouds.size(); ++i) keep[i] = frame.clouds[i].has_value();
  auto fused = fuser_->Finish(keep, frame.reference_ns, [&](int64_t t) { return ego_.PoseAt(t); }, compensate);
  const std::string_view blob(fused.blob, static_cast<size_t>(fused.count) * point_record::kStride);
  const bool export_pcd = pcd_writer_ && !pcd_failed_ && (sequence_ + 1) % static_cast<uint64_t>(def_.pcd_every) == 0;
  const bool downstream = def_.voxel_m > 0 || def_.ground_removal || (def_.clustering && compensate);
  // Downstream steps work on points; the plain fused frame never leaves the blob (a PCD export reads it on
  // its own thread).
  std::vector<sensors::CloudPoint> points;
  // In source order, whatever order the clouds arrived in: voxel centroids, ground and clusters then do
  // not depend on the network.
  if (downstream) points = PointsInSourceOrder(fused.blob, fused.groups);
  if (def_.voxel_m > 0) points = sensors::VoxelDownsample(points, def_.voxel_m);
  if (def_.ground_removal) points = sensors::SplitGround(points, sensors::DefaultGroundDef()).obstacles;
  if (def_.clustering && compensate) {
    sensors::ClusterDef cd = sensors::DefaultClusterDef();
    cd.tolerance_m = def_.cluster_tolerance_m;
    const auto clusters = sensors::EuclideanClusters(points, cd);
    // Truth in the vehicle frame at the reference time, limited to what the sources can reach.
    const Pose ego = ego_.PoseAt(frame.reference_ns);
    const Rigid inv = FromPose(ego).Inverse();
    std::vector<sensors::TruthObject> truth;
    for (auto t : truth_) {
      t.centre_m = inv.Apply(t.centre_m);
      if (t.centre_m.head<2>().norm() < 50.0) truth.push_back(t);
    }
    const auto score = sensors::ScoreClusters(clusters, truth, 1.0);
    stats_->precision_sum += score.precision;
    stats_->recall_sum += score.recall;
    stats_->position_error_sum += score.mean_position_error_m;
    ++stats_->scored;
  }
  const bool reduced = def_.voxel_m > 0 || def_.ground_removal;  // the points sent are not the blob's

  protocol::FusedCloud msg;
  msg.sensor_id = def_.stream_id;
  msg.node_id = context.NodeId();
  msg.sequence = ++sequence_;
  msg.reference_ns = frame.reference_ns;
  msg.entity_id = ego_id_;
  msg.sources = frame.meta;
  // Where each source's records lie: the fuser's groups (arrival order), or for reduced points the
  // groups they are sorted into (source order; VoxelDownsample keeps no order).
  std::vector<std::pair<uint32_t, uint32_t>> groups = fused.groups;
  if (reduced) {
    std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.source < b.source; });
    std::vector<uint32_t> per_source(groups.size(), 0);
    for (const auto& p : points)
      if (p.source < per_source.size()) ++per_source[p.source];
    uint32_t at = 0;
    for (size_t i = 0; i < groups.size(); ++i) {
      groups[i] = {per_source[i] ? at : 0u, per_source[i]};
      at += per_source[i];
    }
  }
  for (size_t i = 0; i < msg.sources.size() && i < groups.size(); ++i) {
    msg.sources[i].first_point = groups[i].first;
    msg.sources[i].point_count = groups[i].second;
  }
  msg.point_count = reduced ? static_cast<uint32_t>(points.size()) : fused.count;
  msg.point_stride = point_record::kStride;
  msg.motion_compensated = compensate;
  const double fuse_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::shared_ptr<const void> wire_owner;  // keeps `wire` alive (the record is written on its own thread)
  std::string_view wire;
  if (reduced) {
    msg.points = PackPointRecords(points);
    auto copied = std::make_shared<const std::string>(protocol::Encode(msg));  // the points are not the blob's
    wire = *copied;
    wire_owner = std::move(copied);
    context.PublishData(msg);
  } else {
    wire_owner = fused.buffer;
    // The envelope goes in front of the blob; the socket sends the buffer in place and releases it.
    wire = protocol::EncodeFusedInPlace(msg, fused.blob, blob.size(), protocol::kFusedHeadroomBytes);
    if (auto* zero_copy = dynamic_cast<EncodedPublisher*>(&context)) {
      zero_copy->PublishEncoded(wire, fused.buffer);
    } else if (auto d = protocol::Decode(wire); d.message) {
      context.PublishData(*d.message);  // a context without a socket (tests): the message itself
    }
  }
  // The record is written on its own thread: a slow disk holds up neither this frame nor the next. Disk
  // trouble (a full disk) stops the record or the PCD export with one error; fusion goes on.
  if (recorder_ && !record_failed_) {
    const bool queued = recorder_->Push(wire, std::move(wire_owner), msg.sensor_id, msg.reference_ns);
    if (const std::string error = recorder_->Error(); !error.empty()) {
      record_failed_ = true;
      log_->error("fused-frame record stopped after {} frames: {}; the frames before stay readable, fusion goes on",
                  recorder_->Frames(), error);
    } else if (!queued) {
      if (const uint64_t dropped = recorder_->Dropped(); dropped >= 2 * record_dropped_logged_ + 1) {
        record_dropped_logged_ = dropped;  // logged at 1, 3, 7, 15, ... frames left out
        log_->warn("{}: the disk is not keeping up; {} fused frames left out of the record so far (queue of {} MiB full)",
                   recorder_->Path(), dropped, FusedRecordThread::kDefaultMaxBytes >> 20);
      }
    }
  }
  // The PCD export, too, is written on its own thread: WritePcd syncs every file to disk, five a frame.
  if (export_pcd) {
    try {
      PcdFrame pcd;
      pcd.dir = def_.pcd_dir;
      pcd.sequence = sequence_;
      pcd.format = def_.pcd_binary ? sensors::PcdFormat::kBinary : sensors::PcdFormat::kAscii;
      if (downstream) {
        pcd.points = std::move(points);  // not used after this
      } else {
        pcd.blob_owner = fused.buffer;  // the fuser reuses the buffer once the export has let go of it
        pcd.blob_owner_bytes = protocol::kFusedHeadroomBytes + fused.buffer->blob_capacity;
        pcd.blob = fused.blob;
        pcd.groups = fused.groups;
      }
      for (auto& c : fused.clouds)
        if (c) pcd.sources.push_back(std::move(*c));
      const size_t bytes = pcd.Bytes();
      const bool queued = pcd_writer_->Push([pcd = std::move(pcd)] { pcd.Write(); }, bytes);
      if (!queued && pcd_writer_->Error().empty()) {
        if (const uint64_t dropped = pcd_writer_->Dropped(); dropped >= 2 * pcd_dropped_logged_ + 1) {
          pcd_dropped_logged_ = dropped;  // logged at 1, 3, 7, 15, ... frames left out
          log_->warn("{}: the disk is not keeping up; {} frames left out of the PCD export so far (queue of {} MiB full)",
                     def_.pcd_dir, dropped, kPcdQueueBytes >> 20);
        }
      }
    } catch (const std::exception& e) {  // out of memory: the export stops, fusion goes on
      pcd_failed_ = true;
      pcd_error_ = def_.pcd_dir + ": " + e.what();
      log_->error("PCD export stopped after {} frames: {}; fusion goes on", pcd_writer_->Done(), pcd_error_);
    }
  }
  if (pcd_writer_ && !pcd_failed_) {
    if (const std::string error = pcd_writer_->Error(); !error.empty()) {
      pcd_failed_ = true;
      log_->error("PCD export stopped after {} frames: {}; fusion goes on", pcd_writer_->Done(), error);
    }
  }
  const double publish_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  auto& st = *stats_;
  ++st.frames;
  int n_ok = 0;
  for (const auto& m : frame.meta) {
    if (m.status == protocol::SourceStatus::kOk) ++st.ok[m.sensor_id], ++n_ok;
    if (m.status == protocol::SourceStatus::kMissing) ++st.missing[m.sensor_id];
    if (m.status == protocol::SourceStatus::kLate) ++st.late[m.sensor_id];
  }
  st.sources_per_frame.push_back(n_ok);
  // Compute: every cloud's fusion on arrival plus the frame's finish. Latency: from scan end to this step,
  // plus what this step spent fusing the clouds that arrived in it and publishing.
  st.fuse_ms.push_back(frame_fuse_ms_ + fuse_ms);
  st.latency_ms.push_back(static_cast<double>(now_ns - frame.reference_ns) / 1e6 + step_fuse_ms_ + publish_ms);
  frame_fuse_ms_ = 0;
  if (st.first_ns < 0) st.first_ns = now_ns;
  st.last_ns = now_ns;
  std::string srcs;
  for (const auto& m : frame.meta)
    srcs += fmt::format(" {}:{}", m.sensor_id, m.status == protocol::SourceStatus::kOk ? std::to_string(m.point_count)
                                                                                          : std::string(protocol::SourceStatusName(m.status)));
  log_->debug("fused #{} ref {:.3f} s: {} points from {}/{} sources |{}", sequence_, NsToS(frame.reference_ns),
              msg.point_count, n_ok, frame.meta.size(), srcs);
  // A line per source-count change, so a lost or returning lidar shows in the log.
  if (n_ok != last_ok_) {
    log_->info("fused frames now from {}/{} sources |{}", n_ok, frame.meta.size(), srcs);
    last_ok_ = n_ok;
  }
}

void FusionModule::Summarize(std::vector<std::string>& fields) const {
  // The frames still queued for the record are written first; on a stalled disk, those still queued after
  // kCloseWait are left out and counted as dropped.
  if (recorder_ && !recorder_->Finish(FusedRecordThread::kCloseWait))
    log_->warn("{}: fused frames still queued for the record after {} s are left out of it", recorder_->Path(),
               std::chrono::duration_cast<std::chrono::seconds>(FusedRecordThread::kCloseWait).count());
  if (pcd_writer_ && !pcd_writer_->Finish(WriterThread::kCloseWait))
    log_->warn("{}: frames still queued for the PCD export after {} s are left out of it", def_.pcd_dir,
               std::chrono::duration_cast<std::chrono::seconds>(WriterThread::kCloseWait).count());
  const std::string pcd_error = pcd_writer_ && !pcd_writer_->Error().empty() ? pcd_writer_->Error() : pcd_error_;
  if (!pcd_error.empty() && !pcd_failed_) {
    pcd_failed_ = true;
    log_->error("PCD export stopped after {} frames: {}", pcd_writer_->Done(), pcd_error);
  }
  const auto& st = *stats_;
  const double span_s = st.last_ns > st.first_ns ? NsToS(st.last_ns - st.first_ns) : 0;
  std::string per;
  for (const auto& id : def_.sources) {
    const auto get = [&](const std::map<std::string, uint64_t>& m) { auto it = m.find(id); return it == m.end() ? 0ull : it->second; };
    per += fmt::format("{}{{\"id\":\"{}\",\"ok\":{},\"missing\":{},\"late\":{},\"bytes_per_s\":{:.0f}}}", per.empty() ? "" : ",", id,
                       get(st.ok), get(st.missing), get(st.late), span_s > 0 ? static_cast<double>(get(st.bytes_in)) / span_s : 0.0);
  }
  std::string counts;
  for (int n : st.sources_per_frame) counts += (counts.empty() ? "" : ",") + std::to_string(n);
  fields.push_back(fmt::format(
      "\"fusion\":{{\"frames\":{},\"clouds_in\":{},\"stale\":{},\"bad_input\":{},\"no_ego\":{},\"fuse_ms_p50\":{:.3f},"
      "\"fuse_ms_p99\":{:.3f},\"latency_ms_p50\":{:.3f},\"latency_ms_p99\":{:.3f},\"scored\":{},\"precision\":{:.3f},"
      "\"recall\":{:.3f},\"position_error_m\":{:.3f},\"recorded\":{},\"record_dropped\":{},\"lockstep_waits\":{},\"lockstep_wait_ms_max\":{:.1f},"
      "\"lockstep_wait_expired\":{},\"record_path\":{},\"record_error\":{},\"pcd_frames\":{},\"pcd_dropped\":{},\"pcd_error\":{},\"sources\":[{}],"
      "\"sources_per_frame\":[{}]}}",
      st.frames, st.clouds_in, st.stale, st.bad, st.no_ego, Percentile(st.fuse_ms, 50), Percentile(st.fuse_ms, 99),
      Percentile(st.latency_ms, 50), Percentile(st.latency_ms, 99), st.scored,
      st.scored ? st.precision_sum / static_cast<double>(st.scored) : 0.0,
      st.scored ? st.recall_sum / static_cast<double>(st.scored) : 0.0,
      st.scored ? st.position_error_sum / static_cast<double>(st.scored) : 0.0, recorder_ ? recorder_->Frames() : 0,
      recorder_ ? recorder_->Dropped() : 0, st.waits, st.wait_ms_max, st.wait_expired, session_log::JsonQuote(recorder_ ? recorder_->Path() : ""),
      session_log::JsonQuote(recorder_ ? recorder_->Error() : ""), pcd_writer_ ? pcd_writer_->Done() : 0,
      pcd_writer_ ? pcd_writer_->Dropped() : 0, session_log::JsonQuote(pcd_error), per, counts));
}

}  // namespace platoon::node
