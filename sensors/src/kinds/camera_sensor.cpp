// The camera kind: [[node.sensor]] keys (docs/SENSORS.md), ROI ground truth per frame and, with
// render = "rgb8" or "png", an image drawn by the host's CameraImager (which, with monitor = "window" or
// "fullscreen", also shows it in the monitor-HIL window).
#include "sensor_kinds.hpp"

#include "platoon/sensors/camera.hpp"
#include "platoon/sensors/mounting.hpp"

#include <chrono>
#include <cstdio>

namespace platoon::sensors::kinds {
namespace {

// Classes of static boxes that get ROIs: everything the sensor host puts in the scene but the ground.
const std::vector<uint32_t> kStaticClasses = {
    static_cast<uint32_t>(SemanticClass::kBuilding), static_cast<uint32_t>(SemanticClass::kVegetation),
    static_cast<uint32_t>(SemanticClass::kPole),     static_cast<uint32_t>(SemanticClass::kSign),
    static_cast<uint32_t>(SemanticClass::kGuardRail), static_cast<uint32_t>(SemanticClass::kStaticObject)};

class CameraSensor final : public SensorInstance {
 public:
  CameraSensor(const SensorSpec& spec, const SensorServices& services) : spec_(spec) {
    if (spec_.camera.render != "none" && services.make_camera_imager) imager_ = services.make_camera_imager(spec_);
  }

  std::optional<Measurement> Measure(const SensorWorldView& world, int64_t t_ns) override {
    const Scene& scene = world.SceneAt(t_ns);
    const KinematicState vehicle = world.EgoAt(t_ns);
    const Pose camera_world = SensorPoseInWorld(vehicle.pose, spec_.mounting);
    const std::vector<protocol::EntityState> others = world.OthersAt(t_ns);
    // Static objects first (environment and [[scene.box]], class per kind), then the vehicles.
    std::vector<CameraTarget> targets = StaticTargets(scene, kStaticClasses);
    for (const auto& e : others)
      targets.push_back(CameraTarget{TruthLabel(e.id), static_cast<uint32_t>(SemanticClass::kVehicle),
                                     EntityBoxPose(e.kinematics, e.box_size_m), e.box_size_m});
    const auto rois = GroundTruth(targets, &scene, camera_world, spec_.camera);
    const auto k = Intrinsics(spec_.camera);
    protocol::CameraFrame msg;
    msg.header.stamp_ns = t_ns;
    msg.width = spec_.camera.image_width_px;
    msg.height = spec_.camera.image_height_px;
    msg.fx = k.fx_px;
    msg.fy = k.fy_px;
    msg.cx = k.cx_px;
    msg.cy = k.cy_px;
    for (const auto& r : rois)
      msg.rois.push_back(protocol::CameraRoi{r.entity_id, r.class_id, static_cast<float>(r.u_min_px),
                                             static_cast<float>(r.v_min_px), static_cast<float>(r.u_max_px),
                                             static_cast<float>(r.v_max_px), static_cast<float>(r.depth_m),
                                             static_cast<float>(r.occlusion_ratio), r.truncated, r.detail});
    // The image shows the vehicles where the ROIs put them: the same states at the frame's time.
    if (imager_) {
      const auto t0 = std::chrono::steady_clock::now();
      if (imager_->Render(camera_world, others, msg).empty()) {
        ++images_;
        render_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      } else {
        imager_.reset();  // the imager said why (it has the logger); ROIs only from now on
        msg.image.clear();
        msg.encoding.clear();
      }
    }
    const uint64_t n = msg.rois.size();
    return Measurement{std::move(msg), n};
  }

  void Summarize(std::string& json_members) const override {
    if (spec_.camera.render == "none") return;
    char buf[96];
    std::snprintf(buf, sizeof buf, ",\"images\":%llu,\"mean_render_ms\":%.3f", static_cast<unsigned long long>(images_),
                  images_ ? 1e3 * render_s_ / static_cast<double>(images_) : 0.0);
    json_members += buf;
    if (imager_) imager_->Summarize(json_members);
  }

 private:
  SensorSpec spec_;
  std::unique_ptr<CameraImager> imager_;  // null: ROIs only (render = "none", no renderer, or it failed)
  uint64_t images_ = 0;
  double render_s_ = 0;
};

}  // namespace

void ReadCamera(const config::Table& t, SensorSpec& s) {
  CameraDef d = DefaultCameraDef();
  d.image_width_px = static_cast<uint32_t>(t.GetInt("image_width_px", d.image_width_px, 1, 16384));
  d.image_height_px = static_cast<uint32_t>(t.GetInt("image_height_px", d.image_height_px, 1, 16384));
  d.focal_length_mm = t.GetDouble("focal_length_mm", d.focal_length_mm, 0.1, 1000);
  d.sensor_width_mm = t.GetDouble("sensor_width_mm", d.sensor_width_mm, 0.1, 1000);
  d.sensor_height_mm = t.GetDouble("sensor_height_mm", d.sensor_height_mm, 0.1, 1000);
  d.rate_hz = t.GetDouble("rate_hz", d.rate_hz, 0.1, 1000);
  d.render = t.GetString("render", d.render, {"none", "rgb8", "png"});
  d.monitor = t.GetString("monitor", d.monitor, {"none", "window", "fullscreen"});
  d.monitor_display = static_cast<int>(t.GetInt("monitor_display", d.monitor_display, 0, 63));
  d.monitor_check = t.GetBool("monitor_check", d.monitor_check);
  if (d.monitor != "none" && d.render == "none")
    t.Fail("monitor", "monitor = \"" + d.monitor + "\" shows the rendered images: it needs render = \"rgb8\" or \"png\", got render = \"none\"");
  d.mounting = s.mounting;
  s.camera = d;
  s.rate_hz = d.rate_hz;
}

std::unique_ptr<SensorInstance> MakeCamera(const SensorSpec& spec, const SensorServices& services) {
  return std::make_unique<CameraSensor>(spec, services);
}

}  // namespace platoon::sensors::kinds
