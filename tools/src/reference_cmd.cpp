#include "reference_cmd.hpp"

#include "platoon/config/session.hpp"
#include "platoon/input/axis_mapping.hpp"
#include "platoon/node/fusion.hpp"
#include "platoon/road/road_file.hpp"
#include "platoon/sensors/sensor_config.hpp"

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#ifndef PLATOON_SOURCE_DIR
#error "PLATOON_SOURCE_DIR (the source tree with configs/ and tests/data/config_tour/) must be defined"
#endif

namespace platoon::launcher {

void ReadSessionTables(const std::string& path) {
  const config::SessionDef s = config::LoadSession(path);
  for (const auto& n : s.nodes) {
    for (const auto& t : n.sensors) (void)sensors::ReadSensorSpec(t);
    if (n.fusion) (void)node::ReadFusionDef(*n.fusion);
    if (n.input_mapping) (void)input::ReadAxisMapping(*n.input_mapping);
  }
}

config::KeyReference BuildKeyReference(const std::string& source_dir) {
  config::KeyReference reference;
  for (const auto& file : config::ReferenceCorpus(source_dir)) {
    if (file.kind == config::ConfigFileKind::kRoad)
      reference.ReadFile(file, [](const std::string& path) { (void)road::LoadRoadFile(path); });
    else
      reference.ReadFile(file, ReadSessionTables);
  }
  return reference;
}

std::string ReferenceMarkdown(const config::KeyReference& reference, const std::string& source_dir) {
  std::ifstream in(source_dir + "/" + config::kWorkedExamplePath, std::ios::binary);
  std::stringstream example;
  example << in.rdbuf();
  return reference.Markdown(example.str());
}

int RunReference(const ReferenceOptions& o) {
  const std::string source_dir = o.source_dir.empty() ? std::string(PLATOON_SOURCE_DIR) : o.source_dir;
  const config::KeyReference reference = BuildKeyReference(source_dir);
  if (o.reference) {
    const std::string text = ReferenceMarkdown(reference, source_dir);
    std::fwrite(text.data(), 1, text.size(), stdout);
    // Problems go to stderr: the reference is printed anyway, and the exit code says it is incomplete.
    std::vector<std::string> problems;
    for (const auto& e : reference.CorpusErrors()) problems.push_back("corpus file fails to read: " + e);
    for (const auto& k : reference.MissingMeanings()) problems.push_back("no meaning line (key_meanings.cpp): " + k);
    for (const auto& k : reference.UnusedMeanings()) problems.push_back("meaning line of a key no reader reads: " + k);
    for (const auto& k : reference.UnsettledDefaults())
      problems.push_back("default depends on the file, and the meaning line has no default_text: " + k);
    for (const auto& p : problems) std::fprintf(stderr, "platoon check --reference: %s\n", p.c_str());
    return problems.empty() ? 0 : 1;
  }
  const auto entries = reference.Find(o.explain);
  std::set<std::string> names;
  for (const auto& e : entries) names.insert(e.Name());
  if (entries.empty() || names.size() > 1) {
    std::vector<std::string> close;
    if (entries.empty()) close = reference.CloseNames(o.explain);
    else close.assign(names.begin(), names.end());
    std::string list;
    for (const auto& c : close) list += (list.empty() ? "" : ", ") + c;
    if (entries.empty())
      std::fprintf(stderr, "platoon check --explain: no session or road file key \"%s\"%s%s\n", o.explain.c_str(),
                   list.empty() ? "" : "; close: ", list.c_str());
    else
      std::fprintf(stderr, "platoon check --explain: \"%s\" is a key of several tables: %s; name one\n",
                   o.explain.c_str(), list.c_str());
    return 2;
  }
  for (size_t i = 0; i < entries.size(); ++i)
    std::printf("%s%s", i ? "\n" : "", config::KeyReference::Explain(entries[i]).c_str());
  return 0;
}

}  // namespace platoon::launcher
