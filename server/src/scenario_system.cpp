#include "platoon/server/scenario_system.hpp"
