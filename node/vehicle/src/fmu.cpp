#include "platoon/vehicle/fmu.hpp"

#include "platoon/vehicle/fmi2_api.hpp"

// The project's strict XML reader (shared/src/road), also used by the OpenDRIVE loader.
#include "../../../shared/src/road/xml_reader.hpp"

#include <dlfcn.h>
#include <stdlib.h>
#include <zip.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace platoon::vehicle {
namespace fmu_detail {

namespace fs = std::filesystem;

// Unzipped files beyond this total are refused (a damaged or hostile archive), in bytes.
constexpr uint64_t kMaxUnzippedBytes = 2ull << 30;

const char* StatusName(int s) {
  switch (s) {
    case fmi2::kOk: return "fmi2OK";
    case fmi2::kWarning: return "fmi2Warning";
    case fmi2::kDiscard: return "fmi2Discard";
    case fmi2::kError: return "fmi2Error";
    case fmi2::kFatal: return "fmi2Fatal";
    case fmi2::kPending: return "fmi2Pending";
  }
  return "an unknown status";
}

std::string Attr(const road::xml::Element& e, const char* name) {
  const road::xml::Attribute* a = e.Find(name);
  return a ? a->value : std::string();
}

// The input and output names platoon maps, with what each is, for messages.
struct Known {
  const char* name;
  const char* causality;  // "input", "output" or "parameter"
  bool required;
  const char* meaning;
};
constexpr Known kKnown[] = {
    {"steer", "input", true, "steering -1 (full right) .. 1 (full left)"},
    {"throttle", "input", true, "accelerator pedal 0..1"},
    {"brake", "input", true, "brake pedal 0..1"},
    {"gear", "input", false, "gear -1, 0, 1"},
    {"road_slope", "input", false, "grade along the body x axis, in rad"},
    {"mu_fl", "input", false, "friction scale under the front left wheel"},
    {"mu_fr", "input", false, "friction scale under the front right wheel"},
    {"mu_rl", "input", false, "friction scale under the rear left wheel"},
    {"mu_rr", "input", false, "friction scale under the rear right wheel"},
    {"z_fl", "input", false, "road height under the front left wheel, in m"},
    {"z_fr", "input", false, "road height under the front right wheel, in m"},
    {"z_rl", "input", false, "road height under the rear left wheel, in m"},
    {"z_rr", "input", false, "road height under the rear right wheel, in m"},
    {"x", "output", true, "CG east, in m"},
    {"y", "output", true, "CG north, in m"},
    {"yaw", "output", true, "heading, in rad"},
    {"vx", "output", true, "speed along the body x axis, in m/s"},
    {"vy", "output", false, "body lateral speed, in m/s"},
    {"yaw_rate", "output", false, "yaw rate, in rad/s"},
    {"ax", "output", false, "body x acceleration, in m/s^2"},
    {"ay", "output", false, "body y acceleration, in m/s^2"},
    {"steer_angle", "output", false, "front road-wheel angle, in rad"},
    {"x0", "parameter", false, "start CG east, in m"},
    {"y0", "parameter", false, "start CG north, in m"},
    {"yaw0", "parameter", false, "start heading, in rad"},
    {"vx0", "parameter", false, "start speed, in m/s"},
};

// Writes every entry of the archive under `dir`. Throws FmuError (prefixed by `path`).
void Unzip(const std::string& path, const fs::path& dir) {
  int code = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!za) {
    if (code == ZIP_ER_NOZIP || code == ZIP_ER_INCONS)
      throw FmuError(path + ": expected an FMU (a zip archive), got a file that is not a zip archive");
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    const std::string why = zip_error_strerror(&error);
    zip_error_fini(&error);
    throw FmuError(path + ": cannot open the archive: " + why);
  }
  std::unique_ptr<zip_t, int (*)(zip_t*)> guard(za, zip_close);
  const zip_int64_t n = zip_get_num_entries(za, 0);
  uint64_t total = 0;
  std::vector<char> buffer(1 << 16);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* raw = zip_get_name(za, static_cast<zip_uint64_t>(i), 0);
    if (!raw) continue;
    const std::string name = raw;
    // Only relative names that stay inside the folder.
    const fs::path rel = fs::path(name).lexically_normal();
    if (name.empty() || rel.is_absolute() || rel.empty() || *rel.begin() == "..")
      throw FmuError(path + ": the archive has an entry outside its folder: \"" + name + "\"");
    const fs::path target = dir / rel;
    if (name.back() == '/') {
      fs::create_directories(target);
      continue;
    }
    fs::create_directories(target.parent_path());
    zip_stat_t st;
    if (zip_stat_index(za, static_cast<zip_uint64_t>(i), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE)) total += st.size;
    if (total > kMaxUnzippedBytes) throw FmuError(path + ": the archive unzips to more than 2 GiB");
    zip_file_t* zf = zip_fopen_index(za, static_cast<zip_uint64_t>(i), 0);
    if (!zf) throw FmuError(path + ": cannot read \"" + name + "\" from the archive: " + zip_strerror(za));
    std::ofstream out(target, std::ios::binary);
    zip_int64_t got;
    while ((got = zip_fread(zf, buffer.data(), buffer.size())) > 0) out.write(buffer.data(), got);
    zip_fclose(zf);
    if (got < 0 || !out) throw FmuError(path + ": cannot unzip \"" + name + "\" to " + target.string());
  }
}

}  // namespace fmu_detail

const FmuVariable* FmuDescription::Find(const std::string& name) const {
  for (const auto& v : variables)
    if (v.name == name) return &v;
  return nullptr;
}

FmuDescription ParseFmuDescription(const std::string& xml, const std::string& source) {
  using fmu_detail::Attr;
  road::xml::Element root;
  try {
    root = road::xml::Parse(xml, source);
  } catch (const road::xml::XmlError& e) {
    throw FmuError(e.what());
  }
  const auto where = [&](int line) { return source + ":" + std::to_string(line) + ": "; };
  if (root.name != "fmiModelDescription")
    throw FmuError(where(root.line) + "expected the root element <fmiModelDescription>, got <" + root.name + ">");
  FmuDescription d;
  const road::xml::Attribute* version = root.Find("fmiVersion");
  d.fmi_version = version ? version->value : "";
  if (d.fmi_version != "2.0")
    throw FmuError(where(version ? version->line : root.line) + "fmiVersion: expected \"2.0\" (FMI 2.0), got " +
                   (version ? "\"" + d.fmi_version + "\"" : "none"));
  d.model_name = Attr(root, "modelName");
  d.guid = Attr(root, "guid");
  bool model_exchange = false;
  const road::xml::Element* cs = nullptr;
  const road::xml::Element* variables = nullptr;
  for (const auto& c : root.children) {
    if (c.name == "CoSimulation") cs = &c;
    if (c.name == "ModelExchange") model_exchange = true;
    if (c.name == "ModelVariables") variables = &c;
  }
  if (!cs)
    throw FmuError(where(root.line) + (model_exchange ? "the FMU is for model exchange only: platoon runs co-simulation FMUs "
                                                        "(a <CoSimulation> element), export the model for co-simulation"
                                                      : "expected a <CoSimulation> element, got none"));
  d.model_identifier = Attr(*cs, "modelIdentifier");
  if (d.model_identifier.empty()) throw FmuError(where(cs->line) + "<CoSimulation>: expected a modelIdentifier, got none");
  d.can_handle_variable_step = Attr(*cs, "canHandleVariableCommunicationStepSize") == "true";
  if (variables) {
    for (const auto& v : variables->children) {
      if (v.name != "ScalarVariable") continue;
      FmuVariable var;
      var.line = v.line;
      var.name = Attr(v, "name");
      if (var.name.empty()) throw FmuError(where(v.line) + "<ScalarVariable>: expected a name, got none");
      const std::string vr = Attr(v, "valueReference");
      char* end = nullptr;
      const unsigned long value = std::strtoul(vr.c_str(), &end, 10);
      if (vr.empty() || *end != '\0' || vr.front() == '-' || value > 0xffffffffUL)
        throw FmuError(where(v.line) + "variable \"" + var.name + "\": expected a valueReference (an unsigned integer), got \"" + vr + "\"");
      var.value_reference = static_cast<unsigned>(value);
      var.causality = Attr(v, "causality");
      if (var.causality.empty()) var.causality = "local";
      for (const auto& t : v.children)
        if (t.name == "Real" || t.name == "Integer" || t.name == "Boolean" || t.name == "String" || t.name == "Enumeration") {
          var.type = t.name;
          const std::string start = Attr(t, "start");
          if (!start.empty() && t.name != "String") {
            if (t.name == "Boolean") var.start = start == "true" ? 1.0 : 0.0;
            else var.start = std::strtod(start.c_str(), nullptr);
          }
        }
      if (var.type.empty())
        throw FmuError(where(v.line) + "variable \"" + var.name + "\": expected a type element (<Real>, <Integer>, <Boolean>, ...), got none");
      d.variables.push_back(std::move(var));
    }
  }
  return d;
}

// --- The loaded instance ---

struct FmuVehicle::Impl {
  FmuLogHook log;
  std::string path;          // the .fmu, for messages
  std::string instance_name;
  fmu_detail::fs::path dir;  // the unzipped FMU
  void* library = nullptr;
  fmi2::CallbackFunctions callbacks{};
  fmi2::Component component = nullptr;
  int worst = fmi2::kOk;     // the worst status a call returned
  std::string last_message;  // the FMU's last error-level log message, for the failure's message
  // The functions.
  fmi2::InstantiateFn instantiate = nullptr;
  fmi2::FreeInstanceFn free_instance = nullptr;
  fmi2::SetupExperimentFn setup_experiment = nullptr;
  fmi2::ComponentFn enter_init = nullptr, exit_init = nullptr, terminate = nullptr;
  fmi2::GetRealFn get_real = nullptr;
  fmi2::SetRealFn set_real = nullptr;
  fmi2::GetIntegerFn get_integer = nullptr;
  fmi2::SetIntegerFn set_integer = nullptr;
  fmi2::DoStepFn do_step = nullptr;
  // The mapped variables: inputs set each step (Real), the gear, and the outputs read (Real).
  std::vector<fmi2::ValueReference> real_in_vr;
  std::vector<int> real_in_slot;  // index into the FmuInput's flattened values
  std::optional<fmi2::ValueReference> gear_vr;
  bool gear_is_real = false;
  std::vector<fmi2::ValueReference> out_vr;
  std::vector<int> out_slot;  // which VehicleState field (see ReadOutputs)
  std::vector<double> in_values, out_values;
  double step_s = 0.001;
  uint64_t steps = 0;
  // Without start parameters the FMU's own frame is moved onto the start: p_world = start + R (p - p0).
  bool transform = false;
  double p0_x = 0, p0_y = 0, yaw0 = 0;
  FmuStart start;
  std::vector<std::string> optional_names;

  static void Logger(fmi2::ComponentEnvironment env, fmi2::String instance, fmi2::Status status, fmi2::String category,
                     fmi2::String message, ...) {
    auto* self = static_cast<Impl*>(env);
    char text[1024];
    va_list args;
    va_start(args, message);
    std::vsnprintf(text, sizeof text, message ? message : "", args);
    va_end(args);
    const std::string line = std::string(instance ? instance : "") + " [" + (category ? category : "") + "] " + text;
    if (status >= fmi2::kError) self->last_message = text;
    if (self->log)
      self->log(status >= fmi2::kError ? FmuLogLevel::kError : status >= fmi2::kWarning ? FmuLogLevel::kWarning : FmuLogLevel::kInfo,
                "FMU " + line);
  }

  ~Impl() {
    if (component) {
      // fmi2Terminate only from a healthy instance; nothing at all after fmi2Fatal (the standard's rule).
      if (worst < fmi2::kError && terminate) terminate(component);
      if (worst < fmi2::kFatal && free_instance) free_instance(component);
    }
    if (library) dlclose(library);
    if (!dir.empty()) {
      std::error_code ec;
      fmu_detail::fs::remove_all(dir, ec);
    }
  }

  template <typename Fn>
  Fn Symbol(const char* name, const std::string& so) {
    void* p = dlsym(library, name);
    if (!p) throw FmuError(path + ": " + so + " has no function " + name + " (an FMI 2.0 co-simulation FMU exports it)");
    return reinterpret_cast<Fn>(p);
  }

  // Records a call's status; returns whether it may go on.
  bool Ok(int status) {
    worst = std::max(worst, status);
    return status <= fmi2::kWarning;
  }
};

std::unique_ptr<FmuVehicle> FmuVehicle::Open(const FmuDef& def, FmuLogHook log) {
  namespace fs = fmu_detail::fs;
  const std::string& path = def.path;
  std::unique_ptr<FmuVehicle> v(new FmuVehicle());
  v->impl_ = std::make_unique<Impl>();
  Impl& m = *v->impl_;
  m.log = std::move(log);
  m.path = path;
  m.instance_name = def.instance_name;
  m.step_s = def.step_s;
  m.start = def.start;
  if (!(def.step_s > 0)) throw FmuError(path + ": the communication step must be > 0 s, got " + std::to_string(def.step_s));

  // The file, unzipped into a private folder.
  std::error_code ec;
  if (path.empty()) throw FmuError("fmu: expected the path of an .fmu file, got \"\"");
  if (!fs::exists(path, ec)) throw FmuError(path + ": no such file");
  if (!fs::is_regular_file(path, ec)) throw FmuError(path + ": expected an .fmu file, got a folder or a special file");
  std::string tmpl = (fs::temp_directory_path(ec) / "platoon-fmu-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw FmuError(path + ": cannot make a temporary folder to unzip it into: " + std::strerror(errno));
  m.dir = tmpl;
  fmu_detail::Unzip(path, m.dir);

  // modelDescription.xml.
  const fs::path md = m.dir / "modelDescription.xml";
  if (!fs::exists(md)) throw FmuError(path + ": the archive has no modelDescription.xml (every FMU has one at its top)");
  std::ifstream in(md, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  v->description_ = ParseFmuDescription(text.str(), path + ": modelDescription.xml");
  const FmuDescription& d = v->description_;

  // The variables platoon maps, each with the causality and type it needs.
  const std::string md_where = path + ": modelDescription.xml";
  for (const auto& k : fmu_detail::kKnown) {
    const FmuVariable* var = d.Find(k.name);
    if (!var) {
      if (!k.required) continue;
      std::string have;
      for (const auto& x : d.variables)
        if (x.causality == k.causality) have += (have.empty() ? "" : ", ") + x.name;
      throw FmuError(md_where + ": missing variable \"" + k.name + "\" (causality " + k.causality + ", Real: " + k.meaning +
                     "); its " + k.causality + "s: " + (have.empty() ? "none" : have));
    }
    const bool gear = std::string(k.name) == "gear";
    if (var->causality != k.causality)
      throw FmuError(md_where + ":" + std::to_string(var->line) + ": variable \"" + k.name + "\": expected causality \"" +
                     k.causality + "\", got \"" + var->causality + "\"");
    if (var->type != "Real" && !(gear && var->type == "Integer"))
      throw FmuError(md_where + ":" + std::to_string(var->line) + ": variable \"" + k.name + "\": expected type " +
                     (gear ? "Integer or Real" : "Real") + ", got " + var->type);
    if (!k.required) m.optional_names.push_back(k.name);
  }

  // The library.
  const std::string so = "binaries/linux64/" + d.model_identifier + ".so";
  if (!fs::exists(m.dir / so)) {
    std::string platforms;
    for (const auto& e : fs::directory_iterator(m.dir / "binaries", ec))
      platforms += (platforms.empty() ? "" : ", ") + e.path().filename().string();
    throw FmuError(path + ": no " + so + " (the library for 64-bit Linux); the FMU has binaries for: " +
                   (platforms.empty() ? "none" : platforms));
  }
  m.library = dlopen((m.dir / so).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m.library) throw FmuError(path + ": " + so + " does not load: " + dlerror());
  const auto version = m.Symbol<fmi2::GetVersionFn>("fmi2GetVersion", so);
  const auto platform = m.Symbol<fmi2::GetTypesPlatformFn>("fmi2GetTypesPlatform", so);
  m.instantiate = m.Symbol<fmi2::InstantiateFn>("fmi2Instantiate", so);
  m.free_instance = m.Symbol<fmi2::FreeInstanceFn>("fmi2FreeInstance", so);
  m.setup_experiment = m.Symbol<fmi2::SetupExperimentFn>("fmi2SetupExperiment", so);
  m.enter_init = m.Symbol<fmi2::ComponentFn>("fmi2EnterInitializationMode", so);
  m.exit_init = m.Symbol<fmi2::ComponentFn>("fmi2ExitInitializationMode", so);
  m.terminate = m.Symbol<fmi2::ComponentFn>("fmi2Terminate", so);
  m.get_real = m.Symbol<fmi2::GetRealFn>("fmi2GetReal", so);
  m.set_real = m.Symbol<fmi2::SetRealFn>("fmi2SetReal", so);
  m.get_integer = m.Symbol<fmi2::GetIntegerFn>("fmi2GetInteger", so);
  m.set_integer = m.Symbol<fmi2::SetIntegerFn>("fmi2SetInteger", so);
  m.do_step = m.Symbol<fmi2::DoStepFn>("fmi2DoStep", so);
  const std::string lib_version = version() ? version() : "";
  if (lib_version != "2.0") throw FmuError(path + ": " + so + ": fmi2GetVersion: expected \"2.0\", got \"" + lib_version + "\"");
  const std::string lib_platform = platform() ? platform() : "";
  if (lib_platform != "default")
    throw FmuError(path + ": " + so + ": fmi2GetTypesPlatform: expected \"default\", got \"" + lib_platform + "\"");

  // The instance.
  m.callbacks.logger = &Impl::Logger;
  m.callbacks.allocate_memory = [](std::size_t n, std::size_t size) -> void* { return std::calloc(n, size); };
  m.callbacks.free_memory = [](void* p) { std::free(p); };
  m.callbacks.step_finished = nullptr;
  m.callbacks.component_environment = &m;
  const std::string resources = "file://" + (m.dir / "resources").string();
  m.component = m.instantiate(m.instance_name.c_str(), fmi2::kCoSimulation, d.guid.c_str(), resources.c_str(), &m.callbacks,
                              fmi2::kFalse, fmi2::kFalse);
  const auto said = [&m] { return m.last_message.empty() ? std::string() : " (the FMU said: " + m.last_message + ")"; };
  if (!m.component) throw FmuError(path + ": fmi2Instantiate refused a co-simulation instance" + said());
  const auto check = [&](int status, const char* what) {
    if (!m.Ok(status)) throw FmuError(path + ": " + what + " returned " + fmu_detail::StatusName(status) + said());
  };
  check(m.setup_experiment(m.component, fmi2::kFalse, 0.0, 0.0, fmi2::kFalse, 0.0), "fmi2SetupExperiment");
  // Start parameters where the FMU has them.
  const auto set_param = [&](const char* name, double value) {
    if (const FmuVariable* var = d.Find(name)) {
      const fmi2::ValueReference vr = var->value_reference;
      check(m.set_real(m.component, &vr, 1, &value), "fmi2SetReal of a start parameter");
      return true;
    }
    return false;
  };
  const bool pose_x = set_param("x0", def.start.x_m), pose_y = set_param("y0", def.start.y_m),
             pose_yaw = set_param("yaw0", def.start.yaw_rad);
  v->takes_start_pose_ = pose_x && pose_y && pose_yaw;
  if (!set_param("vx0", def.start.vx_mps) && def.start.vx_mps != 0 && m.log)
    m.log(FmuLogLevel::kWarning, path + " has no start parameter vx0: the vehicle starts at the FMU's own speed");

  // The inputs in a fixed order: steer, throttle, brake, road_slope, mu_*, z_* (slots 0..11).
  const char* real_inputs[] = {"steer", "throttle", "brake", "road_slope", "mu_fl", "mu_fr", "mu_rl", "mu_rr",
                               "z_fl", "z_fr", "z_rl", "z_rr"};
  for (int i = 0; i < 12; ++i)
    if (const FmuVariable* var = d.Find(real_inputs[i])) {
      m.real_in_vr.push_back(var->value_reference);
      m.real_in_slot.push_back(i);
    }
  if (const FmuVariable* g = d.Find("gear")) {
    m.gear_vr = g->value_reference;
    m.gear_is_real = g->type == "Real";
  }
  const char* outputs[] = {"x", "y", "yaw", "vx", "vy", "yaw_rate", "ax", "ay", "steer_angle"};
  for (int i = 0; i < 9; ++i)
    if (const FmuVariable* var = d.Find(outputs[i])) {
      m.out_vr.push_back(var->value_reference);
      m.out_slot.push_back(i);
    }
  m.in_values.resize(m.real_in_vr.size());
  m.out_values.resize(m.out_vr.size());

  check(m.enter_init(m.component), "fmi2EnterInitializationMode");
  check(m.exit_init(m.component), "fmi2ExitInitializationMode");
  check(m.get_real(m.component, m.out_vr.data(), m.out_vr.size(), m.out_values.data()), "fmi2GetReal of the outputs");
  // Without a start pose the FMU's first pose is moved onto the start.
  if (!v->takes_start_pose_) {
    m.transform = true;
    for (size_t i = 0; i < m.out_slot.size(); ++i) {
      if (m.out_slot[i] == 0) m.p0_x = m.out_values[i];
      if (m.out_slot[i] == 1) m.p0_y = m.out_values[i];
      if (m.out_slot[i] == 2) m.yaw0 = m.out_values[i];
    }
  }
  v->ReadOutputs();
  v->state_.distance_m = 0;
  return v;
}

FmuVehicle::~FmuVehicle() = default;

std::string FmuVehicle::OptionalVariables() const {
  std::string s;
  for (const auto& n : impl_->optional_names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

void FmuVehicle::ReadOutputs() {
  Impl& m = *impl_;
  VehicleState s = state_;
  for (size_t i = 0; i < m.out_slot.size(); ++i) {
    const double value = m.out_values[i];
    switch (m.out_slot[i]) {
      case 0: s.x_m = value; break;
      case 1: s.y_m = value; break;
      case 2: s.yaw_rad = value; break;
      case 3: s.vx_mps = value; break;
      case 4: s.vy_mps = value; break;
      case 5: s.yaw_rate_radps = value; break;
      case 6: s.ax_mps2 = value; break;
      case 7: s.ay_mps2 = value; break;
      case 8: s.steer_rad = value; break;
    }
  }
  if (m.transform) {
    const double turn = m.start.yaw_rad - m.yaw0;
    const double dx = s.x_m - m.p0_x, dy = s.y_m - m.p0_y;
    s.x_m = m.start.x_m + std::cos(turn) * dx - std::sin(turn) * dy;
    s.y_m = m.start.y_m + std::sin(turn) * dx + std::cos(turn) * dy;
    s.yaw_rad += turn;
  }
  s.distance_m = state_.distance_m + std::hypot(s.x_m - state_.x_m, s.y_m - state_.y_m);
  state_ = s;
}

void FmuVehicle::Fail(const std::string& message) {
  failed_ = true;
  error_ = impl_->path + ": " + message + (impl_->last_message.empty() ? "" : " (the FMU said: " + impl_->last_message + ")");
}

bool FmuVehicle::Step(const FmuInput& input) {
  if (failed_) return false;
  Impl& m = *impl_;
  const double slots[12] = {input.steer,         input.throttle,      input.brake,         input.road_slope_rad,
                            input.mu[0],         input.mu[1],         input.mu[2],         input.mu[3],
                            input.contact_z_m[0], input.contact_z_m[1], input.contact_z_m[2], input.contact_z_m[3]};
  for (size_t i = 0; i < m.real_in_slot.size(); ++i) m.in_values[i] = slots[m.real_in_slot[i]];
  int status = m.set_real(m.component, m.real_in_vr.data(), m.real_in_vr.size(), m.in_values.data());
  if (!m.Ok(status)) {
    Fail(std::string("fmi2SetReal of the inputs returned ") + fmu_detail::StatusName(status));
    return false;
  }
  if (m.gear_vr) {
    const fmi2::ValueReference vr = *m.gear_vr;
    if (m.gear_is_real) {
      const double g = input.gear;
      status = m.set_real(m.component, &vr, 1, &g);
    } else {
      const fmi2::Integer g = input.gear;
      status = m.set_integer(m.component, &vr, 1, &g);
    }
    if (!m.Ok(status)) {
      Fail(std::string("setting the gear returned ") + fmu_detail::StatusName(status));
      return false;
    }
  }
  // The communication point counted in whole steps, so that it does not drift over a long drive.
  const double t = static_cast<double>(m.steps) * m.step_s;
  status = m.do_step(m.component, t, m.step_s, fmi2::kTrue);
  if (!m.Ok(status)) {
    char what[96];
    std::snprintf(what, sizeof what, "fmi2DoStep at t = %.3f s returned %s", t, fmu_detail::StatusName(status));
    Fail(what);
    return false;
  }
  status = m.get_real(m.component, m.out_vr.data(), m.out_vr.size(), m.out_values.data());
  if (!m.Ok(status)) {
    Fail(std::string("fmi2GetReal of the outputs returned ") + fmu_detail::StatusName(status));
    return false;
  }
  ++m.steps;
  time_s_ = static_cast<double>(m.steps) * m.step_s;
  ReadOutputs();
  return true;
}

}  // namespace platoon::vehicle
