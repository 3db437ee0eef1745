// btRaycastVehicle wrapper: static ground (road mesh or plane), static boxes, four-wheel vehicles
// stepped in fixed substeps. Equations (B1)...(B6) as numbered in docs/BULLET_VEHICLE.md.
#include "platoon/vehicle/bullet_vehicle.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wdeprecated-copy"
#pragma GCC diagnostic ignored "-Wclass-memaccess"
#pragma GCC diagnostic ignored "-Wreorder"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#include <btBulletDynamicsCommon.h>
#include <BulletDynamics/Vehicle/btRaycastVehicle.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

namespace platoon::vehicle {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Wheel order everywhere: front left, front right, rear left, rear right.
constexpr int kWheels = 4;

btVector3 ToBt(const Vec3& v) { return btVector3(v.x(), v.y(), v.z()); }
Vec3 FromBt(const btVector3& v) { return Vec3(v.x(), v.y(), v.z()); }
Quat FromBt(const btQuaternion& q) { return Quat(q.w(), q.x(), q.y(), q.z()); }

// Closest ray hit that skips one object (the vehicle's own chassis), so wheel rays may start inside
// the chassis box whatever Bullet's convex ray test does there.
struct ClosestNotMeRayCallback : btCollisionWorld::ClosestRayResultCallback {
  ClosestNotMeRayCallback(const btVector3& from, const btVector3& to, const btCollisionObject* me)
      : btCollisionWorld::ClosestRayResultCallback(from, to), me_(me) {}
  btScalar addSingleResult(btCollisionWorld::LocalRayResult& r, bool normal_in_world) override {
    if (r.m_collisionObject == me_) return 1.0;
    return ClosestRayResultCallback::addSingleResult(r, normal_in_world);
  }
  const btCollisionObject* me_;
};

// Wheel ray caster of one vehicle (Bullet's default one would also hit its own chassis).
class NotMeRaycaster : public btVehicleRaycaster {
 public:
  NotMeRaycaster(btDynamicsWorld* world, const btCollisionObject* me) : world_(world), me_(me) {}
  void* castRay(const btVector3& from, const btVector3& to, btVehicleRaycasterResult& result) override {
    ClosestNotMeRayCallback cb(from, to, me_);
    world_->rayTest(from, to, cb);
    if (!cb.hasHit()) return nullptr;
    const btRigidBody* body = btRigidBody::upcast(cb.m_collisionObject);
    if (body == nullptr || !body->hasContactResponse()) return nullptr;
    result.m_hitPointInWorld = cb.m_hitPointWorld;
    result.m_hitNormalInWorld = cb.m_hitNormalWorld.normalized();
    result.m_distFraction = cb.m_closestHitFraction;
    return const_cast<btRigidBody*>(body);
  }

 private:
  btDynamicsWorld* world_;
  const btCollisionObject* me_;
};

// FNV-1a 64 over one double, with -0.0 folded into +0.0.
void HashDouble(uint64_t& h, double v) {
  if (v == 0.0) v = 0.0;
  unsigned char b[sizeof(double)];
  std::memcpy(b, &v, sizeof(double));
  for (unsigned char c : b) {
    h ^= c;
    h *= 1099511628211ULL;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// World

struct BulletWorld::Impl {
  explicit Impl(const BulletWorldDef& d)
      : def(d), dispatcher(&config), world(&dispatcher, &broadphase, &solver, &config) {
    world.setGravity(btVector3(0, 0, -def.gravity_mps2));
  }
  ~Impl() {
    // Bodies out of the world before the world, shapes and meshes go.
    for (auto& b : statics) world.removeRigidBody(b.get());
  }

  void AddStatic(std::unique_ptr<btCollisionShape> shape, const btTransform& tf) {
    btRigidBody::btRigidBodyConstructionInfo ci(0.0, nullptr, shape.get());
    ci.m_startWorldTransform = tf;
    ci.m_friction = def.ground_friction;
    auto body = std::make_unique<btRigidBody>(ci);
    world.addRigidBody(body.get());
    shapes.push_back(std::move(shape));
    statics.push_back(std::move(body));
  }

  void Substep();

  BulletWorldDef def;
  // Declaration order matters: the world is destroyed before what it points to.
  std::vector<std::unique_ptr<btTriangleMesh>> meshes;
  std::vector<std::unique_ptr<btCollisionShape>> shapes;
  btDefaultCollisionConfiguration config;
  btCollisionDispatcher dispatcher;
  btDbvtBroadphase broadphase;
  btSequentialImpulseConstraintSolver solver;
  btDiscreteDynamicsWorld world;
  std::vector<std::unique_ptr<btRigidBody>> statics;
  std::vector<BulletVehicle::Impl*> vehicles;  // in creation order: determinism
  double remainder_s = 0.0;
  int64_t substeps = 0;
};

// ---------------------------------------------------------------------------------------------
// Vehicle

struct BulletVehicle::Impl {
  Impl(BulletWorld::Impl* w, const VehicleDef& d, const BulletVehicleDef& bd, const Vec3& rear_axle_m,
       double yaw_rad, double drop_m);
  ~Impl();

  // Sets steering, engine force and brake for one substep of `h_s` seconds.
  void ApplyControls(double h_s);
  // Counts chassis contact points with static objects after a substep.
  int CountContacts() const;
  Vec3 CgVelocity() const { return FromBt(body->getLinearVelocity()); }

  BulletWorld::Impl* world;
  VehicleDef def;
  BulletVehicleDef bdef;
  btBoxShape box;
  btCompoundShape compound;
  std::unique_ptr<btRigidBody> body;
  std::unique_ptr<NotMeRaycaster> raycaster;
  btRaycastVehicle::btVehicleTuning tuning;
  std::unique_ptr<btRaycastVehicle> vehicle;
  VehicleInput input;
  double steer_rad = 0.0;
  int contacts = 0;
  int64_t contact_substeps = 0;
  Vec3 step_start_velocity_mps = Vec3::Zero();
  Vec3 accel_mps2 = Vec3::Zero();
};

BulletVehicle::Impl::Impl(BulletWorld::Impl* w, const VehicleDef& d, const BulletVehicleDef& bd,
                          const Vec3& rear_axle_m, double yaw_rad, double drop_m)
    : world(w),
      def(d),
      bdef(bd),
      box(btVector3(bd.body_length_m / 2, bd.body_width_m / 2, bd.body_height_m / 2)) {
  assert(def.mass_kg > 0 && def.wheel_radius_m > 0 && def.WheelbaseM() > 0);
  assert(bdef.suspension_stiffness_npm > 0 && bdef.suspension_rest_length_m > 0);
  const double m = def.mass_kg, lf = def.cg_to_front_m, lr = def.cg_to_rear_m, h = def.cg_height_m;
  const double g = world->def.gravity_mps2;

  // Chassis box in the CG frame: front face front_overhang_m ahead of the front axle, bottom at
  // ground_clearance_m above the ground at static ride height (CG at cg_height_m).
  const double x_front = lf + bdef.front_overhang_m;
  const double z_bottom = bdef.ground_clearance_m - h;
  btTransform child;
  child.setIdentity();
  child.setOrigin(btVector3(x_front - bdef.body_length_m / 2, 0, z_bottom + bdef.body_height_m / 2));
  compound.addChildShape(child, &box);

  // Inertia: a uniform box for roll and pitch, the definition's yaw inertia for yaw.
  const double L = bdef.body_length_m, W = bdef.body_width_m, H = bdef.body_height_m;
  const btVector3 inertia(m / 12 * (W * W + H * H), m / 12 * (L * L + H * H), def.yaw_inertia_kgm2);

  // Start pose: CG above the rear-axle ground point by (lr, 0, h + drop) in the yawed frame.
  const Quat q(Eigen::AngleAxisd(yaw_rad, Vec3::UnitZ()));
  const Vec3 cg = rear_axle_m + q * Vec3(lr, 0, h + drop_m);
  btTransform start;
  start.setIdentity();
  start.setOrigin(ToBt(cg));
  start.setRotation(btQuaternion(btVector3(0, 0, 1), yaw_rad));
  btRigidBody::btRigidBodyConstructionInfo ci(m, nullptr, &compound, inertia);
  ci.m_startWorldTransform = start;
  ci.m_friction = 0.6;
  body = std::make_unique<btRigidBody>(ci);
  body->setActivationState(DISABLE_DEACTIVATION);
  world->world.addRigidBody(body.get());

  // (B1) Bullet's suspension constants are per unit chassis mass: k' = k / m, c' = c / m.
  tuning.m_suspensionStiffness = bdef.suspension_stiffness_npm / m;
  tuning.m_suspensionCompression = bdef.suspension_compression_damping_nspm / m;
  tuning.m_suspensionDamping = bdef.suspension_relaxation_damping_nspm / m;
  tuning.m_maxSuspensionTravelCm = bdef.suspension_max_travel_m * 100.0;
  tuning.m_frictionSlip = def.mu;
  tuning.m_maxSuspensionForce = bdef.max_suspension_force_n;

  raycaster = std::make_unique<NotMeRaycaster>(&world->world, body.get());
  vehicle = std::make_unique<btRaycastVehicle>(tuning, body.get(), raycaster.get());
  // Right = y (the wheel axle points to -y), up = z, forward = x.
  vehicle->setCoordinateSystem(1, 2, 0);

  // (B2) Connection heights so that the body rides level with the CG at cg_height_m under the
  // static axle loads: z_c = (rest - F_axle / (2 k)) + r - h.
  const double load_front_n = m * g * lr / (lf + lr) / 2;
  const double load_rear_n = m * g * lf / (lf + lr) / 2;
  const double rest = bdef.suspension_rest_length_m, r = def.wheel_radius_m;
  const double zc_front = rest - load_front_n / bdef.suspension_stiffness_npm + r - h;
  const double zc_rear = rest - load_rear_n / bdef.suspension_stiffness_npm + r - h;
  const double half_track = bdef.track_width_m / 2;
  const btVector3 down(0, 0, -1), axle(0, -1, 0);
  vehicle->addWheel(btVector3(lf, half_track, zc_front), down, axle, rest, r, tuning, true);
  vehicle->addWheel(btVector3(lf, -half_track, zc_front), down, axle, rest, r, tuning, true);
  vehicle->addWheel(btVector3(-lr, half_track, zc_rear), down, axle, rest, r, tuning, false);
  vehicle->addWheel(btVector3(-lr, -half_track, zc_rear), down, axle, rest, r, tuning, false);
  for (int i = 0; i < kWheels; ++i) {
    btWheelInfo& wi = vehicle->getWheelInfo(i);
    wi.m_rollInfluence = bdef.roll_influence;
    // btWheelInfo leaves its computed fields uninitialised until the first update; ApplyControls
    // reads the suspension force before that, and determinism needs defined values.
    wi.m_wheelsSuspensionForce = 0.0;
    wi.m_suspensionRelativeVelocity = 0.0;
    wi.m_clippedInvContactDotSuspension = 1.0;
    wi.m_skidInfo = 1.0;
  }
  world->world.addAction(vehicle.get());
  world->vehicles.push_back(this);
}

BulletVehicle::Impl::~Impl() {
  world->world.removeAction(vehicle.get());
  world->world.removeRigidBody(body.get());
  auto& v = world->vehicles;
  v.erase(std::remove(v.begin(), v.end(), this), v.end());
}

void BulletVehicle::Impl::ApplyControls(double h_s) {
  // Steering: target angle from the input, rate-limited as in the single-track model.
  const double target = std::clamp(input.steer, -1.0, 1.0) * def.max_steer_rad;
  const double max_delta = def.max_steer_rate_radps * h_s;
  steer_rad += std::clamp(target - steer_rad, -max_delta, max_delta);
  vehicle->setSteeringValue(steer_rad, 0);
  vehicle->setSteeringValue(steer_rad, 1);

  // (B3) Drive force from the engine (torque- then power-limited), less rolling resistance.
  const double vx = vehicle->getCurrentSpeedKmHour() / 3.6;
  const double g = world->def.gravity_mps2;
  // A negative throttle drives in reverse gear: the same engine force, pushing backwards.
  const double gear = input.throttle < 0 ? -1.0 : 1.0;
  const double drive_n = (input.brake > 0 ? 0.0 : std::abs(input.throttle)) * MaxDriveForceN(def, vx);
  const double roll_n = def.rolling_resistance * def.mass_kg * g;
  const double net_n = drive_n - roll_n;
  // (B4) Brake: Bullet takes a per-wheel impulse cap per step, F * h, and ignores it on a wheel
  // with engine force; rolling resistance rides on it when the engine does not cover it.
  const double brake_n = input.brake * def.max_brake_torque_nm / def.wheel_radius_m;
  const double resist_n = brake_n + std::max(0.0, -net_n);
  const double drive_axle_n[2] = {std::max(0.0, net_n) * def.drive_front_share,
                                  std::max(0.0, net_n) * (1 - def.drive_front_share)};
  const double brake_axle_n[2] = {brake_n * def.brake_front_share + (resist_n - brake_n) / 2,
                                  brake_n * (1 - def.brake_front_share) + (resist_n - brake_n) / 2};
  // Bullet's skid test lets a wheel pass up to 2 mu N along its heading (forward factor 0.5), so
  // each wheel's force is capped at mu N with N from the last substep's suspension force.
  for (int i = 0; i < kWheels; ++i) {
    const int axle = i / 2;
    const double grip_n = def.mu * vehicle->getWheelInfo(i).m_wheelsSuspensionForce;
    vehicle->applyEngineForce(gear * std::min(drive_axle_n[axle] / 2, grip_n), i);
    vehicle->setBrake(std::min(brake_axle_n[axle] / 2, grip_n) * h_s, i);
  }

  // (B5) Air drag on the CG, opposing the velocity.
  const btVector3 v = body->getLinearVelocity();
  const double drag = 0.5 * def.air_density_kgm3 * def.drag_area_m2 * v.length();
  body->applyCentralForce(-v * drag);
}

int BulletVehicle::Impl::CountContacts() const {
  int n = 0;
  btDispatcher* d = world->world.getDispatcher();
  for (int i = 0; i < d->getNumManifolds(); ++i) {
    const btPersistentManifold* mf = d->getManifoldByIndexInternal(i);
    const btCollisionObject* a = mf->getBody0();
    const btCollisionObject* b = mf->getBody1();
    const btCollisionObject* other = a == body.get() ? b : (b == body.get() ? a : nullptr);
    if (other == nullptr || !other->isStaticObject()) continue;
    for (int k = 0; k < mf->getNumContacts(); ++k)
      if (mf->getContactPoint(k).getDistance() <= 0.0) ++n;
  }
  return n;
}

void BulletWorld::Impl::Substep() {
  const double h = def.substep_s;
  for (auto* v : vehicles) v->ApplyControls(h);
  // maxSubSteps = 0: exactly one internal step of h, no interpolation.
  world.stepSimulation(h, 0);
  for (auto* v : vehicles) {
    const int c = v->CountContacts();
    v->contacts = std::max(v->contacts, c);
    if (c > 0) ++v->contact_substeps;
  }
  ++substeps;
}

// ---------------------------------------------------------------------------------------------
// BulletWorld API

BulletWorld::BulletWorld(const BulletWorldDef& def) : impl_(std::make_unique<Impl>(def)) {
  assert(def.substep_s > 0 && def.road_sample_step_m > 0 && def.road_margin_m >= 0);
}

BulletWorld::~BulletWorld() { assert(impl_->vehicles.empty() && "destroy vehicles before their world"); }

const BulletWorldDef& BulletWorld::Def() const { return impl_->def; }

void BulletWorld::AddFlatGround(double height_m) {
  btTransform tf;
  tf.setIdentity();
  impl_->AddStatic(std::make_unique<btStaticPlaneShape>(btVector3(0, 0, 1), height_m), tf);
}

void BulletWorld::AddRoadGround(const road::Road& road) {
  // Rows across the road every ~road_sample_step_m: right edge, middle, left edge (plus margins).
  const double len = road.Length();
  const int rows = std::max(1, static_cast<int>(std::ceil(len / impl_->def.road_sample_step_m - 1e-9)));
  const double t_right = road.RightEdgeOffset() - impl_->def.road_margin_m;
  const double t_left = road.LeftEdgeOffset() + impl_->def.road_margin_m;
  const double ts[3] = {t_right, 0.5 * (t_right + t_left), t_left};
  auto mesh = std::make_unique<btTriangleMesh>(true, false);
  std::array<btVector3, 3> prev;
  for (int i = 0; i <= rows; ++i) {
    const double s = len * i / rows;
    std::array<btVector3, 3> cur;
    for (int j = 0; j < 3; ++j) {
      Vec3 p = road.PointAt(s, ts[j]);
      p.z() = road.Height(s);
      cur[j] = ToBt(p);
    }
    // Two triangles per cell, counter-clockwise seen from above (normals up).
    if (i > 0)
      for (int j = 0; j < 2; ++j) {
        mesh->addTriangle(prev[j], cur[j], cur[j + 1], false);
        mesh->addTriangle(prev[j], cur[j + 1], prev[j + 1], false);
      }
    prev = cur;
  }
  auto shape = std::make_unique<btBvhTriangleMeshShape>(mesh.get(), true, true);
  impl_->meshes.push_back(std::move(mesh));
  btTransform tf;
  tf.setIdentity();
  impl_->AddStatic(std::move(shape), tf);
}

void BulletWorld::AddBox(const Vec3& center_m, double yaw_rad, const Vec3& size_m) {
  assert(size_m.x() > 0 && size_m.y() > 0 && size_m.z() > 0);
  btTransform tf;
  tf.setIdentity();
  tf.setOrigin(ToBt(center_m));
  tf.setRotation(btQuaternion(btVector3(0, 0, 1), yaw_rad));
  impl_->AddStatic(std::make_unique<btBoxShape>(ToBt(size_m * 0.5)), tf);
}

void BulletWorld::AddEnvironment(const std::vector<road::EnvObject>& objects) {
  for (const auto& o : objects) AddBox(o.position_m + Vec3(0, 0, o.size_m.z() / 2), o.yaw_rad, o.size_m);
}

void BulletWorld::Step(double dt_s) {
  assert(dt_s >= 0 && std::isfinite(dt_s));
  Impl& w = *impl_;
  // Whole substeps only; the remainder waits for the next call.
  w.remainder_s += dt_s;
  const int n = static_cast<int>(std::floor(w.remainder_s / w.def.substep_s + 1e-6));
  w.remainder_s = std::max(0.0, w.remainder_s - n * w.def.substep_s);
  for (auto* v : w.vehicles) {
    v->contacts = 0;
    v->step_start_velocity_mps = v->CgVelocity();
  }
  for (int i = 0; i < n; ++i) w.Substep();
  // (B6) Acceleration: mean over this step.
  if (n > 0)
    for (auto* v : w.vehicles) v->accel_mps2 = (v->CgVelocity() - v->step_start_velocity_mps) / (n * w.def.substep_s);
}

double BulletWorld::TimeS() const { return static_cast<double>(impl_->substeps) * impl_->def.substep_s; }

int BulletWorld::StaticObjectCount() const { return static_cast<int>(impl_->statics.size()); }

// ---------------------------------------------------------------------------------------------
// BulletVehicle API

BulletVehicle::BulletVehicle(BulletWorld& world, const VehicleDef& def, const BulletVehicleDef& bullet_def,
                             const Vec3& rear_axle_m, double yaw_rad, double drop_m)
    : impl_(std::make_unique<Impl>(world.impl_.get(), def, bullet_def, rear_axle_m, yaw_rad, drop_m)) {}

BulletVehicle::~BulletVehicle() = default;

void BulletVehicle::SetInput(const VehicleInput& input) {
  impl_->input.steer = std::clamp(input.steer, -1.0, 1.0);
  impl_->input.throttle = std::clamp(input.throttle, -1.0, 1.0);
  impl_->input.brake = std::clamp(input.brake, 0.0, 1.0);
}

const VehicleInput& BulletVehicle::Input() const { return impl_->input; }

KinematicState BulletVehicle::State(int64_t stamp_ns) const {
  const Impl& v = *impl_;
  const btTransform& tf = v.body->getCenterOfMassTransform();
  const Quat q = FromBt(tf.getRotation()).normalized();
  const Vec3 cg = FromBt(tf.getOrigin());
  const Vec3 w = FromBt(v.body->getAngularVelocity());
  // Rigid-body transfer from the CG to the rear-axle ground point, r = (-lr, 0, -h) in the body frame.
  const Vec3 r = q * Vec3(-v.def.cg_to_rear_m, 0, -v.def.cg_height_m);
  KinematicState k;
  k.stamp_ns = stamp_ns;
  k.pose.position_m = cg + r;
  k.pose.orientation = q;
  k.velocity_mps = v.CgVelocity() + w.cross(r);
  k.acceleration_mps2 = v.accel_mps2;
  k.angular_velocity_radps = w;
  return k;
}

double BulletVehicle::SpeedMps() const {
  const btTransform& tf = impl_->body->getCenterOfMassTransform();
  return impl_->body->getLinearVelocity().dot(tf.getBasis().getColumn(0));
}

int BulletVehicle::Contacts() const { return impl_->contacts; }

int64_t BulletVehicle::ContactSubsteps() const { return impl_->contact_substeps; }

std::array<double, 4> BulletVehicle::WheelAnglesRad() const {
  std::array<double, 4> a{};
  for (int i = 0; i < kWheels; ++i) a[i] = std::remainder(impl_->vehicle->getWheelInfo(i).m_rotation, 2 * kPi);
  return a;
}

std::array<bool, 4> BulletVehicle::WheelsInContact() const {
  std::array<bool, 4> c{};
  for (int i = 0; i < kWheels; ++i) c[i] = impl_->vehicle->getWheelInfo(i).m_raycastInfo.m_isInContact;
  return c;
}

double BulletVehicle::SteerRad() const { return impl_->steer_rad; }

uint64_t BulletVehicle::Hash() const {
  uint64_t h = 14695981039346656037ULL;
  const btTransform& tf = impl_->body->getCenterOfMassTransform();
  const btQuaternion q = tf.getRotation();
  const btVector3 p = tf.getOrigin(), v = impl_->body->getLinearVelocity(), w = impl_->body->getAngularVelocity();
  for (double x : {p.x(), p.y(), p.z(), q.x(), q.y(), q.z(), q.w(), v.x(), v.y(), v.z(), w.x(), w.y(), w.z()})
    HashDouble(h, x);
  for (int i = 0; i < kWheels; ++i) HashDouble(h, impl_->vehicle->getWheelInfo(i).m_rotation);
  HashDouble(h, impl_->steer_rad);
  return h;
}

}  // namespace platoon::vehicle
