// An OpenDRIVE road's lanes as a participant sees them (viewer/src/scene.cpp, BuildProfiledRoad): each lane
// between its boundaries along s, carriageway-like lanes (driving, parking, biking, restricted) in asphalt and
// footways, kerbs, medians, shoulders and borders in the pavement colour, the centre's double yellow line in
// yellow, a lane offset and widths that change along s followed. Fixtures in tests/data/opendrive/ (written from
// the standard's text). Pictures as PNGs when PLATOON_WORLD_PICTURES names a folder (docs/ROADS.md). Needs an
// X display: part of platoon_render_tests, which ctest runs under xvfb-run.
#include "platoon/road/opendrive.hpp"
#include "platoon/road/road_network.hpp"
#include "platoon/viewer/image.hpp"
#include "platoon/viewer/offscreen_renderer.hpp"
#include "platoon/viewer/pinhole_camera.hpp"
#include "platoon/viewer/scene.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

using namespace platoon;
using namespace platoon::viewer;

namespace opendrive_render_test_detail {

std::string OdFixture(const std::string& name) { return std::string(PLATOON_SOURCE_DIR) + "/tests/data/opendrive/" + name; }

struct OdPixel {
  double r = 0, g = 0, b = 0;
  double Luma() const { return 0.2126 * r + 0.7152 * g + 0.0722 * b; }
};

// Mean colour of the 3 x 3 pixels about the projection of `p`.
OdPixel OdAt(const Image& img, const PinholeCamera& cam, const Pose& camera, const Vec3& p) {
  Eigen::Vector2d uv;
  REQUIRE(ProjectPoint(cam, camera, p, &uv));
  OdPixel out;
  for (int dj = -1; dj <= 1; ++dj)
    for (int di = -1; di <= 1; ++di) {
      const auto px = img.At(static_cast<uint32_t>(std::floor(uv.x())) + di, static_cast<uint32_t>(std::floor(uv.y())) + dj);
      out.r += px[0] / 9.0;
      out.g += px[1] / 9.0;
      out.b += px[2] / 9.0;
    }
  return out;
}

// Looking down on a road point from `height_m` above it, 75 deg below the horizon, along the road.
Pose OdCamera(const road::Road& road, double s, double t, double height_m) {
  Pose p;
  p.position_m = road.SurfacePoint(s - height_m / std::tan(75.0 * M_PI / 180.0), t) + Vec3(0, 0, height_m);
  p.orientation = Quat(Eigen::AngleAxisd(road.Heading(s), Vec3::UnitZ()) * Eigen::AngleAxisd(75.0 * M_PI / 180.0, Vec3::UnitY()));
  return p;
}

Image OdRender(const road::RoadNetwork& roads, const Pose& camera, const PinholeCamera& cam, const std::string& picture) {
  SceneGraph scene;
  scene.SetRoads(roads);
  world::WorldConditions c;
  c.light.sun_set_directly = true;
  c.light.sun_elevation_deg = 60.0;
  c.light.sun_azimuth_deg = 180.0;
  scene.SetConditions(c);
  OffscreenRenderer renderer(static_cast<int>(cam.width_px), static_cast<int>(cam.height_px));
  renderer.SetScene(scene.Root(), scene.SkyColour());
  const Image img = renderer.Render(camera, cam);
  if (const char* folder = std::getenv("PLATOON_WORLD_PICTURES"))
    CHECK(WritePng(img, std::string(folder) + "/" + picture).empty());
  return img;
}

}  // namespace opendrive_render_test_detail
using namespace opendrive_render_test_detail;

TEST_CASE("opendrive render: lane types are drawn in asphalt or pavement and the centre's double line in yellow where the lanes put them") {
  const road::RoadNetwork roads = road::LoadOpenDriveFile(OdFixture("lane_types.xodr"));
  const road::Road& road = roads.Roads().front();
  const PinholeCamera cam = CameraFromFov(800, 600, 70.0 * M_PI / 180.0);
  const double s = 60.0;
  const Pose camera = OdCamera(road, s, -3.0, 22.0);
  const Image img = OdRender(roads, camera, cam, "opendrive_lane_types.png");
  auto at = [&](double t) { return OdAt(img, cam, camera, road.SurfacePoint(s, t)); };
  // Lane centres (widths from the fixture): +4 sidewalk 6.0, +2 driving 2.75, +1 median 0.5; -1 driving -1.75,
  // -3 shoulder -7.25, -5 parking -9.5, -6 biking -11.5, -7 walking -13.25.
  const OdPixel driving_left = at(2.75), driving_right = at(-1.75), parking = at(-9.5), biking = at(-11.5);
  const OdPixel sidewalk = at(6.0), shoulder = at(-7.25), walking = at(-13.25);
  MESSAGE("luma: driving " << driving_left.Luma() << " / " << driving_right.Luma() << ", parking " << parking.Luma()
                           << ", biking " << biking.Luma() << "; sidewalk " << sidewalk.Luma() << ", shoulder "
                           << shoulder.Luma() << ", walking " << walking.Luma());
  for (const OdPixel& paved : {driving_left, driving_right, parking, biking})
    for (const OdPixel& foot : {sidewalk, shoulder, walking}) CHECK(foot.Luma() > paved.Luma() + 30.0);
  // The centre line "solid solid" yellow, 0.35 m wide: two yellow lines, a line width either side of t = 0.
  for (double t : {0.35, -0.35}) {
    const OdPixel y = at(t);
    MESSAGE("centre line at t = " << t << ": " << y.r << " " << y.g << " " << y.b);
    CHECK(y.r > y.b + 60.0);
    CHECK(y.g > y.b + 40.0);
  }
  // The broken white line between -1 and -2 (t = -3.5): white at a dash, as bright in red as in blue.
  bool dash = false;
  for (double ds = 0; ds < 12.0 && !dash; ds += 0.5) {
    const OdPixel w = OdAt(img, cam, camera, road.SurfacePoint(s + ds, -3.5));
    dash = w.Luma() > driving_right.Luma() + 60.0 && std::abs(w.r - w.b) < 30.0;
  }
  CHECK(dash);
}

TEST_CASE("opendrive render: a lane whose width and offset change along s is drawn where the road's lane profile puts it") {
  const road::RoadNetwork roads = road::LoadOpenDriveFile(OdFixture("lane_profile.xodr"));
  const road::Road& road = roads.Roads().front();
  const PinholeCamera cam = CameraFromFov(800, 600, 70.0 * M_PI / 180.0);
  // At two places along the road the boundaries differ; at each the middle of lane -1 is asphalt and just beyond
  // its outer boundary something else (the next lane's edge line, or the ground).
  int checked = 0;
  for (double s : {0.25 * road.Length(), 0.75 * road.Length()}) {
    const double inner = road.BoundaryOffsetAt(s, 0), outer = road.BoundaryOffsetAt(s, -1);
    const Pose camera = OdCamera(road, s, 0.5 * (inner + outer), 18.0);
    const Image img = OdRender(roads, camera, cam, checked == 0 ? "opendrive_lane_profile.png" : "opendrive_lane_profile_2.png");
    const OdPixel mid = OdAt(img, cam, camera, road.SurfacePoint(s, 0.5 * (inner + outer)));
    MESSAGE("s = " << s << ": lane -1 between t = " << inner << " and " << outer << ", luma " << mid.Luma());
    CHECK(mid.Luma() < 120.0);  // asphalt
    ++checked;
  }
  CHECK(checked == 2);
  // The profile changes: the boundary of lane -1 moves along s (else this test would not test it).
  CHECK(std::abs(road.BoundaryOffsetAt(0.25 * road.Length(), -1) - road.BoundaryOffsetAt(0.75 * road.Length(), -1)) > 0.1);
}
