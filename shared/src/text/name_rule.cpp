#include "platoon/text/name_rule.hpp"

#include "platoon/text/escape.hpp"
#include "platoon/text/utf8.hpp"

namespace platoon::text {

std::string CheckName(std::string_view name) {
  const std::string rule = "a name is 1 to " + std::to_string(kMaxNameBytes) +
                           " bytes of printable UTF-8 without spaces, slashes, backslashes or control characters";
  if (name.empty()) return rule + ", got an empty name";
  // Checked first: a 10 MB name is refused without reading it.
  if (name.size() > kMaxNameBytes)
    return rule + ", got " + std::to_string(name.size()) + " bytes (\"" + EscapeForLog(name, 40) + "\")";
  for (size_t i = 0; i < name.size();) {
    char32_t cp = 0;
    const size_t len = DecodeUtf8(name, i, cp);
    std::string what;
    if (len == 0) what = "malformed UTF-8";
    else if (cp == 0) what = "a NUL";
    else if (cp == '\n') what = "a newline";
    else if (cp == 0x1B) what = "an escape (ESC)";
    else if (IsControl(cp)) what = "a control character";
    else if (cp == ' ' || cp == 0xA0 || (cp >= 0x2000 && cp <= 0x200B) || cp == 0x3000) what = "a space";
    else if (cp == '/' || cp == '\\') what = "a slash";
    if (!what.empty())
      return rule + ", got " + what + " at byte " + std::to_string(i) + " in \"" + EscapeForLog(name) + "\"";
    i += len;
  }
  return {};
}

}  // namespace platoon::text
