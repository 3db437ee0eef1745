#pragma once
/// Peer-supplied text made safe for a log line or a terminal: one helper for every process.

#include <cstddef>
#include <string>
#include <string_view>

namespace platoon::text {

/// Longest stretch of a peer's text kept by EscapeForLog by default, in bytes. Typical names are 5-30.
inline constexpr size_t kMaxLoggedBytes = 200;

/// `text` as one safe line: printable ASCII and well-formed printable UTF-8 kept; a backslash as "\\",
/// newline, carriage return and tab as "\n", "\r", "\t", every other control byte (ESC, NUL, DEL) and
/// every byte of malformed UTF-8 as "\xNN", Unicode controls, line separators and bidirectional overrides
/// as "\u{XXXX}". At most `max_bytes` of `text` are read; a longer text ends in "... (N bytes)". A peer can
/// neither forge a log line nor drive a terminal through what it comes back as.
std::string EscapeForLog(std::string_view text, size_t max_bytes = kMaxLoggedBytes);

}  // namespace platoon::text
