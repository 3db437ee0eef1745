// libFuzzer target: the MCAP reader (mcap::ReadBytes, which mcap::Read and session_log::Read call on a
// file's contents) and what the session-log readers do with each message: the Cap'n Proto channels are
// wire envelopes (protocol::Decode; world states, fused clouds, sensor data), /platoon/session is JSON
// (session_log::ParseSessionInfo). Garbage must give problems, never a crash; what the reader reports
// must be consistent with the bytes it read.
#include "platoon/log/mcap.hpp"
#include "platoon/log/session_log.hpp"
#include "platoon/point_record.hpp"
#include "platoon/protocol/codec.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>
#include <variant>

using namespace platoon;

namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_mcap: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  uint64_t handed = 0;
  // The channel table as session_log::Read sees it: every Channel record precedes its messages.
  mcap::ReadResult result;
  result = mcap::ReadBytes(bytes, [&](const mcap::Message& m) {
    ++handed;
    const std::string_view payload(reinterpret_cast<const char*>(m.data.data()), m.data.size());
    // Every reader of a session log tries the envelope decoder on capnp channels; decoding any bytes is safe.
    const protocol::Decoded d = protocol::Decode(payload);
    if (d.message) {
      if (const auto* f = std::get_if<protocol::FusedCloud>(&*d.message))
        (void)UnpackPointRecords(f->points, f->point_count, f->point_stride);
      if (const auto* p = std::get_if<protocol::PointCloud>(&*d.message))
        (void)UnpackPointRecords(p->points, p->point_count, p->point_stride);
    }
    (void)session_log::ParseSessionInfo(payload);
  });
  Check(handed == 0 || result.stopped_at > 0, "messages handed but the scan stopped at byte 0");
  Check(result.stopped_at <= size, "the scan stopped past the end of the bytes");
  Check(!result.complete || result.problems.empty(), "a complete file with problems");
  for (const auto& p : result.problems) Check(!p.message.empty() && p.offset <= size, "a problem without text or past the end");
  (void)result.ProblemText();
  // Read again keeping the messages: the same count.
  const mcap::ReadResult kept = mcap::ReadBytes(bytes);
  Check(kept.messages.size() == handed, "reading with and without a callback gave different message counts");
  return 0;
}
