// libFuzzer target: protocol::Decode, the one entry point for every byte string a process receives
// (control, time, world, state and data sockets; session logs). Whatever decodes must encode again and
// decode to an equal message, and a packed point blob must be readable as point records.
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string_view>
#include <variant>

using namespace platoon;

namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_decode: %s\n", what);
  std::abort();
}

// What the fusion node and the viewer do with a decoded cloud: unpack its records.
template <class Cloud>
void ReadPoints(const Cloud& c) {
  const auto points = UnpackPointRecords(c.points, c.point_count, c.point_stride);
  // Decode accepts only blobs of exactly count x stride bytes, so a record-sized stride reads whole.
  Check(points.size() == c.point_count || c.point_stride < point_record::kStride, "a well-sized blob was not read whole");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const protocol::Decoded d = protocol::Decode(bytes);
  Check(d.error != protocol::DecodeError::kNone || d.message.has_value(), "no error and no message");
  Check(!d.message || d.error == protocol::DecodeError::kNone || d.error == protocol::DecodeError::kVersionMismatch,
        "a message came back with an error other than a version mismatch");
  Check(!protocol::DecodeErrorName(d.error).empty(), "decode error without a name");
  if (!d.message) return 0;
  (void)protocol::MessageName(*d.message);
  if (const auto* p = std::get_if<protocol::PointCloud>(&*d.message)) ReadPoints(*p);
  if (const auto* f = std::get_if<protocol::FusedCloud>(&*d.message)) ReadPoints(*f);
  if (d.error != protocol::DecodeError::kNone) return 0;
  // Round trip: what was accepted encodes again, and decodes to the same message.
  const std::string again = protocol::Encode(*d.message);
  const protocol::Decoded d2 = protocol::Decode(again);
  Check(d2.error == protocol::DecodeError::kNone && d2.message.has_value(), "a decoded message did not decode after re-encoding");
  Check(d2.message->index() == d.message->index(), "re-encoding changed the message type");
  return 0;
}
