#include "platoon/config/params.hpp"
