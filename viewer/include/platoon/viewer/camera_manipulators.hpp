#pragma once
/// Camera manipulators of the interactive viewer (osgGA): free flight, chase (behind a chosen entity)
/// and top (looking down, north up, optionally following an entity). Mouse: left drag turns or orbits,
/// right drag pans (free, top), wheel zooms or moves. Keys (free): W/S forward/back, A/D left/right,
/// Q/E down/up, Shift faster.

#include "platoon/geometry.hpp"

#include <osgGA/CameraManipulator>

namespace platoon::viewer {

/// A manipulator whose view is computed from its own state every frame (getInverseMatrix): setting a
/// matrix from outside and "home" do nothing.
class ComputedViewManipulator : public osgGA::CameraManipulator {
 public:
  void setByMatrix(const osg::Matrixd&) override {}
  void setByInverseMatrix(const osg::Matrixd&) override {}
  osg::Matrixd getMatrix() const override { return osg::Matrixd::inverse(getInverseMatrix()); }
  void home(const osgGA::GUIEventAdapter&, osgGA::GUIActionAdapter&) override {}
};

/// Free flight: a position, a heading and a pitch.
class FreeManipulator : public osgGA::CameraManipulator {
 public:
  FreeManipulator();
  /// Places the eye at `eye_m` looking at `target_m`.
  void LookAt(const Vec3& eye_m, const Vec3& target_m);
  /// Eye position, in m.
  const Vec3& Eye() const { return eye_m_; }

  void setByMatrix(const osg::Matrixd& matrix) override;
  void setByInverseMatrix(const osg::Matrixd& matrix) override { setByMatrix(osg::Matrixd::inverse(matrix)); }
  osg::Matrixd getMatrix() const override;
  osg::Matrixd getInverseMatrix() const override;
  bool handle(const osgGA::GUIEventAdapter& ea, osgGA::GUIActionAdapter& aa) override;
  void home(const osgGA::GUIEventAdapter&, osgGA::GUIActionAdapter&) override {}

 private:
  Vec3 Forward() const;
  Vec3 eye_m_ = Vec3(-20, 0, 10);
  double yaw_rad_ = 0.0, pitch_rad_ = -0.3;
  float last_x_ = 0, last_y_ = 0;
  double speed_mps_ = 20.0;
};

/// Chase: behind and above a target pose, turning with its heading; the mouse orbits and zooms.
class ChaseManipulator : public ComputedViewManipulator {
 public:
  ChaseManipulator();
  /// Pose to follow (rear-axle origin of the chosen entity), set every frame.
  void SetTarget(const Pose& target) { target_ = target; }
  /// Distance behind the target, in m. Typical 8-15.
  double DistanceM() const { return distance_m_; }

  osg::Matrixd getInverseMatrix() const override;
  bool handle(const osgGA::GUIEventAdapter& ea, osgGA::GUIActionAdapter& aa) override;

 private:
  Pose target_;
  double distance_m_ = 10.0, height_m_ = 3.5, orbit_rad_ = 0.0;
  float last_x_ = 0;
};

/// Top: looking straight down from a height, north (+y) up; follows a target when one is set.
class TopManipulator : public ComputedViewManipulator {
 public:
  TopManipulator();
  /// Centre of the view (x, y), in m; the target's position when following.
  void SetCentre(const Vec3& centre_m) { centre_m_ = centre_m; }
  /// Height of the eye above the centre, in m. Typical 30-500.
  double HeightM() const { return height_m_; }

  osg::Matrixd getInverseMatrix() const override;
  bool handle(const osgGA::GUIEventAdapter& ea, osgGA::GUIActionAdapter& aa) override;

 private:
  Vec3 centre_m_ = Vec3::Zero();
  Vec3 pan_m_ = Vec3::Zero();
  double height_m_ = 120.0;
  float last_x_ = 0, last_y_ = 0;
};

}  // namespace platoon::viewer
