// can_codec_tool: platoon's side of the canmatrix cross-check (tests/can/canmatrix_cross.py).
//   can_codec_tool encode DBC TABLE LOG   each TABLE line "TIME_S MESSAGE SIGNAL=VALUE ..." becomes one candump
//                                          line of the message's frame, encoded by platoon::can::EncodeMessage
//   can_codec_tool decode DBC LOG         each candump line of LOG becomes "MESSAGE SIGNAL=VALUE ..." on stdout
//                                          (DecodeMessage; values with 17 significant digits), in order
// Exit 2 on a usage error or a file it cannot read, 1 on a frame or signal the DBC does not have.
#include "platoon/can/candump.hpp"
#include "platoon/can/dbc.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

namespace {

int Encode(const platoon::can::Database& db, const std::string& table_path, const std::string& log_path) {
  std::ifstream in(table_path);
  if (!in) {
    std::cerr << table_path << ": cannot be read\n";
    return 2;
  }
  platoon::can::CandumpWriter writer(log_path);
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream fields(line);
    std::string time_text, name;
    if (!(fields >> time_text >> name)) continue;
    const platoon::can::Message* m = db.FindMessage(name);
    if (m == nullptr) {
      std::cerr << table_path << ":" << line_no << ": expected a message of the DBC, got " << name << "\n";
      return 1;
    }
    std::map<std::string, double> values;
    std::string pair;
    while (fields >> pair) {
      const size_t eq = pair.find('=');
      if (eq == std::string::npos) {
        std::cerr << table_path << ":" << line_no << ": expected SIGNAL=VALUE, got " << pair << "\n";
        return 2;
      }
      values[pair.substr(0, eq)] = std::strtod(pair.c_str() + eq + 1, nullptr);
    }
    platoon::can::LoggedFrame logged;
    logged.time_ns = std::llround(std::strtod(time_text.c_str(), nullptr) * 1e9);
    try {
      logged.frame = platoon::can::EncodeMessage(*m, values);
    } catch (const std::invalid_argument& e) {
      std::cerr << table_path << ":" << line_no << ": " << e.what() << "\n";
      return 1;
    }
    if (!writer.Append(logged)) {
      std::cerr << log_path << ": write failed\n";
      return 1;
    }
  }
  return writer.Flush() ? 0 : 1;
}

int Decode(const platoon::can::Database& db, const std::string& log_path) {
  for (const platoon::can::LoggedFrame& logged : platoon::can::ReadCandumpLog(log_path)) {
    const platoon::can::Message* m = db.FindMessage(logged.frame.id, logged.frame.extended);
    if (m == nullptr) {
      std::cerr << log_path << ": no message with id " << logged.frame.id << (logged.frame.extended ? " (extended)" : "") << "\n";
      return 1;
    }
    std::printf("%s", m->name.c_str());
    for (const auto& [name, value] : platoon::can::DecodeMessage(*m, logged.frame)) std::printf(" %s=%.17g", name.c_str(), value);
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = "usage: can_codec_tool encode DBC TABLE LOG | can_codec_tool decode DBC LOG\n";
  if (argc < 2) {
    std::cerr << usage;
    return 2;
  }
  const std::string mode = argv[1];
  try {
    if (mode == "encode" && argc == 5) return Encode(platoon::can::LoadDbc(argv[2]), argv[3], argv[4]);
    if (mode == "decode" && argc == 4) return Decode(platoon::can::LoadDbc(argv[2]), argv[3]);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  std::cerr << usage;
  return 2;
}
