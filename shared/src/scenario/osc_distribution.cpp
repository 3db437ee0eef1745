// OpenSCENARIO 1.1-1.3 parameter value distributions (ParameterValueDistribution files): the scenario file they
// vary and the values each run takes, for platoon batch (docs/SCENARIOS.md, "Parameter distributions as batches").
// Pure: reads text, names file:line on every error.
#include "platoon/scenario/osc.hpp"
#include "../road/xml_reader.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

namespace platoon::scenario {
namespace {

using road::xml::Element;
using config::ConfigError;

struct Reader {
  std::string file;
  std::string Where(const Element& e) const { return fmt::format("{}:{}", file, e.line); }
  std::string Attr(const Element& e, const std::string& name) const {
    const auto* a = e.Find(name);
    if (!a) throw ConfigError(fmt::format("{}: {}: expected attribute {}, got none", Where(e), e.name, name));
    if (!a->value.empty() && a->value[0] == '$')
      throw ConfigError(fmt::format("{}: {}.{}: parameter references are not read in a distribution, got {}", Where(e),
                                    e.name, name, a->value));
    return a->value;
  }
  double Num(const Element& e, const std::string& name) const {
    const std::string v = Attr(e, name);
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(x))
      throw ConfigError(fmt::format("{}: {}.{}: expected a number, got \"{}\"", Where(e), e.name, name, v));
    return x;
  }
  const Element* Child(const Element& e, const std::string& name) const {
    for (const auto& c : e.children)
      if (c.name == name) return &c;
    return nullptr;
  }
  const Element& Need(const Element& e, const std::string& name) const {
    const Element* c = Child(e, name);
    if (!c) throw ConfigError(fmt::format("{}: {}: expected a {} element, got none", Where(e), e.name, name));
    return *c;
  }
  [[noreturn]] void Refuse(const Element& e, const std::string& why) const {
    throw ConfigError(fmt::format("{}: {} is not supported: {}", Where(e), e.name, why));
  }
  // A Range's limits.
  std::pair<double, double> Range(const Element& owner) const {
    const Element& r = Need(owner, "Range");
    const double lo = Num(r, "lowerLimit"), hi = Num(r, "upperLimit");
    if (!(hi >= lo)) throw ConfigError(fmt::format("{}: Range: expected upperLimit >= lowerLimit, got {} < {}", Where(r), hi, lo));
    return {lo, hi};
  }
};

}  // namespace

bool IsParameterDistribution(const std::string& text) {
  return text.find("<ParameterValueDistribution") != std::string::npos;
}

ParameterDistribution ReadParameterDistribution(const std::string& text, const std::string& source_name,
                                                const std::string& base_dir) {
  Reader rd{source_name};
  Element root;
  try {
    root = road::xml::Parse(text, source_name);
  } catch (const road::xml::XmlError& e) {
    throw ConfigError(e.what());
  }
  if (root.name != "OpenSCENARIO")
    throw ConfigError(fmt::format("{}: expected <OpenSCENARIO>, got <{}>", rd.Where(root), root.name));
  if (const Element* h = rd.Child(root, "FileHeader")) {
    const auto* major = h->Find("revMajor");
    const auto* minor = h->Find("revMinor");
    if (major && minor && (major->value != "1" || minor->value < "1" || minor->value > "3" || minor->value.size() != 1))
      rd.Refuse(*h, "OpenSCENARIO " + major->value + "." + minor->value + " distributions (supported: 1.1 to 1.3)");
  }
  const Element* pvd = rd.Child(root, "ParameterValueDistribution");
  if (!pvd) throw ConfigError(fmt::format("{}: OpenSCENARIO: expected a ParameterValueDistribution, got none", rd.Where(root)));
  ParameterDistribution out;
  const Element& sf = rd.Need(*pvd, "ScenarioFile");
  out.scenario_file = rd.Attr(sf, "filepath");
  if (!out.scenario_file.empty() && out.scenario_file.front() != '/' && !base_dir.empty())
    out.scenario_file = base_dir + "/" + out.scenario_file;
  std::set<std::string> names;
  auto add_name = [&](const Element& e, const std::string& name) {
    if (!names.insert(name).second)
      throw ConfigError(fmt::format("{}: {}: parameter {} is distributed twice", rd.Where(e), e.name, name));
  };
  if (const Element* det = rd.Child(*pvd, "Deterministic")) {
    for (const auto& d : det->children) {
      if (d.name == "DeterministicSingleParameterDistribution") {
        ParameterDistribution::List list;
        list.parameter = rd.Attr(d, "parameterName");
        list.where = rd.Where(d);
        add_name(d, list.parameter);
        if (d.children.size() != 1)
          throw ConfigError(fmt::format("{}: {}: expected one distribution element, got {}", rd.Where(d), d.name, d.children.size()));
        const Element& k = d.children[0];
        if (k.name == "DistributionSet") {
          for (const auto& el : k.children) {
            if (el.name != "Element") throw ConfigError(fmt::format("{}: DistributionSet: expected Element, got {}", rd.Where(el), el.name));
            list.values.push_back(rd.Attr(el, "value"));
          }
          if (list.values.empty()) throw ConfigError(fmt::format("{}: DistributionSet: expected at least one Element", rd.Where(k)));
        } else if (k.name == "DistributionRange") {
          const double step = rd.Num(k, "stepWidth");
          const auto [lo, hi] = rd.Range(k);
          if (!(step > 0)) throw ConfigError(fmt::format("{}: DistributionRange.stepWidth: expected > 0, got {}", rd.Where(k), step));
          // lo, lo + step, ... up to hi (inclusive within a millionth of a step, against rounding).
          const double n = std::floor((hi - lo) / step + 1e-6);
          if (n > 100000) throw ConfigError(fmt::format("{}: DistributionRange: more than 100000 values", rd.Where(k)));
          for (int i = 0; i <= static_cast<int>(n); ++i) list.values.push_back(fmt::format("{}", lo + i * step));
        } else {
          rd.Refuse(k, "deterministic distributions: DistributionSet, DistributionRange");
        }
        out.lists.push_back(std::move(list));
      } else if (d.name == "DeterministicMultiParameterDistribution") {
        const Element& vs = rd.Need(d, "ValueSetDistribution");
        out.sets_where = rd.Where(vs);
        std::vector<std::string> order;
        for (const auto& set : vs.children) {
          if (set.name != "ParameterValueSet")
            throw ConfigError(fmt::format("{}: ValueSetDistribution: expected ParameterValueSet, got {}", rd.Where(set), set.name));
          std::map<std::string, std::string> values;
          for (const auto& a : set.children) {
            if (a.name != "ParameterAssignment")
              throw ConfigError(fmt::format("{}: ParameterValueSet: expected ParameterAssignment, got {}", rd.Where(a), a.name));
            values[rd.Attr(a, "parameterRef")] = rd.Attr(a, "value");
          }
          std::vector<std::string> keys;
          for (const auto& [k, v] : values) keys.push_back(k);
          if (order.empty()) {
            order = keys;
            for (const auto& k : order) add_name(set, k);
          } else if (keys != order) {
            throw ConfigError(fmt::format("{}: ParameterValueSet: every set must assign the same parameters as the first", rd.Where(set)));
          }
          out.sets.push_back(std::move(values));
        }
        if (out.sets.empty()) throw ConfigError(fmt::format("{}: ValueSetDistribution: expected at least one ParameterValueSet", rd.Where(vs)));
      } else {
        rd.Refuse(d, "Deterministic holds DeterministicSingleParameterDistribution and DeterministicMultiParameterDistribution");
      }
    }
  }
  if (const Element* st = rd.Child(*pvd, "Stochastic")) {
    if (rd.Child(*pvd, "Deterministic"))
      rd.Refuse(*st, "a distribution both deterministic and stochastic (give one)");
    const double runs = rd.Num(*st, "numberOfTestRuns");
    if (!(runs >= 1 && runs <= 100000 && runs == std::floor(runs)))
      throw ConfigError(fmt::format("{}: Stochastic.numberOfTestRuns: expected an integer 1..100000, got {}", rd.Where(*st), runs));
    out.runs = static_cast<int>(runs);
    if (st->Find("randomSeed")) {
      const double seed = rd.Num(*st, "randomSeed");
      if (!(seed >= 0 && seed == std::floor(seed)))
        throw ConfigError(fmt::format("{}: Stochastic.randomSeed: expected an integer >= 0, got {}", rd.Where(*st), seed));
      out.seed = static_cast<uint64_t>(seed);
    }
    for (const auto& d : st->children) {
      if (d.name != "StochasticDistribution")
        rd.Refuse(d, "Stochastic holds StochasticDistribution elements");
      ParameterDistribution::Draw draw;
      draw.parameter = rd.Attr(d, "parameterName");
      draw.where = rd.Where(d);
      add_name(d, draw.parameter);
      if (d.children.size() != 1)
        throw ConfigError(fmt::format("{}: {}: expected one distribution element, got {}", rd.Where(d), d.name, d.children.size()));
      const Element& k = d.children[0];
      if (k.name == "UniformDistribution") {
        draw.dist = "uniform";
        std::tie(draw.min, draw.max) = rd.Range(k);
      } else if (k.name == "NormalDistribution") {
        draw.dist = "normal";
        draw.mean = rd.Num(k, "expectedValue");
        const double variance = rd.Num(k, "variance");
        if (!(variance >= 0)) throw ConfigError(fmt::format("{}: NormalDistribution.variance: expected >= 0, got {}", rd.Where(k), variance));
        draw.stddev = std::sqrt(variance);
        if (rd.Child(k, "Range")) {
          draw.truncated = true;
          std::tie(draw.min, draw.max) = rd.Range(k);
        }
      } else if (k.name == "ProbabilityDistributionSet") {
        draw.dist = "choice";
        for (const auto& el : k.children) {
          if (el.name != "Element")
            throw ConfigError(fmt::format("{}: ProbabilityDistributionSet: expected Element, got {}", rd.Where(el), el.name));
          const double w = rd.Num(el, "weight");
          if (!(w > 0)) throw ConfigError(fmt::format("{}: Element.weight: expected > 0, got {}", rd.Where(el), w));
          draw.values.push_back(rd.Attr(el, "value"));
          draw.weights.push_back(w);
        }
        if (draw.values.empty()) throw ConfigError(fmt::format("{}: ProbabilityDistributionSet: expected at least one Element", rd.Where(k)));
      } else {
        rd.Refuse(k, "stochastic distributions: UniformDistribution, NormalDistribution, ProbabilityDistributionSet");
      }
      out.draws.push_back(std::move(draw));
    }
    if (out.draws.empty()) throw ConfigError(fmt::format("{}: Stochastic: expected at least one StochasticDistribution", rd.Where(*st)));
  }
  if (out.lists.empty() && out.sets.empty() && out.draws.empty())
    throw ConfigError(fmt::format("{}: ParameterValueDistribution: expected Deterministic or Stochastic, got neither", rd.Where(*pvd)));
  if (!out.lists.empty() && !out.sets.empty())
    throw ConfigError(fmt::format("{}: platoon batch runs either the product of single-parameter lists or a list of value "
                                  "sets; this distribution has both", out.sets_where));
  for (const auto& c : pvd->children)
    if (c.name != "ScenarioFile" && c.name != "Deterministic" && c.name != "Stochastic")
      rd.Refuse(c, "ParameterValueDistribution holds ScenarioFile, Deterministic or Stochastic");
  return out;
}

}  // namespace platoon::scenario
