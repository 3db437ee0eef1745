// The project's test FMU: platoon's own single-track model (vehicle::Step with the default VehicleDef) as
// an FMI 2.0 co-simulation slave, built into binaries/linux64/<modelIdentifier>.so of the test .fmu files
// (tests/fmu/CMakeLists.txt). The variables and value references are those of modelDescription.xml.in.
// Built with PLATOON_FMU_FAIL_AFTER_STEPS=N it refuses its N+1st step with fmi2Error (the failing FMU of
// the error tests); PLATOON_FMU_IDENTIFIER names the build in its log.
#include "platoon/vehicle/fmi2_api.hpp"
#include "platoon/vehicle/single_track.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace single_track_fmu {

namespace fmi2 = platoon::vehicle::fmi2;
namespace vehicle = platoon::vehicle;

constexpr const char* kGuid = "{platoon-single-track-fmu-1}";

// Value references (modelDescription.xml.in).
enum RealVr : fmi2::ValueReference {
  kSteer = 0, kThrottle = 1, kBrake = 2, kRoadSlope = 3, kMuFl = 4, kMuFr = 5, kMuRl = 6, kMuRr = 7,
  kX = 10, kY = 11, kYaw = 12, kVx = 13, kVy = 14, kYawRate = 15, kAx = 16, kAy = 17, kSteerAngle = 18,
  kX0 = 20, kY0 = 21, kYaw0 = 22, kVx0 = 23,
};

// One instance: the definition, the state, the inputs and the start parameters.
struct Instance {
  std::string name;
  fmi2::CallbackFunctions callbacks{};
  vehicle::VehicleDef def = vehicle::DefaultVehicleDef();
  vehicle::VehicleState state;
  vehicle::VehicleInput input;
  double road_slope_rad = 0;
  double mu[4] = {1, 1, 1, 1};
  double x0 = 0, y0 = 0, yaw0 = 0, vx0 = 0;
  double time_s = 0;
  long steps = 0;
  bool initialised = false;
};

void Log(Instance* in, fmi2::Status status, const char* message) {
  if (in && in->callbacks.logger)
    in->callbacks.logger(in->callbacks.component_environment, in->name.c_str(), status, status >= fmi2::kError ? "error" : "info",
                         "%s", message);
}

double* RealSlot(Instance* in, fmi2::ValueReference vr) {
  switch (vr) {
    case kSteer: return &in->input.steer;
    case kThrottle: return &in->input.throttle;
    case kBrake: return &in->input.brake;
    case kRoadSlope: return &in->road_slope_rad;
    case kMuFl: return &in->mu[0];
    case kMuFr: return &in->mu[1];
    case kMuRl: return &in->mu[2];
    case kMuRr: return &in->mu[3];
    case kX0: return &in->x0;
    case kY0: return &in->y0;
    case kYaw0: return &in->yaw0;
    case kVx0: return &in->vx0;
  }
  return nullptr;
}

bool ReadReal(const Instance* in, fmi2::ValueReference vr, double& out) {
  const vehicle::VehicleState& s = in->state;
  switch (vr) {
    case kX: out = s.x_m; return true;
    case kY: out = s.y_m; return true;
    case kYaw: out = s.yaw_rad; return true;
    case kVx: out = s.vx_mps; return true;
    case kVy: out = s.vy_mps; return true;
    case kYawRate: out = s.yaw_rate_radps; return true;
    case kAx: out = s.ax_mps2; return true;
    case kAy: out = s.ay_mps2; return true;
    case kSteerAngle: out = s.steer_rad; return true;
  }
  if (double* p = RealSlot(const_cast<Instance*>(in), vr)) {
    out = *p;
    return true;
  }
  return false;
}

}  // namespace single_track_fmu

#define PLATOON_FMU_EXPORT extern "C" __attribute__((visibility("default")))
#define PLATOON_FMU_STR2(x) #x
#define PLATOON_FMU_STRINGIFY(x) PLATOON_FMU_STR2(x)

using namespace single_track_fmu;
namespace fmi2 = platoon::vehicle::fmi2;

PLATOON_FMU_EXPORT const char* fmi2GetTypesPlatform() { return "default"; }
PLATOON_FMU_EXPORT const char* fmi2GetVersion() { return "2.0"; }

PLATOON_FMU_EXPORT fmi2::Status fmi2SetDebugLogging(fmi2::Component, fmi2::Boolean, std::size_t, const fmi2::String[]) {
  return fmi2::kOk;
}

PLATOON_FMU_EXPORT fmi2::Component fmi2Instantiate(fmi2::String instance_name, fmi2::Type type, fmi2::String guid,
                                                   fmi2::String, const fmi2::CallbackFunctions* functions, fmi2::Boolean,
                                                   fmi2::Boolean) {
  Instance probe;
  if (functions) probe.callbacks = *functions;
  probe.name = instance_name ? instance_name : "";
  if (type != fmi2::kCoSimulation) {
    Log(&probe, fmi2::kError, "this FMU is a co-simulation slave only");
    return nullptr;
  }
  if (!guid || std::strcmp(guid, kGuid) != 0) {
    Log(&probe, fmi2::kError, "the guid does not match this FMU's modelDescription.xml");
    return nullptr;
  }
  auto* in = new (std::nothrow) Instance(std::move(probe));
  return in;
}

PLATOON_FMU_EXPORT void fmi2FreeInstance(fmi2::Component c) { delete static_cast<Instance*>(c); }

PLATOON_FMU_EXPORT fmi2::Status fmi2SetupExperiment(fmi2::Component c, fmi2::Boolean, fmi2::Real, fmi2::Real start_time,
                                                    fmi2::Boolean, fmi2::Real) {
  static_cast<Instance*>(c)->time_s = start_time;
  return fmi2::kOk;
}

PLATOON_FMU_EXPORT fmi2::Status fmi2EnterInitializationMode(fmi2::Component) { return fmi2::kOk; }

PLATOON_FMU_EXPORT fmi2::Status fmi2ExitInitializationMode(fmi2::Component c) {
  auto* in = static_cast<Instance*>(c);
  // The start: the CG at (x0, y0), heading yaw0, moving at vx0.
  in->state = platoon::vehicle::VehicleState{};
  in->state.x_m = in->x0;
  in->state.y_m = in->y0;
  in->state.yaw_rad = in->yaw0;
  in->state.vx_mps = in->vx0;
  in->initialised = true;
  return fmi2::kOk;
}

PLATOON_FMU_EXPORT fmi2::Status fmi2Terminate(fmi2::Component) { return fmi2::kOk; }

PLATOON_FMU_EXPORT fmi2::Status fmi2Reset(fmi2::Component c) {
  auto* in = static_cast<Instance*>(c);
  Instance fresh;
  fresh.name = in->name;
  fresh.callbacks = in->callbacks;
  *in = fresh;
  return fmi2::kOk;
}

PLATOON_FMU_EXPORT fmi2::Status fmi2GetReal(fmi2::Component c, const fmi2::ValueReference vr[], std::size_t n, fmi2::Real value[]) {
  auto* in = static_cast<Instance*>(c);
  for (std::size_t i = 0; i < n; ++i)
    if (!ReadReal(in, vr[i], value[i])) {
      Log(in, fmi2::kError, "fmi2GetReal: unknown value reference");
      return fmi2::kError;
    }
  return fmi2::kOk;
}

PLATOON_FMU_EXPORT fmi2::Status fmi2SetReal(fmi2::Component c, const fmi2::ValueReference vr[], std::size_t n,
                                            const fmi2::Real value[]) {
  auto* in = static_cast<Instance*>(c);
  for (std::size_t i = 0; i < n; ++i) {
    double* slot = RealSlot(in, vr[i]);
    if (!slot) {
      Log(in, fmi2::kError, "fmi2SetReal: the value reference is no input or parameter");
      return fmi2::kError;
    }
    *slot = value[i];
  }
  return fmi2::kOk;
}

// No Integer, Boolean or String variables: any reference is refused.
PLATOON_FMU_EXPORT fmi2::Status fmi2GetInteger(fmi2::Component c, const fmi2::ValueReference[], std::size_t n, fmi2::Integer[]) {
  if (n == 0) return fmi2::kOk;
  Log(static_cast<Instance*>(c), fmi2::kError, "fmi2GetInteger: this FMU has no Integer variables");
  return fmi2::kError;
}
PLATOON_FMU_EXPORT fmi2::Status fmi2SetInteger(fmi2::Component c, const fmi2::ValueReference[], std::size_t n,
                                               const fmi2::Integer[]) {
  if (n == 0) return fmi2::kOk;
  Log(static_cast<Instance*>(c), fmi2::kError, "fmi2SetInteger: this FMU has no Integer variables");
  return fmi2::kError;
}
PLATOON_FMU_EXPORT fmi2::Status fmi2GetBoolean(fmi2::Component c, const fmi2::ValueReference[], std::size_t n, fmi2::Boolean[]) {
  if (n == 0) return fmi2::kOk;
  Log(static_cast<Instance*>(c), fmi2::kError, "fmi2GetBoolean: this FMU has no Boolean variables");
  return fmi2::kError;
}
PLATOON_FMU_EXPORT fmi2::Status fmi2SetBoolean(fmi2::Component c, const fmi2::ValueReference[], std::size_t n,
                                               const fmi2::Boolean[]) {
  if (n == 0) return fmi2::kOk;
  Log(static_cast<Instance*>(c), fmi2::kError, "fmi2SetBoolean: this FMU has no Boolean variables");
  return fmi2::kError;
}

PLATOON_FMU_EXPORT fmi2::Status fmi2DoStep(fmi2::Component c, fmi2::Real current_time, fmi2::Real step_size, fmi2::Boolean) {
  auto* in = static_cast<Instance*>(c);
  if (!in->initialised) {
    Log(in, fmi2::kError, "fmi2DoStep before fmi2ExitInitializationMode");
    return fmi2::kError;
  }
#ifdef PLATOON_FMU_FAIL_AFTER_STEPS
  if (in->steps >= PLATOON_FMU_FAIL_AFTER_STEPS) {
    Log(in, fmi2::kError, "deliberate failure of the test FMU after " PLATOON_FMU_STRINGIFY(PLATOON_FMU_FAIL_AFTER_STEPS) " steps");
    return fmi2::kError;
  }
#endif
  // The single-track model on the road's friction (the mean of the four wheels) and grade.
  in->def.mu = 0.25 * (in->mu[0] + in->mu[1] + in->mu[2] + in->mu[3]);
  in->state = platoon::vehicle::Step(in->def, in->state, in->input, step_size, in->road_slope_rad);
  in->time_s = current_time + step_size;
  ++in->steps;
  return fmi2::kOk;
}

PLATOON_FMU_EXPORT fmi2::Status fmi2CancelStep(fmi2::Component) { return fmi2::kError; }
