#include "platoon/vehicle/controller.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace platoon::vehicle {

void VehicleController::Add(Intervention intervention) { interventions_.push_back(std::move(intervention)); }

std::vector<std::string> VehicleController::Names() const {
  std::vector<std::string> names;
  names.reserve(interventions_.size());
  for (const auto& i : interventions_) names.push_back(i.name);
  return names;
}

VehicleInput VehicleController::Apply(const VehicleDef& def, const VehicleState& state,
                                      const VehicleInput& driver) const {
  VehicleInput command = driver;
  for (const auto& i : interventions_) command = i.correct(def, state, command);
  return command;
}

Intervention SpeedLimiter(const SpeedLimiterDef& limiter) {
  return {"speed_limiter", [limiter](const VehicleDef&, const VehicleState& s, const VehicleInput& in) {
            VehicleInput out = in;
            const double cap = std::clamp(limiter.gain_per_mps * (limiter.max_speed_mps - s.vx_mps), 0.0, 1.0);
            out.throttle = std::min(in.throttle, cap);
            return out;
          }};
}

Intervention Abs(const AbsDef& abs) {
  return {"abs", [abs](const VehicleDef& def, const VehicleState& s, const VehicleInput& in) {
            VehicleInput out = in;
            if (std::abs(s.vx_mps) < abs.min_speed_mps || in.brake <= 0) return out;
            // Brake force per unit pedal on each axle, against each axle's peak friction force.
            const AxleLoads loads = ComputeAxleLoads(def, s, 0.0);
            const double full_n = def.max_brake_torque_nm / def.wheel_radius_m;
            const double front_per_pedal_n = full_n * def.brake_front_share;
            const double rear_per_pedal_n = full_n - front_per_pedal_n;
            double cap = 1.0;
            if (front_per_pedal_n > 0) {
              cap = std::min(cap, abs.utilization * def.mu * def.tyre_front.d * loads.front_n / front_per_pedal_n);
            }
            if (rear_per_pedal_n > 0) {
              cap = std::min(cap, abs.utilization * def.mu * def.tyre_rear.d * loads.rear_n / rear_per_pedal_n);
            }
            out.brake = std::min(in.brake, std::max(0.0, cap));
            return out;
          }};
}

}  // namespace platoon::vehicle
