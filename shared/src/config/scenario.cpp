#include "platoon/config/scenario.hpp"
