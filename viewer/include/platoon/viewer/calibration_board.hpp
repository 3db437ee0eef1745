#pragma once
/// The calibration board of seed 004 §5.5 ([[scene.calibration_board]], docs/WORLD.md): where its squares and
/// inner corners are (pure geometry, for tests and tools) and its unlit OSG drawing. A board is held either
/// by the world frame or by a camera sensor's frame C (x forward, y left, z up), with which it moves.

#include "platoon/config/session.hpp"
#include "platoon/geometry.hpp"
#include "platoon/protocol/messages.hpp"

#include <osg/Group>
#include <osg/MatrixTransform>
#include <osg/ref_ptr>

#include <string>
#include <vector>

namespace platoon::viewer {

/// Rotation of roll, pitch, yaw applied z-y-x (R = Rz(yaw) Ry(pitch) Rx(roll)), angles in rad; the
/// convention of sensor mountings and of the board's rpy_deg.
Quat RotationFromRpy(const Vec3& rpy_rad);

/// Pose of the board frame B in its holding frame (camera frame C, or the world when `camera` is "").
Pose BoardPoseInHolder(const config::CalibrationBoardDef& board);

/// Pose of B in the world: the holding camera's world pose composed with BoardPoseInHolder, or
/// BoardPoseInHolder itself for a world board (`camera_world` is then not used).
Pose BoardPoseInWorld(const config::CalibrationBoardDef& board, const Pose& camera_world);

/// The (columns - 1) x (rows - 1) inner corners in B, in m, row by row from the top-left one as seen from
/// the front (the order of OpenCV's findChessboardCorners on an upright image): corner (c, r) is at
/// (0, ((columns - 2) / 2 - c) square_m, ((rows - 2) / 2 - r) square_m).
std::vector<Vec3> BoardInnerCornersInBoard(const config::CalibrationBoardDef& board);

/// The inner corners in the world, in m (BoardPoseInWorld applied to BoardInnerCornersInBoard).
std::vector<Vec3> BoardInnerCornersInWorld(const config::CalibrationBoardDef& board, const Pose& camera_world);

/// Width (along y of B) and height (along z) of the whole board with its white border, in m:
/// (columns + 2) square_m by (rows + 2) square_m.
Eigen::Vector2d BoardOuterSize(const config::CalibrationBoardDef& board);

/// Whether square (c, r) (c = 0 at the left, r = 0 at the top, seen from the front) is black: when c + r is even.
bool BoardSquareBlack(int column, int row);

/// A camera sensor that holds boards: on vehicle `vehicle_id` (its sensor node's attach_to) at `mount`.
struct BoardCamera {
  std::string camera;         ///< The camera sensor's id.
  uint64_t vehicle_id = 0;    ///< Entity id of the vehicle it is mounted on.
  Pose mount;                 ///< Camera frame C in the vehicle's body frame (its position and rpy_deg keys).
};

/// The camera sensors of `session` that hold a calibration board, with their vehicles and mountings (read
/// from the [[node.sensor]] tables as the sensor host reads them: position, rpy_deg applied z-y-x).
std::vector<BoardCamera> BoardCameras(const config::SessionDef& session);

/// The boards of a session, drawn: one transform per board, unlit, fog off, both faces drawn. World boards
/// are placed at once; a camera's boards stay hidden until Place is given that camera's pose.
class CalibrationBoards {
 public:
  /// Draws `boards` (for example SessionDef::scene.calibration_boards).
  explicit CalibrationBoards(const std::vector<config::CalibrationBoardDef>& boards);

  /// Group of every board, to add to a scene graph's root.
  osg::Group* Root() const { return root_.get(); }
  /// Number of boards.
  size_t Count() const { return transforms_.size(); }
  /// Shows the boards held by camera `camera_id` at the pose that camera has now (`camera_world`).
  void Place(const std::string& camera_id, const Pose& camera_world);
  /// Places the boards of every camera in `cameras` on its vehicle in `entities` (the world drawn now);
  /// a camera whose vehicle is not there keeps its boards where they were.
  void Follow(const std::vector<BoardCamera>& cameras, const std::vector<protocol::EntityState>& entities);
  /// Whether board `index` is shown (world boards always, camera boards once placed).
  bool Shown(size_t index) const;

 private:
  std::vector<config::CalibrationBoardDef> defs_;
  osg::ref_ptr<osg::Group> root_;
  std::vector<osg::ref_ptr<osg::MatrixTransform>> transforms_;
};

/// The board's drawing in B: (columns + 2) x (rows + 2) unlit quads, the outer ring white.
osg::ref_ptr<osg::Node> BuildCalibrationBoard(const config::CalibrationBoardDef& board);

}  // namespace platoon::viewer
