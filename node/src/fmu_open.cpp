#include "fmu_open.hpp"

namespace platoon::node {

std::unique_ptr<vehicle::FmuVehicle> OpenNodeFmu(const config::SessionDef& session, const config::NodeDef& node,
                                                 const std::string& instance_name, const vehicle::FmuStart& start,
                                                 double step_s, const std::shared_ptr<spdlog::logger>& log) {
  vehicle::FmuDef d = vehicle::DefaultFmuDef();
  d.path = node.fmu;
  d.step_s = step_s;
  d.instance_name = instance_name;
  d.start = start;
  // The FMU's own messages go to the module's logger.
  vehicle::FmuLogHook hook = [log](vehicle::FmuLogLevel level, const std::string& message) {
    if (!log) return;
    if (level == vehicle::FmuLogLevel::kError) log->error("{}", message);
    else if (level == vehicle::FmuLogLevel::kWarning) log->warn("{}", message);
    else log->debug("{}", message);
  };
  try {
    return vehicle::FmuVehicle::Open(d, std::move(hook));
  } catch (const vehicle::FmuError& e) {
    const std::string where = node.fmu_where.empty() ? session.file + ": node \"" + node.name + "\" fmu" : node.fmu_where;
    throw config::ConfigError(where + ": " + e.what());
  }
}

}  // namespace platoon::node
