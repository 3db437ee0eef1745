#pragma once
/// FMI 2.0 co-simulation vehicle models (docs/VEHICLES.md, "FMI 2.0 vehicle models"): an FMU in place of
/// the single-track model. A thin shell: FmuVehicle unzips the .fmu into a private temporary folder (libzip),
/// reads modelDescription.xml (ParseFmuDescription, pure), loads binaries/linux64/<modelIdentifier>.so,
/// instantiates it as a co-simulation slave and steps it with fmi2DoStep. Variables are found by name:
/// inputs steer, throttle, brake (required), gear, road_slope, mu_fl/fr/rl/rr, z_fl/fr/rl/rr (optional);
/// outputs x, y, yaw, vx (required), vy, yaw_rate, ax, ay, steer_angle (optional); start parameters x0, y0,
/// yaw0, vx0 (optional). Every refusal is an FmuError naming the file and what was expected.

#include "platoon/vehicle/single_track.hpp"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace platoon::vehicle {

/// An FMU that cannot be used; what() is "<fmu path>: <what was expected, what was found>".
class FmuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One scalar variable of modelDescription.xml.
struct FmuVariable {
  std::string name;            ///< Its name, e.g. "steer".
  unsigned value_reference = 0;  ///< The valueReference the functions take.
  std::string causality;       ///< "input", "output", "parameter", "local", ... ("local" when absent).
  std::string type;            ///< "Real", "Integer", "Boolean", "String" or "Enumeration".
  std::optional<double> start; ///< Its start value when given (numbers only).
  int line = 0;                ///< Line of its <ScalarVariable> in modelDescription.xml.
};

/// What platoon reads of modelDescription.xml.
struct FmuDescription {
  std::string fmi_version;        ///< fmiVersion; platoon takes "2.0".
  std::string model_name;         ///< modelName.
  std::string guid;               ///< guid, handed to fmi2Instantiate.
  std::string model_identifier;   ///< <CoSimulation modelIdentifier>: the library's name without .so.
  bool can_handle_variable_step = false;  ///< canHandleVariableCommunicationStepSize.
  std::vector<FmuVariable> variables;     ///< Every <ScalarVariable>, in order.
  /// The variable called `name`, or nullptr.
  const FmuVariable* Find(const std::string& name) const;
};

/// Reads a modelDescription.xml text; `source` names it in messages ("car.fmu: modelDescription.xml").
/// Refuses (FmuError "source:line: ...") an XML syntax error, another root than <fmiModelDescription>,
/// fmiVersion other than "2.0", no <CoSimulation> (model exchange only), no modelIdentifier, and a
/// ScalarVariable without a name, a valueReference or a type. Pure.
FmuDescription ParseFmuDescription(const std::string& xml, const std::string& source);

/// The seat's command and the road under the car, as the FMU's inputs take them.
struct FmuInput {
  double steer = 0;     ///< Steering, -1 (full right) .. 1 (full left) ("steer").
  double throttle = 0;  ///< Accelerator pedal, 0..1 ("throttle").
  double brake = 0;     ///< Brake pedal, 0..1 ("brake").
  int gear = 1;         ///< Gear: -1 reverse, 0 neutral, 1 forward ("gear", Integer or Real).
  double road_slope_rad = 0;  ///< Grade along the body x axis, positive uphill, in rad ("road_slope").
  std::array<double, 4> mu{1, 1, 1, 1};  ///< Friction scale under each wheel fl, fr, rl, rr ("mu_fl" ...).
  std::array<double, 4> contact_z_m{};   ///< Road height under each wheel fl, fr, rl, rr, in m ("z_fl" ...).
};

/// Where the vehicle starts, handed to the FMU's start parameters (x0, y0, yaw0, vx0) where it has them.
struct FmuStart {
  double x_m = 0;     ///< CG east, in m.
  double y_m = 0;     ///< CG north, in m.
  double yaw_rad = 0; ///< Heading, counter-clockwise from east, in rad.
  double vx_mps = 0;  ///< Speed along the body x axis, in m/s.
};

/// How an FMU is run.
struct FmuDef {
  std::string path;                   ///< The .fmu file.
  double step_s = 0.001;              ///< Communication step, in s. The driver seat's is 0.001 (1 kHz).
  std::string instance_name = "vehicle";  ///< Instance name handed to fmi2Instantiate (the node's name).
  FmuStart start;                     ///< The start pose and speed.
};
/// Default FMU settings: no file, 1 kHz.
inline FmuDef DefaultFmuDef() { return FmuDef{}; }

/// Severity of a message from the FMU's logger (fmi2OK/fmi2Warning -> info/warning, worse -> error).
enum class FmuLogLevel { kInfo, kWarning, kError };
/// Where the FMU's log messages go: the driver seat hands its logger.
using FmuLogHook = std::function<void(FmuLogLevel level, const std::string& message)>;

/// One FMU instance driving one vehicle. Not copyable; one thread at a time.
class FmuVehicle {
 public:
  /// Unzips, checks, loads, instantiates and initialises the FMU of `def.path`. Throws FmuError for a
  /// missing or unreadable file, a file that is no zip archive, no modelDescription.xml, what
  /// ParseFmuDescription refuses, a missing required variable (or one of the wrong causality or type),
  /// no binaries/linux64/<modelIdentifier>.so, a library that does not load, a missing fmi2 function, and
  /// an instantiation or initialisation the FMU refuses.
  static std::unique_ptr<FmuVehicle> Open(const FmuDef& def, FmuLogHook log = {});
  /// Terminates and frees the instance (as far as its status allows), unloads the library and removes
  /// the temporary folder.
  ~FmuVehicle();
  FmuVehicle(const FmuVehicle&) = delete;
  FmuVehicle& operator=(const FmuVehicle&) = delete;

  /// Sets the inputs and advances the FMU by one communication step. Returns false, and keeps the last
  /// state, when fmi2DoStep or reading the outputs fails (fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending);
  /// every later call then returns false at once. Error() says why.
  bool Step(const FmuInput& input);
  /// The state after the last step: x_m, y_m, yaw_rad, vx_mps and the optional outputs the FMU has
  /// (vy, yaw_rate, ax, ay, steer_angle; 0 without them); distance_m summed from the positions.
  const VehicleState& State() const { return state_; }
  /// FMU time of the state, in s (0 at the start).
  double TimeS() const { return time_s_; }
  /// Whether a step has failed (the vehicle is then held).
  bool Failed() const { return failed_; }
  /// Why the failed step failed ("" while none has).
  const std::string& Error() const { return error_; }
  /// What modelDescription.xml said.
  const FmuDescription& Description() const { return description_; }
  /// Whether the FMU took the start pose through x0, y0, yaw0 (else its outputs are moved onto the start).
  bool TakesStartPose() const { return takes_start_pose_; }
  /// Names of the optional inputs and outputs the FMU has, for the log ("gear, road_slope, vy, ...").
  std::string OptionalVariables() const;

 private:
  FmuVehicle() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  FmuDescription description_;
  VehicleState state_;
  double time_s_ = 0;
  bool failed_ = false;
  std::string error_;
  bool takes_start_pose_ = false;
  void ReadOutputs();
  void Fail(const std::string& message);
};

}  // namespace platoon::vehicle
