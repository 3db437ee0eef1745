#pragma once
// Private to platoon_sensors: each kind's reader and run-time object, one file per kind under
// src/kinds/, listed once in sensor_registry.cpp.

#include "platoon/config/table.hpp"
#include "platoon/sensors/sensor_config.hpp"
#include "platoon/sensors/sensor_instance.hpp"

#include <memory>

namespace platoon::sensors::kinds {

inline constexpr double kDeg = 0.017453292519943295;  // rad per degree

void ReadLidar(const config::Table& t, SensorSpec& s);
std::unique_ptr<SensorInstance> MakeLidar(const SensorSpec& spec, const SensorServices& services);
void ReadRadar(const config::Table& t, SensorSpec& s);
std::unique_ptr<SensorInstance> MakeRadar(const SensorSpec& spec, const SensorServices& services);
void ReadCamera(const config::Table& t, SensorSpec& s);
std::unique_ptr<SensorInstance> MakeCamera(const SensorSpec& spec, const SensorServices& services);
void ReadImu(const config::Table& t, SensorSpec& s);
std::unique_ptr<SensorInstance> MakeImu(const SensorSpec& spec, const SensorServices& services);
void ReadGnss(const config::Table& t, SensorSpec& s);
std::unique_ptr<SensorInstance> MakeGnss(const SensorSpec& spec, const SensorServices& services);
void ReadObjects(const config::Table& t, SensorSpec& s);
std::unique_ptr<SensorInstance> MakeObjects(const SensorSpec& spec, const SensorServices& services);

}  // namespace platoon::sensors::kinds
