#include "platoon/transport/security.hpp"
