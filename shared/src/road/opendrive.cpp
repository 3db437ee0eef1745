#include "platoon/road/opendrive.hpp"
