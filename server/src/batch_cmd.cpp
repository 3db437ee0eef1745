#include "batch_cmd.hpp"
