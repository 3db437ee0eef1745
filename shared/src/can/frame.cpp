#include "platoon/can/frame.hpp"

namespace platoon::can {

namespace frame_detail {
// The payload lengths a CAN FD frame may have beyond 8 bytes (DLC 9..15).
constexpr uint8_t kFdLongLengths[] = {12, 16, 20, 24, 32, 48, 64};
}  // namespace frame_detail

bool ValidLength(bool fd, uint8_t len) {
  if (len <= kClassicMaxLen) return true;
  if (!fd) return false;
  for (uint8_t allowed : frame_detail::kFdLongLengths) {
    if (len == allowed) return true;
  }
  return false;
}

uint8_t FdLengthFor(uint32_t bytes) {
  if (bytes <= kClassicMaxLen) return static_cast<uint8_t>(bytes);
  for (uint8_t allowed : frame_detail::kFdLongLengths) {
    if (bytes <= allowed) return allowed;
  }
  return 0;
}

}  // namespace platoon::can
