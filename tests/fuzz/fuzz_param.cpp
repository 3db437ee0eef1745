// libFuzzer target: a parameter set as it arrives from the network (ParamSet: a path and a TOML literal,
// `platoon ctl param set`, the viewer, a scenario action), through config::ParamRegistry::Set on a registry
// with an entry of every type and the fault injector's entries, as the server and the nodes hold them.
// Input: the path, a newline, the value text. Whatever is accepted must read back, and setting the value
// read back must be accepted again with the same result; whatever is refused must say why.
#include "platoon/config/params.hpp"
#include "platoon/transport/fault_injector.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace platoon;

namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_param: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string path = input.substr(0, nl);
  const std::string text = nl == std::string::npos ? std::string() : input.substr(nl + 1);

  double rate_hz = 60;
  int64_t vehicles = 50;
  bool stale_remove = false;
  std::string policy = "freeze", label = "lab";
  transport::FaultDef faults;
  config::ParamRegistry registry;
  registry.AddFloat("server.broadcast_hz", "Hz", {1, 1000}, "world-state rate", [&] { return rate_hz; },
                    [&](double v) { rate_hz = v; });
  registry.AddInt("node.traffic.vehicles", "", {0, 10000}, "vehicles", [&] { return vehicles; },
                  [&](int64_t v) { vehicles = v; });
  registry.AddBool("server.stale_remove", "remove stale entities", [&] { return stale_remove; },
                   [&](bool v) { stale_remove = v; });
  registry.AddString("server.stale_policy", "stale policy", [&] { return policy; },
                     [&](const std::string& v) { policy = v; }, {"freeze", "remove"});
  registry.AddString("session.label", "free text", [&] { return label; }, [&](const std::string& v) { label = v; });
  registry.AddFloat("server.lost_timeout_s", "s", {0.1, 60}, "read-only", [] { return 1.0; });
  config::AddFaultParams(registry, "server.faults.", faults, [] {});

  const protocol::ParamReply reply = registry.Set(path, text);
  if (!reply.ok) {
    Check(!reply.error.empty(), "a refused set without an error");
    return 0;
  }
  Check(reply.param.path == path, "the reply names another path");
  const protocol::ParamReply got = registry.Get(path);
  Check(got.ok && got.param.value == reply.param.value, "an accepted value does not read back");
  const protocol::ParamReply again = registry.Set(path, got.param.value);
  Check(again.ok && again.param.value == got.param.value, "the value read back is refused or changes when set again");
  (void)registry.List("");
  return 0;
}
