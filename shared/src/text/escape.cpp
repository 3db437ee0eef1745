#include "platoon/text/escape.hpp"

#include "platoon/text/utf8.hpp"

#include <cstdio>

namespace platoon::text {

std::string EscapeForLog(std::string_view text, size_t max_bytes) {
  const std::string_view kept = text.substr(0, max_bytes);
  std::string out;
  out.reserve(kept.size() + 16);
  char buf[24];  // "%zu" of a size_t: up to 20 digits
  for (size_t i = 0; i < kept.size();) {
    char32_t cp = 0;
    const size_t len = DecodeUtf8(kept, i, cp);
    // Malformed (or cut at max_bytes): each byte shows as \xNN.
    if (len == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(kept[i]));
      out += buf;
      ++i;
      continue;
    }
    if (cp == '\\') out += "\\\\";
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp < 0x80 && IsControl(cp)) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (IsControl(cp)) {
      std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(kept.substr(i, len));
    }
    i += len;
  }
  if (text.size() > kept.size()) {
    std::snprintf(buf, sizeof buf, "%zu", text.size());
    out += std::string("... (") + buf + " bytes)";
  }
  return out;
}

}  // namespace platoon::text
