#pragma once
/// OpenSCENARIO 1.x (.xosc) scenarios as platoon sessions (docs/SCENARIOS.md). An adapter at the edge: the
/// file's entities become road traffic nodes (or the driver seats a session names for them) and its
/// storyboard becomes [[event]]s of the server's scenario system; nothing here runs a scenario.
///
/// Read: FileHeader, ParameterDeclarations with `$name` references and `${...}` expressions, CatalogLocations
/// (VehicleCatalog directory), RoadNetwork LogicFile, Entities (Vehicle inline or from a catalog), Init
/// (Teleport with World/Lane/Road/RelativeLane/RelativeObject positions, speed), Storyboard (Story, Act,
/// ManeuverGroup, Maneuver, Event with priority and maximumExecutionCount, Start/StopTriggers as OR of AND
/// groups with edges and delays). Every element is listed in the coverage as mapped, ignored (with why) or
/// refused; a refused element is an error "file:line: <element> is not supported (...)".
/// Pure apart from LoadOpenScenarioFile and the catalog files it reads.

#include "platoon/config/scenario.hpp"
#include "platoon/config/session.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace platoon::scenario {

/// What became of one element of the file.
struct CoverageItem {
  std::string element;  ///< Element path, e.g. "Storyboard/Story/Act/ManeuverGroup/Maneuver/Event/Action/SpeedAction".
  int line = 0;         ///< 1-based line in `file`.
  std::string file;     ///< The file it is in (the scenario or a catalog).
  enum class Status : uint8_t {
    kMapped,   ///< Carried over into the session.
    kIgnored,  ///< Read and left out because it has no effect in platoon (`why` says so).
    kRefused,  ///< Not supported: loading fails on it.
  } status = Status::kMapped;
  std::string why;      ///< What it became, or why it was ignored or refused.
};

/// Name of a coverage status ("mapped", "ignored", "refused").
const char* StatusName(CoverageItem::Status s);

/// How the session places the file's entities.
struct OscOptions {
  /// Entity name -> driver node of the session that drives it (a human seat, or a model driver); the others
  /// become road traffic nodes.
  std::map<std::string, std::string> seats;
  /// Parameter name -> value text replacing the file's top-level ParameterDeclaration (a session's [scenario]
  /// parameters, a batch run of a distribution); a name the file does not declare is an error.
  std::map<std::string, std::string> parameters;
  /// Where `parameters` come from, for messages ("session.toml:12").
  std::string parameters_where;
  /// The session's road, for positions given in world coordinates (WorldPosition, ReachPosition); nullptr:
  /// the file's LogicFile, or the default generated road.
  const config::RoadSessionDef* road = nullptr;
  /// Collect every refusal into the coverage instead of failing at the first (platoon scenario check).
  bool keep_going = false;
};

/// Entity id of the first scene box a scenario's MiscObjects become (the next ones count up).
inline constexpr uint32_t kOscBoxIdBase = 0x05C00001;

/// The session parts an OpenSCENARIO file maps to.
struct OscMapping {
  std::string file;                        ///< The .xosc file.
  std::string name;                        ///< FileHeader description (or the file's stem).
  std::string road_file;                   ///< RoadNetwork LogicFile, resolved against the file's folder ("": none).
  std::vector<config::NodeDef> nodes;      ///< One road traffic node per entity without a seat.
  std::vector<config::EventDef> events;    ///< The storyboard as events, acts before their events.
  std::vector<std::pair<std::string, std::string>> params;  ///< ParameterDeclarations (name, value text).
  std::map<std::string, std::string> entity_node;           ///< Entity name -> node whose first vehicle it is.
  /// Entity name -> start placement (s, lane, speed) for seats: the driver node takes it.
  struct Start {
    double s_m = 0;
    int lane = -1;
    double speed_mps = 0;
    double offset_m = 0;
  };
  std::map<std::string, Start> starts;
  /// MiscObjects (barriers, cones, parked obstacles): static boxes of the scene at their Init position, with their
  /// BoundingBox; ids from kOscBoxIdBase.
  std::vector<config::SceneBoxDef> boxes;
  std::vector<CoverageItem> coverage;      ///< Every element, in file order.
  std::vector<std::string> warnings;       ///< "file:line: ..." for what is mapped approximately.
  int refused = 0;                         ///< Coverage items refused (only with keep_going; else it threw).
};

/// Maps an OpenSCENARIO document; `source_name` names it in messages, `base_dir` resolves relative paths
/// (LogicFile, catalog directories). Throws config::ConfigError "file:line: ..." on bad or unsupported content
/// (unless options.keep_going: then the coverage lists the refusals).
OscMapping MapOpenScenario(const std::string& text, const std::string& source_name, const std::string& base_dir,
                           const OscOptions& options = {});

/// Reads and maps an .xosc file. Throws config::ConfigError.
OscMapping LoadOpenScenarioFile(const std::string& path, const OscOptions& options = {});

/// True when `path` names an OpenSCENARIO file (extension .xosc, any case).
bool IsOpenScenarioPath(const std::string& path);

/// Evaluates an OpenSCENARIO parameter expression (the text inside `${...}`): numbers, `$name` parameters,
/// + - * / %, unary -, parentheses, round floor ceil sqrt pow (and, or, not on 0/1). Throws
/// std::invalid_argument with what was expected.
double EvaluateExpression(const std::string& expr, const std::map<std::string, std::string>& params);

/// An OpenSCENARIO parameter value distribution (1.1-1.3): the scenario it varies and the values of its runs.
struct ParameterDistribution {
  std::string scenario_file;  ///< ScenarioFile filepath, resolved against the distribution's folder.
  /// DeterministicSingleParameterDistribution: one parameter's values (a DistributionSet, or a DistributionRange
  /// from lowerLimit by stepWidth up to upperLimit); the runs are the product of the lists.
  struct List {
    std::string parameter;
    std::vector<std::string> values;
    std::string where;
  };
  std::vector<List> lists;
  /// DeterministicMultiParameterDistribution/ValueSetDistribution: one run per set (parameter -> value).
  std::vector<std::map<std::string, std::string>> sets;
  std::string sets_where;
  /// Stochastic: numberOfTestRuns runs, each drawing every parameter (seeded by randomSeed).
  struct Draw {
    std::string parameter;
    std::string dist;                 ///< "uniform", "normal" or "choice"
    double min = 0, max = 0;          ///< uniform; normal when truncated (redrawn until inside)
    double mean = 0, stddev = 0;      ///< normal (stddev = sqrt(variance))
    bool truncated = false;           ///< normal with a Range
    std::vector<std::string> values;  ///< choice (ProbabilityDistributionSet)
    std::vector<double> weights;      ///< choice weights
    std::string where;
  };
  std::vector<Draw> draws;
  int runs = 1;                       ///< Stochastic numberOfTestRuns.
  uint64_t seed = 1;                  ///< Stochastic randomSeed.
};

/// True when `text` is a parameter value distribution file (it holds <ParameterValueDistribution>).
bool IsParameterDistribution(const std::string& text);

/// Reads a ParameterValueDistribution file; `base_dir` resolves the scenario file. Throws config::ConfigError
/// "file:line: ..." on anything it does not read (Poisson, Histogram, user-defined distributions, both a product
/// of lists and value sets, parameter references).
ParameterDistribution ReadParameterDistribution(const std::string& text, const std::string& source_name,
                                                const std::string& base_dir);

/// Reads the session file's [scenario] table (file, seats, parameters) and adds the mapped nodes, events and parameters to
/// `session` (its [road] wins over the file's LogicFile). Throws config::ConfigError.
void ApplyScenarioTable(config::SessionDef& session, const config::Table& table);

/// The session a bare .xosc file runs as (`platoon run scenario.xosc`): a TOML text naming the file, with
/// [session] name from the file's stem. `lockstep`: [session] mode = "lockstep".
std::string SessionTextFor(const std::string& xosc_path, bool lockstep, double end_s);

}  // namespace platoon::scenario
