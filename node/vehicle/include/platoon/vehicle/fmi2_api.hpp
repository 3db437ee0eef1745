#pragma once
/// The FMI 2.0 co-simulation interface as platoon calls it: the C types, status codes, callbacks and the
/// function signatures of an FMU's shared library, written by the project from the text of the FMI 2.0
/// standard (chapters 2.1 and 4.2). Only what platoon uses; the exported symbol names are the standard's
/// ("fmi2DoStep", ...), looked up with dlsym (platoon::vehicle::FmuVehicle), so the declarations here are
/// function-pointer types and nothing is linked against them. Pure declarations: no platoon code.

#include <cstddef>

namespace platoon::vehicle::fmi2 {

/// An FMU instance, opaque to the caller.
using Component = void*;
/// The caller's pointer handed back to its callbacks (platoon passes its FmuVehicle).
using ComponentEnvironment = void*;
/// A variable's value reference, unique per base type within one FMU.
using ValueReference = unsigned int;
/// The FMI base types (2.1.2).
using Real = double;
using Integer = int;
using Boolean = int;
using Char = char;
using String = const Char*;

/// Boolean values.
constexpr Boolean kTrue = 1;
constexpr Boolean kFalse = 0;

/// Return status of every FMI function (2.1.3), in increasing severity up to kFatal.
enum Status : int {
  kOk = 0,       ///< All well.
  kWarning = 1,  ///< Something is not right, the results may still be used.
  kDiscard = 2,  ///< co-simulation: the step was not completed (e.g. the slave cannot reach the time).
  kError = 3,    ///< The instance is broken; only FreeInstance (or Reset) may follow.
  kFatal = 4,    ///< Every instance of the FMU is broken; nothing may be called any more.
  kPending = 5,  ///< An asynchronous step is still running (platoon never asks for one).
};

/// The kind of instance asked for in Instantiate.
enum Type : int {
  kModelExchange = 0,
  kCoSimulation = 1,
};

/// Logger callback: instance name, status, category and a printf-style message with its arguments.
using CallbackLogger = void (*)(ComponentEnvironment env, String instance_name, Status status, String category,
                                String message, ...);
/// Memory callbacks: calloc-like allocation (zeroed) and free.
using CallbackAllocateMemory = void* (*)(std::size_t count, std::size_t size);
using CallbackFreeMemory = void (*)(void* object);
/// Called when an asynchronous DoStep finishes (unused: platoon steps synchronously; may be null).
using StepFinished = void (*)(ComponentEnvironment env, Status status);

/// The callbacks handed to Instantiate; the FMU keeps the pointer, so the struct outlives the instance.
struct CallbackFunctions {
  CallbackLogger logger;
  CallbackAllocateMemory allocate_memory;
  CallbackFreeMemory free_memory;
  StepFinished step_finished;
  ComponentEnvironment component_environment;
};

// --- Function signatures, exported by the FMU's library under the names in the comments ---

/// "fmi2GetTypesPlatform": "default" for the standard's types.
using GetTypesPlatformFn = const char* (*)();
/// "fmi2GetVersion": "2.0".
using GetVersionFn = const char* (*)();
/// "fmi2SetDebugLogging": switches log categories on or off.
using SetDebugLoggingFn = Status (*)(Component c, Boolean logging_on, std::size_t n_categories, const String categories[]);
/// "fmi2Instantiate": a new instance or null; the resource location is a file:// URI of the unzipped resources/.
using InstantiateFn = Component (*)(String instance_name, Type fmu_type, String guid, String resource_location,
                                    const CallbackFunctions* functions, Boolean visible, Boolean logging_on);
/// "fmi2FreeInstance": releases the instance.
using FreeInstanceFn = void (*)(Component c);
/// "fmi2SetupExperiment": tolerance (if defined), start time and stop time (if defined), in s.
using SetupExperimentFn = Status (*)(Component c, Boolean tolerance_defined, Real tolerance, Real start_time,
                                     Boolean stop_time_defined, Real stop_time);
/// "fmi2EnterInitializationMode", "fmi2ExitInitializationMode", "fmi2Terminate", "fmi2Reset".
using ComponentFn = Status (*)(Component c);
/// "fmi2GetReal", "fmi2SetReal" and the same for Integer and Boolean: `nvr` values by reference.
using GetRealFn = Status (*)(Component c, const ValueReference vr[], std::size_t nvr, Real value[]);
using SetRealFn = Status (*)(Component c, const ValueReference vr[], std::size_t nvr, const Real value[]);
using GetIntegerFn = Status (*)(Component c, const ValueReference vr[], std::size_t nvr, Integer value[]);
using SetIntegerFn = Status (*)(Component c, const ValueReference vr[], std::size_t nvr, const Integer value[]);
using GetBooleanFn = Status (*)(Component c, const ValueReference vr[], std::size_t nvr, Boolean value[]);
using SetBooleanFn = Status (*)(Component c, const ValueReference vr[], std::size_t nvr, const Boolean value[]);
/// "fmi2DoStep": advances the slave from `current_time` by `step_size`, in s.
using DoStepFn = Status (*)(Component c, Real current_time, Real step_size, Boolean no_set_state_prior);

}  // namespace platoon::vehicle::fmi2
