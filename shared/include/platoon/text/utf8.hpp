#pragma once
/// Strict UTF-8 decoding and the code points a log line or a name must not carry.

#include <cstddef>
#include <string_view>

namespace platoon::text {

/// Decodes the UTF-8 sequence at `text[at]` into `code_point`: its length in bytes (1-4), or 0 when the
/// bytes there are malformed (a stray continuation byte, a truncated sequence, an overlong form, a
/// surrogate, a code point past U+10FFFF).
inline size_t DecodeUtf8(std::string_view text, size_t at, char32_t& code_point) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char b0 = byte(at);
  size_t len = 0;
  char32_t cp = 0, min = 0;
  if (b0 < 0x80) {
    code_point = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (at + len > text.size()) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(at + i) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  code_point = cp;
  return len;
}

/// Whether code point `cp` is a control character in the wide sense: C0 (U+0000-U+001F), DEL, C1
/// (U+0080-U+009F), the line and paragraph separators (U+2028, U+2029), the bidirectional embeddings,
/// overrides and isolates (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) that reorder what a terminal
/// shows, and the byte order mark (U+FEFF).
inline bool IsControl(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

}  // namespace platoon::text
