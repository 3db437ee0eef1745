#include "platoon/viewer/calibration_board.hpp"

#include "platoon/entity_id.hpp"

#include <osg/Geode>
#include <osg/Program>
#include <osg/Geometry>
#include <osg/StateSet>

namespace platoon::viewer {

Quat RotationFromRpy(const Vec3& rpy_rad) {
  return Quat(Eigen::AngleAxisd(rpy_rad.z(), Vec3::UnitZ()) * Eigen::AngleAxisd(rpy_rad.y(), Vec3::UnitY()) *
              Eigen::AngleAxisd(rpy_rad.x(), Vec3::UnitX()))
      .normalized();
}

Pose BoardPoseInHolder(const config::CalibrationBoardDef& board) {
  return Pose{board.position_m, RotationFromRpy(board.rpy_rad)};
}

Pose BoardPoseInWorld(const config::CalibrationBoardDef& board, const Pose& camera_world) {
  const Pose local = BoardPoseInHolder(board);
  if (board.camera.empty()) return local;
  return Pose{camera_world.position_m + camera_world.orientation * local.position_m,
              (camera_world.orientation * local.orientation).normalized()};
}

std::vector<Vec3> BoardInnerCornersInBoard(const config::CalibrationBoardDef& board) {
  std::vector<Vec3> out;
  const double s = board.square_m;
  for (int r = 0; r + 1 < board.rows; ++r)
    for (int c = 0; c + 1 < board.columns; ++c)
      out.emplace_back(0.0, (0.5 * (board.columns - 2) - c) * s, (0.5 * (board.rows - 2) - r) * s);
  return out;
}

std::vector<Vec3> BoardInnerCornersInWorld(const config::CalibrationBoardDef& board, const Pose& camera_world) {
  const Pose p = BoardPoseInWorld(board, camera_world);
  std::vector<Vec3> out = BoardInnerCornersInBoard(board);
  for (auto& v : out) v = p.position_m + p.orientation * v;
  return out;
}

Eigen::Vector2d BoardOuterSize(const config::CalibrationBoardDef& board) {
  return Eigen::Vector2d((board.columns + 2) * board.square_m, (board.rows + 2) * board.square_m);
}

bool BoardSquareBlack(int column, int row) { return (column + row) % 2 == 0; }

osg::ref_ptr<osg::Node> BuildCalibrationBoard(const config::CalibrationBoardDef& board) {
  // Cell (i, j) of the (columns + 2) x (rows + 2) grid; the outer ring is the white border. Neighbouring
  // quads share their corner coordinates exactly, so the rasteriser leaves no gap and draws no pixel twice.
  const int cols = board.columns + 2, rows = board.rows + 2;
  const double s = board.square_m;
  const auto y_at = [&](int i) { return static_cast<float>((0.5 * cols - i) * s); };
  const auto z_at = [&](int j) { return static_cast<float>((0.5 * rows - j) * s); };
  osg::ref_ptr<osg::Vec3Array> v = new osg::Vec3Array;
  osg::ref_ptr<osg::Vec4Array> colour = new osg::Vec4Array;
  for (int j = 0; j < rows; ++j)
    for (int i = 0; i < cols; ++i) {
      const bool border = i == 0 || j == 0 || i == cols - 1 || j == rows - 1;
      const float k = !border && BoardSquareBlack(i - 1, j - 1) ? 0.0f : 1.0f;
      const osg::Vec3 a(0, y_at(i), z_at(j)), b(0, y_at(i + 1), z_at(j)), c(0, y_at(i + 1), z_at(j + 1)),
          d(0, y_at(i), z_at(j + 1));
      for (const auto& p : {a, b, c, a, c, d}) {
        v->push_back(p);
        colour->push_back(osg::Vec4(k, k, k, 1.0f));
      }
    }
  osg::ref_ptr<osg::Geometry> g = new osg::Geometry;
  g->setVertexArray(v.get());
  g->setColorArray(colour.get(), osg::Array::BIND_PER_VERTEX);
  g->addPrimitiveSet(new osg::DrawArrays(GL_TRIANGLES, 0, static_cast<GLsizei>(v->size())));
  osg::ref_ptr<osg::Geode> geode = new osg::Geode;
  geode->addDrawable(g.get());
  // Printed paper: its own colour whatever the light, the fog or the side it is seen from.
  osg::StateSet* ss = geode->getOrCreateStateSet();
  ss->setMode(GL_LIGHTING, osg::StateAttribute::OFF | osg::StateAttribute::OVERRIDE | osg::StateAttribute::PROTECTED);
  ss->setMode(GL_FOG, osg::StateAttribute::OFF | osg::StateAttribute::OVERRIDE | osg::StateAttribute::PROTECTED);
  ss->setMode(GL_CULL_FACE, osg::StateAttribute::OFF | osg::StateAttribute::OVERRIDE | osg::StateAttribute::PROTECTED);
  ss->setTextureMode(0, GL_TEXTURE_2D, osg::StateAttribute::OFF | osg::StateAttribute::OVERRIDE | osg::StateAttribute::PROTECTED);
  // An empty program: the fixed function pipeline, whose light and fog are off above (the scene's shaders
  // would light and fog it).
  ss->setAttributeAndModes(new osg::Program, osg::StateAttribute::ON | osg::StateAttribute::OVERRIDE | osg::StateAttribute::PROTECTED);
  return geode;
}

namespace {

osg::Matrixd BoardMatrix(const Pose& p) {
  // OSG's row-vector convention: rotate, then translate.
  const osg::Quat q(p.orientation.x(), p.orientation.y(), p.orientation.z(), p.orientation.w());
  return osg::Matrixd::rotate(q) * osg::Matrixd::translate(p.position_m.x(), p.position_m.y(), p.position_m.z());
}

}  // namespace

CalibrationBoards::CalibrationBoards(const std::vector<config::CalibrationBoardDef>& boards)
    : defs_(boards), root_(new osg::Group) {
  for (const auto& b : defs_) {
    osg::ref_ptr<osg::MatrixTransform> t = new osg::MatrixTransform;
    t->addChild(BuildCalibrationBoard(b).get());
    t->setMatrix(BoardMatrix(BoardPoseInHolder(b)));
    t->setNodeMask(b.camera.empty() ? ~0u : 0u);
    root_->addChild(t.get());
    transforms_.push_back(t);
  }
}

void CalibrationBoards::Place(const std::string& camera_id, const Pose& camera_world) {
  for (size_t i = 0; i < defs_.size(); ++i) {
    if (defs_[i].camera.empty() || defs_[i].camera != camera_id) continue;
    transforms_[i]->setMatrix(BoardMatrix(BoardPoseInWorld(defs_[i], camera_world)));
    transforms_[i]->setNodeMask(~0u);
  }
}

void CalibrationBoards::Follow(const std::vector<BoardCamera>& cameras,
                               const std::vector<protocol::EntityState>& entities) {
  for (const auto& c : cameras)
    for (const auto& e : entities) {
      if (e.id != c.vehicle_id) continue;
      const Pose& v = e.kinematics.pose;
      Place(c.camera, Pose{v.position_m + v.orientation * c.mount.position_m, (v.orientation * c.mount.orientation).normalized()});
      break;
    }
}

std::vector<BoardCamera> BoardCameras(const config::SessionDef& session) {
  std::vector<BoardCamera> out;
  for (const auto& n : session.nodes) {
    if (n.attach_to.empty()) continue;
    for (const auto& t : n.sensors) {
      if (!t.Has("id") || t.GetString("type", "") != "camera") continue;
      const std::string id = t.GetString("id", "");
      bool holds = false;
      for (const auto& b : session.scene.calibration_boards) holds = holds || b.camera == id;
      if (!holds) continue;
      const auto pos = t.GetDoubleArray("position", {0, 0, 0}, 3);
      const auto rpy = t.GetDoubleArray("rpy_deg", {0, 0, 0}, 3);
      out.push_back(BoardCamera{id, AttachedVehicleId(n.attach_to),
                                Pose{Vec3(pos[0], pos[1], pos[2]),
                                     RotationFromRpy(Vec3(rpy[0], rpy[1], rpy[2]) * (M_PI / 180.0))}});
    }
  }
  return out;
}

bool CalibrationBoards::Shown(size_t index) const {
  return index < transforms_.size() && transforms_[index]->getNodeMask() != 0u;
}

}  // namespace platoon::viewer
