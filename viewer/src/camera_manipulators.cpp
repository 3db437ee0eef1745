#include "platoon/viewer/camera_manipulators.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::viewer {
namespace {

using Ea = osgGA::GUIEventAdapter;

osg::Vec3d ToOsgVec3d(const Vec3& v) { return osg::Vec3d(v.x(), v.y(), v.z()); }

double Heading(const Quat& q) {
  const Vec3 f = q * Vec3::UnitX();
  return std::atan2(f.y(), f.x());
}

// Scroll direction of a wheel event: +1 up (towards the scene), -1 down, 0 none.
int ScrollSign(const Ea& ea) {
  switch (ea.getScrollingMotion()) {
    case Ea::SCROLL_UP: return 1;
    case Ea::SCROLL_DOWN: return -1;
    case Ea::SCROLL_2D: return ea.getScrollingDeltaY() > 0 ? 1 : ea.getScrollingDeltaY() < 0 ? -1 : 0;
    default: return 0;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Free
// ---------------------------------------------------------------------------------------------

FreeManipulator::FreeManipulator() = default;

Vec3 FreeManipulator::Forward() const {
  return Vec3(std::cos(pitch_rad_) * std::cos(yaw_rad_), std::cos(pitch_rad_) * std::sin(yaw_rad_), std::sin(pitch_rad_));
}

void FreeManipulator::LookAt(const Vec3& eye, const Vec3& target) {
  eye_m_ = eye;
  const Vec3 d = (target - eye).normalized();
  yaw_rad_ = std::atan2(d.y(), d.x());
  pitch_rad_ = std::asin(std::clamp(d.z(), -1.0, 1.0));
}

void FreeManipulator::setByMatrix(const osg::Matrixd& m) {
  // The camera's world matrix: eye at its translation, looking along its -z.
  const osg::Vec3d eye = m.getTrans();
  const osg::Vec3d look = osg::Matrixd::transform3x3(osg::Vec3d(0, 0, -1), m);
  LookAt(Vec3(eye.x(), eye.y(), eye.z()), Vec3(eye.x() + look.x(), eye.y() + look.y(), eye.z() + look.z()));
}

osg::Matrixd FreeManipulator::getInverseMatrix() const {
  return osg::Matrixd::lookAt(ToOsgVec3d(eye_m_), ToOsgVec3d(eye_m_ + Forward()), osg::Vec3d(0, 0, 1));
}

osg::Matrixd FreeManipulator::getMatrix() const { return osg::Matrixd::inverse(getInverseMatrix()); }

bool FreeManipulator::handle(const Ea& ea, osgGA::GUIActionAdapter& aa) {
  switch (ea.getEventType()) {
    case Ea::PUSH:
      last_x_ = ea.getXnormalized();
      last_y_ = ea.getYnormalized();
      return true;
    case Ea::DRAG: {
      const double dx = ea.getXnormalized() - last_x_, dy = ea.getYnormalized() - last_y_;
      last_x_ = ea.getXnormalized();
      last_y_ = ea.getYnormalized();
      if (ea.getButtonMask() & Ea::LEFT_MOUSE_BUTTON) {
        yaw_rad_ -= 1.5 * dx;
        pitch_rad_ = std::clamp(pitch_rad_ + 1.0 * dy, -1.55, 1.55);
      } else {
        // Pan in the view plane, faster when high up.
        const double scale = std::max(5.0, std::abs(eye_m_.z()));
        const Vec3 right(std::sin(yaw_rad_), -std::cos(yaw_rad_), 0.0);
        eye_m_ -= scale * (dx * right + dy * Vec3::UnitZ());
      }
      aa.requestRedraw();
      return true;
    }
    case Ea::SCROLL:
      eye_m_ += ScrollSign(ea) * 0.1 * speed_mps_ * Forward();
      return true;
    case Ea::KEYDOWN: {
      const double step = speed_mps_ * 0.05 * ((ea.getModKeyMask() & Ea::MODKEY_SHIFT) ? 5.0 : 1.0);
      const Vec3 flat(std::cos(yaw_rad_), std::sin(yaw_rad_), 0.0);
      const Vec3 left(-flat.y(), flat.x(), 0.0);
      switch (ea.getUnmodifiedKey()) {
        case 'w': eye_m_ += step * Forward(); return true;
        case 's': eye_m_ -= step * Forward(); return true;
        case 'a': eye_m_ += step * left; return true;
        case 'd': eye_m_ -= step * left; return true;
        case 'e': eye_m_ += step * Vec3::UnitZ(); return true;
        case 'q': eye_m_ -= step * Vec3::UnitZ(); return true;
        default: return false;
      }
    }
    default: return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Chase
// ---------------------------------------------------------------------------------------------

ChaseManipulator::ChaseManipulator() = default;

osg::Matrixd ChaseManipulator::getInverseMatrix() const {
  // Behind the target along its heading (turned by the orbit), looking at a point above its roof.
  const double h = Heading(target_.orientation) + orbit_rad_;
  const Vec3 look_at = target_.position_m + Vec3(0, 0, 1.2);
  const Vec3 eye = target_.position_m + Vec3(-distance_m_ * std::cos(h), -distance_m_ * std::sin(h), height_m_);
  return osg::Matrixd::lookAt(ToOsgVec3d(eye), ToOsgVec3d(look_at), osg::Vec3d(0, 0, 1));
}

bool ChaseManipulator::handle(const Ea& ea, osgGA::GUIActionAdapter&) {
  switch (ea.getEventType()) {
    case Ea::PUSH: last_x_ = ea.getXnormalized(); return true;
    case Ea::DRAG:
      orbit_rad_ -= 2.0 * (ea.getXnormalized() - last_x_);
      last_x_ = ea.getXnormalized();
      return true;
    case Ea::SCROLL: {
      const double f = ScrollSign(ea) > 0 ? 0.9 : ScrollSign(ea) < 0 ? 1.1 : 1.0;
      distance_m_ = std::clamp(distance_m_ * f, 3.0, 200.0);
      height_m_ = 0.35 * distance_m_;
      return true;
    }
    case Ea::KEYDOWN:
      if (ea.getUnmodifiedKey() == 'r') {  // back behind the target
        orbit_rad_ = 0.0;
        return true;
      }
      return false;
    default: return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Top
// ---------------------------------------------------------------------------------------------

TopManipulator::TopManipulator() = default;

osg::Matrixd TopManipulator::getInverseMatrix() const {
  const Vec3 c = centre_m_ + pan_m_;
  return osg::Matrixd::lookAt(ToOsgVec3d(c + Vec3(0, 0, height_m_)), ToOsgVec3d(c), osg::Vec3d(0, 1, 0));
}

bool TopManipulator::handle(const Ea& ea, osgGA::GUIActionAdapter&) {
  switch (ea.getEventType()) {
    case Ea::PUSH:
      last_x_ = ea.getXnormalized();
      last_y_ = ea.getYnormalized();
      return true;
    case Ea::DRAG: {
      // The ground under the cursor follows it: half the view spans about height metres.
      const double dx = ea.getXnormalized() - last_x_, dy = ea.getYnormalized() - last_y_;
      last_x_ = ea.getXnormalized();
      last_y_ = ea.getYnormalized();
      pan_m_ -= 0.5 * height_m_ * Vec3(dx, dy, 0.0);
      return true;
    }
    case Ea::SCROLL: {
      const double f = ScrollSign(ea) > 0 ? 0.85 : ScrollSign(ea) < 0 ? 1.15 : 1.0;
      height_m_ = std::clamp(height_m_ * f, 10.0, 20000.0);
      return true;
    }
    case Ea::KEYDOWN:
      if (ea.getUnmodifiedKey() == 'r') {  // re-centre on the target
        pan_m_ = Vec3::Zero();
        return true;
      }
      return false;
    default: return false;
  }
}

}  // namespace platoon::viewer
