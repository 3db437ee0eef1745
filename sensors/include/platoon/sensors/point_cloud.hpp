#pragma once
/// Point-cloud processing for the fusion node's optional downstream stage and for export: a compact
/// point record (`CloudPoint`), voxel-grid downsampling, grid-based ground removal, Euclidean
/// clustering on a uniform hash grid, and scoring of clusters against ground-truth objects.
///
/// Every function is pure and deterministic: no clock, no randomness, no global state; the output
/// depends only on the input values and their order, never on hash-table iteration order. Points with
/// a non-finite coordinate are never ground, never in a voxel and never in a cluster.
/// Methods, parameters and complexity: docs/CLOUD_PROCESSING.md.

#include "platoon/geometry.hpp"
#include "platoon/point_record.hpp"
#include "platoon/sensors/lidar.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace platoon::sensors {

/// One point of a (possibly fused) cloud, as exported and sent over the wire: the shared 36-byte
/// point record (platoon/point_record.hpp; docs/CLOUD_PROCESSING.md §1, §6).
using CloudPoint = PointRecord;

/// Converts one lidar echo; `source` is the lidar's index in the fused frame (0 for a single sensor).
/// LidarPoint::column is not carried (ring, time_offset_s and the position identify the beam).
CloudPoint ToCloudPoint(const LidarPoint& p, uint8_t source);

/// A scan's echoes as the packed point records of PointCloud::points (points.size() * kStride bytes),
/// converted as ToCloudPoint does but in one pass, each field written straight into the blob: no
/// CloudPoint vector in between.
std::string PackLidarPoints(std::span<const LidarPoint> points, uint8_t source);

// ---------------------------------------------------------------------------------------------------
// Voxel downsampling

/// One point per occupied cubic voxel of edge `voxel_m` (voxel (i, j, k) holds floor(x / voxel_m) = i,
/// ...). Each output point lies at the centroid of its voxel's points (accumulated in double, stored
/// as float); intensity_w and snr are averaged; ring, echo, source, entity_id, class_id, reflectivity,
/// return_type and time_offset_s are those of the input point nearest the centroid (lowest input index on a tie).
/// Output order: ascending voxel key (i, then j, then k). Points with a non-finite coordinate or a
/// voxel index beyond +-2^62 are dropped. O(n log n).
/// Throws std::invalid_argument naming `voxel_m` unless voxel_m is finite and > 0.
std::vector<CloudPoint> VoxelDownsample(std::span<const CloudPoint> points, double voxel_m);

// ---------------------------------------------------------------------------------------------------
// Ground removal

/// Read-only definition of the grid-based ground segmentation (docs/CLOUD_PROCESSING.md §3).
/// Works in the cloud's own frame with z up (world or vehicle frame; a sensor frame only if the
/// sensor is mounted level).
struct GroundDef {
  double cell_m = 1.0;              ///< Edge of the x-y grid cell whose lowest z seeds the ground height, in m. 0.5-2.
  double height_above_min_m = 0.2;  ///< Points at most this far above the local ground height are ground, in m.
                                    ///< Must exceed noise (~3 sigma) + max ground slope x cell_m. 0.1-0.3.
  double max_slope = 0.15;          ///< Steepest ground the height field follows between cells, rise/run. 5 % road: 0.05; default 0.15.
  int neighbour_radius_cells = 2;   ///< Cells within this Chebyshev radius are neighbours when smoothing (1 = 8-neighbourhood). 1-4.
  double max_ground_z_m = std::numeric_limits<double>::infinity();  ///< Cells whose ground height lies above this hold no
                                                                    ///< ground, in m. Default: no limit.
  double foot_cell_m = 0.15;   ///< Edge of the fine x-y column used to keep the foot of vertical structures, in m; 0 disables.
  double foot_height_m = 0.5;  ///< A column whose non-ground point lies at most this above the ground height is the foot of a
                               ///< structure, in m (>= height_above_min_m). Overhangs higher than this keep their ground.
};

/// Default ground definition (the member defaults above).
GroundDef DefaultGroundDef();
/// Empty if valid, otherwise a message naming the first bad field ("GroundDef.cell_m must be > 0, got -1").
std::string ValidateGroundDef(const GroundDef& def);

/// Ground mask, one entry per input point: 1 = ground, 0 = not ground (obstacle, or non-finite point).
///
/// Method: (1) the lowest z of each occupied cell_m x cell_m cell; (2) a slope-limited lower envelope of
/// those minima, g(c) = min over occupied cells c' reachable through neighbours of
/// (zmin(c') + max_slope * path length(c, c')) (Dijkstra), so a cell that only holds a roof takes its
/// height from the ground around it; (3) a point is ground if z - g(cell) <= height_above_min_m and
/// g(cell) <= max_ground_z_m; (4) foot of structures: within a foot_cell_m column, ground candidates are
/// reclassified as not ground if the column also holds a non-ground point at most foot_height_m above
/// g (a wall rising from the ground, not an overhang), so boxes keep their bottom strip.
/// O(n log n + C k log C) for C occupied cells and k = (2 r + 1)^2 - 1 neighbours.
/// Throws std::invalid_argument with ValidateGroundDef's message for an invalid definition.
std::vector<uint8_t> GroundMask(std::span<const CloudPoint> points, const GroundDef& def);

/// A cloud split into ground and the rest, each in input order.
struct GroundSplit {
  std::vector<CloudPoint> ground;     ///< Points GroundMask marks 1.
  std::vector<CloudPoint> obstacles;  ///< All other points (non-finite points included).
};

/// GroundMask applied: splits `points` into ground and obstacles, keeping input order.
GroundSplit SplitGround(std::span<const CloudPoint> points, const GroundDef& def);

// ---------------------------------------------------------------------------------------------------
// Euclidean clustering

/// Read-only definition of Euclidean clustering (docs/CLOUD_PROCESSING.md §4).
struct ClusterDef {
  double tolerance_m = 0.5;     ///< Points closer than or at this distance are connected, in m. 0.2-1.0.
  size_t min_points = 3;        ///< Connected components with fewer points are dropped.
  size_t max_points = 100000;   ///< Connected components with more points are dropped.
};

/// Default clustering definition (the member defaults above).
ClusterDef DefaultClusterDef();
/// Empty if valid, otherwise a message naming the first bad field.
std::string ValidateClusterDef(const ClusterDef& def);

/// One cluster: a connected component of the "distance <= tolerance_m" graph.
struct Cluster {
  std::vector<uint32_t> indices;   ///< Indices into the input span, ascending.
  Vec3 centroid_m = Vec3::Zero();  ///< Mean of the member points, in m.
  Vec3 min_m = Vec3::Zero();       ///< Lower corner of the axis-aligned bounding box, in m.
  Vec3 max_m = Vec3::Zero();       ///< Upper corner of the axis-aligned bounding box, in m.
  uint32_t majority_entity_id = 0; ///< Most frequent entity_id among members (smallest id on a tie; 0 counts like any id).
  uint32_t majority_class_id = 0;  ///< Most frequent class_id among members (smallest id on a tie).
};

/// Connected components of the graph linking points at most tolerance_m apart, found with a uniform
/// hash grid of cell tolerance_m (each point examines only the 27 cells around it; union-find), then
/// filtered by [min_points, max_points]. Ordered by smallest member index. O(n k) for k points in a
/// point's 3x3x3 neighbourhood, plus O(n log n) for the grid sort.
/// Throws std::invalid_argument for an invalid definition or more than 2^32 - 1 points.
std::vector<Cluster> EuclideanClusters(std::span<const CloudPoint> points, const ClusterDef& def);

// ---------------------------------------------------------------------------------------------------
// Scoring against ground truth

/// One ground-truth object to score clusters against.
struct TruthObject {
  uint32_t entity_id = 0;          ///< Entity id of the object.
  Vec3 centre_m = Vec3::Zero();    ///< Centre of its bounding box, same frame as the cloud, in m.
  Vec3 size_m = Vec3::Zero();      ///< Length, width, height of its box, in m (carried for reports; matching uses the centre).
};

/// Detection figures of one frame.
struct DetectionScore {
  size_t true_positives = 0;   ///< Clusters matched to a truth object.
  size_t false_positives = 0;  ///< Clusters left unmatched.
  size_t false_negatives = 0;  ///< Truth objects left unmatched.
  double precision = 1.0;      ///< TP / (TP + FP); 1 when there are no clusters (no false detection was made).
  double recall = 1.0;         ///< TP / (TP + FN); 1 when there is no truth object (nothing was missed).
  double mean_position_error_m = 0.0;  ///< Mean x-y distance of matched centroid to truth centre, in m; 0 without matches.
  double max_position_error_m = 0.0;   ///< Largest such distance, in m; 0 without matches.
};

/// Greedy nearest matching in x-y: all (cluster, truth) pairs with x-y distance between cluster
/// centroid and truth centre <= match_distance_m, taken in ascending distance (then cluster index,
/// then truth index), each cluster and each truth used at most once. z is ignored.
/// O(C T log(C T)). Throws std::invalid_argument naming match_distance_m unless it is finite and >= 0.
DetectionScore ScoreClusters(std::span<const Cluster> clusters, std::span<const TruthObject> truth,
                             double match_distance_m);

}  // namespace platoon::sensors
