// The one name rule (shared/src/text/name_rule.cpp) and the one escaping of peer text for logs
// (shared/src/text/escape.cpp), and the config reader applying the rule to every name it reads.
#include "platoon/config/session.hpp"
#include "platoon/text/escape.hpp"
#include "platoon/text/name_rule.hpp"

#include <doctest/doctest.h>

#include <string>

using platoon::config::ConfigError;
using platoon::text::CheckName;
using platoon::text::EscapeForLog;

namespace {

std::string NameRuleConfigError(const std::string& toml) {
  try {
    platoon::config::LoadSessionText(toml, "lab.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("name rule: plain, dotted and UTF-8 names pass") {
  for (const char* ok : {"a", "traffic-1", "seat_03", "lidar.front", "Fahrer-Müller", "운전석", "車両-7", "x+y@lab:2",
                         "Ωmega"})
    CHECK_MESSAGE(CheckName(ok).empty(), ok);
  CHECK(CheckName(std::string(platoon::text::kMaxNameBytes, 'n')).empty());
}

TEST_CASE("name rule: NUL, newline, ESC, DEL, C1, bidi overrides, spaces, slashes, bad UTF-8 and long names fail") {
  const std::string nul("ab\0cd", 5);
  CHECK(CheckName(nul).find("got a NUL at byte 2") != std::string::npos);
  CHECK(CheckName("a\nINFO forged").find("got a newline at byte 1") != std::string::npos);
  CHECK(CheckName("red\x1b[31m").find("got an escape (ESC) at byte 3") != std::string::npos);
  CHECK(CheckName("del\x7f").find("a control character at byte 3") != std::string::npos);
  CHECK(CheckName("c1\xc2\x85").find("a control character at byte 2") != std::string::npos);        // U+0085 NEL
  CHECK(CheckName("rtl\xe2\x80\xae").find("a control character at byte 3") != std::string::npos);  // U+202E
  CHECK(CheckName("tab\there").find("a control character") != std::string::npos);
  CHECK(CheckName("two words").find("a space at byte 3") != std::string::npos);
  CHECK(CheckName("a/b").find("a slash at byte 1") != std::string::npos);
  CHECK(CheckName("a\\b").find("a slash at byte 1") != std::string::npos);
  CHECK(CheckName("bad\xff").find("malformed UTF-8 at byte 3") != std::string::npos);
  CHECK(CheckName("over\xc0\xaf").find("malformed UTF-8") != std::string::npos);  // overlong '/'
  CHECK(CheckName("cut\xe2\x80").find("malformed UTF-8") != std::string::npos);
  CHECK(CheckName("").find("got an empty name") != std::string::npos);
  CHECK(CheckName(std::string(platoon::text::kMaxNameBytes + 1, 'n')).find("got 129 bytes") != std::string::npos);
  const std::string huge(100'000, 'x');
  const std::string e = CheckName(huge);
  CHECK(e.find("got 100000 bytes") != std::string::npos);
  CHECK(e.size() < 300);  // the message quotes a bounded prefix, never the whole name
  // Every message states the rule and never carries the raw bad byte.
  for (const std::string& bad : {nul, std::string("a\nb"), std::string("e\x1b[2J")}) {
    const std::string m = CheckName(bad);
    CHECK(m.rfind("a name is 1 to 128 bytes of printable UTF-8", 0) == 0);
    CHECK(m.find('\n') == std::string::npos);
    CHECK(m.find('\x1b') == std::string::npos);
    CHECK(m.find('\0') == std::string::npos);
  }
}

TEST_CASE("escape for log: control bytes, backslashes and bad UTF-8 escaped, printable UTF-8 kept, length bounded") {
  CHECK(EscapeForLog("plain name-1") == "plain name-1");
  CHECK(EscapeForLog("a\nb\r\tc") == "a\\nb\\r\\tc");
  CHECK(EscapeForLog("\x1b[31mred") == "\\x1b[31mred");
  CHECK(EscapeForLog(std::string("n\0l", 3)) == "n\\x00l");
  CHECK(EscapeForLog("del\x7f") == "del\\x7f");
  CHECK(EscapeForLog("back\\slash") == "back\\\\slash");
  CHECK(EscapeForLog("Müller") == "Müller");
  CHECK(EscapeForLog("x\xc2\x9by") == "x\\u{009b}y");      // C1 CSI
  CHECK(EscapeForLog("x\xe2\x80\xaey") == "x\\u{202e}y");  // right-to-left override
  CHECK(EscapeForLog("bad\xff") == "bad\\xff");
  const std::string huge(100'000, 'z');
  const std::string e = EscapeForLog(huge);
  CHECK(e == std::string(platoon::text::kMaxLoggedBytes, 'z') + "... (100000 bytes)");
  // A multi-byte letter cut by the bound shows its kept bytes escaped, never half a character.
  CHECK(EscapeForLog("ab\xc3\xbc", 3) == "ab\\xc3... (4 bytes)");
}

TEST_CASE("name rule in session files: a NUL, a newline or 10 MB in a name fail with file, line, key and the rule") {
  // A node name with a NUL (TOML's \u0000): no longer silently cut at the NUL.
  std::string e = NameRuleConfigError("[[node]]\nname = \"car\\u0000x\"\nrole = \"traffic\"\n");
  CHECK(e.find("lab.toml:2") == 0);
  CHECK(e.find("node[0].name") != std::string::npos);
  CHECK(e.find("a name is 1 to 128 bytes") != std::string::npos);
  CHECK(e.find("got a NUL at byte 3") != std::string::npos);
  // A session name with a newline.
  e = NameRuleConfigError("[session]\n\nname = \"lab\\nINFO forged\"\n");
  CHECK(e.find("lab.toml:3") == 0);
  CHECK(e.find("session.name") != std::string::npos);
  CHECK(e.find("got a newline at byte 3") != std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
  // A 10 MB session name: refused quickly, with a bounded message.
  e = NameRuleConfigError("[session]\nname = \"" + std::string(10'000'000, 'q') + "\"\n");
  CHECK(e.find("lab.toml:2") == 0);
  CHECK(e.find("got 10000000 bytes") != std::string::npos);
  CHECK(e.size() < 400);
  // The same text as the wire's refusal (the server sends CheckName's message).
  CHECK(NameRuleConfigError("[[node]]\nname = \"a b\"\n").find(CheckName("a b")) != std::string::npos);
  CHECK(NameRuleConfigError("[[node]]\nname = \"Fahrer-Müller\"\nrole = \"traffic\"\n").empty());
}
