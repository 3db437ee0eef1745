// A broken test FMU: its library says it is FMI 2.0 but exports none of the functions that instantiate and
// step it, for the error test of a missing function (tests/node/fmu_vehicle_test.cpp).
#define PLATOON_FMU_EXPORT extern "C" __attribute__((visibility("default")))

PLATOON_FMU_EXPORT const char* fmi2GetTypesPlatform() { return "default"; }
PLATOON_FMU_EXPORT const char* fmi2GetVersion() { return "2.0"; }
