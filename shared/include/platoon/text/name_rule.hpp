#pragma once
/// The one rule for names that files and the wire both carry: session names, node names, sensor ids.

#include <cstddef>
#include <string>
#include <string_view>

namespace platoon::text {

/// Longest name accepted, in bytes of UTF-8 (a letter of another script takes 2-4). Typical names are 5-30.
inline constexpr size_t kMaxNameBytes = 128;

/// Empty when `name` is a valid name: 1 to kMaxNameBytes bytes of well-formed UTF-8 whose characters are
/// all printable (letters of any script, digits, punctuation), with no space, no '/' or '\' (names
/// become file names and parameter paths) and no control character (C0, DEL, C1, Unicode line
/// separators and bidirectional overrides). Otherwise the reason, with the name escaped
/// (EscapeForLog): the config reader and the server's Join both report this same text.
std::string CheckName(std::string_view name);

}  // namespace platoon::text
