#pragma once
/// Command-line helpers shared by every executable (platoon, platoon-server, platoon-node, platoon-viewer).
/// Header-only: only the executables, which link CLI11, include it.
///
/// Exit codes: every usage error exits 2 (CLI11's own codes 100+ are not ours); --help exits 0.

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

namespace platoon::config::cli {

/// Exit code of a usage error (bad option, bad config).
inline constexpr int kExitUsage = 2;

/// The value must be a finite number. CLI::Range, PositiveNumber and NonNegativeNumber let "nan" through
/// (every comparison with NaN is false), and "inf" passes a one-sided bound; add this to every double option.
inline CLI::Validator Finite() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return "expected a finite number, got " + s;
        return {};
      },
      "FINITE", "Finite");
}

/// Parses the command line. Returns nullopt when the program goes on, else the exit code: 0 after --help
/// or --version (printed), kExitUsage after a usage error (CLI11's message printed on stderr).
inline std::optional<int> Parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::Success& e) {
    app.exit(e);
    return 0;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
}

}  // namespace platoon::config::cli
