// Transport channel: large messages pass without copies (shared on receive, handed over on send), small
// ones are copied, and shared bytes outlive the socket they came from.
#include "platoon/transport/channel.hpp"
#include "platoon/transport/send_shared.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using namespace platoon;
using namespace std::chrono_literals;

namespace {

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

}  // namespace

TEST_CASE("transport: a large message is shared with ZeroMQ's buffer on receive and handed over uncopied on send") {
  zmq::context_t ctx(1);
  transport::SharedBytes kept;
  const std::string big = Pattern(1 << 20, 7), small = Pattern(100, 9);
  {
    transport::ChannelDef shared_def{.share_from_bytes = 64 * 1024};
    transport::Channel pull(ctx, transport::Pattern::kPull, shared_def), push(ctx, transport::Pattern::kPush);
    push.Connect(pull.Bind("inproc://channel-test"));

    // Sent from an rvalue: the string itself goes to ZeroMQ; the receiver keeps it in ZeroMQ's buffer.
    std::string moved = big;
    REQUIRE(push.Send(std::move(moved)));
    REQUIRE(push.Send(std::string(small)));
    REQUIRE(push.Send(std::string_view(big)));  // from a view: copied, arrives the same
    CHECK(push.Stats().sent == 3);

    auto a = pull.Receive(2s);
    REQUIRE(a.has_value());
    CHECK(a->data.empty());
    REQUIRE(a->shared.owner != nullptr);
    CHECK(a->Payload() == big);
    CHECK(a->shared.view == big);

    auto b = pull.Receive(2s);
    REQUIRE(b.has_value());
    CHECK(b->shared.owner == nullptr);  // below the threshold: copied as before
    CHECK(b->data == small);
    CHECK(b->Payload() == small);
    const auto small_bytes = b->TakePayload();  // a string payload is moved into SharedBytes
    CHECK(small_bytes.view == small);

    auto c = pull.Receive(2s);
    REQUIRE(c.has_value());
    CHECK(c->Payload() == big);
    kept = c->TakePayload();
    CHECK(c->Payload().empty());
  }
  // The channel and its socket are gone; the shared bytes still hold the message (ASan would see a
  // use after free).
  CHECK(kept.view == big);
  CHECK(kept.size() == big.size());

  // Without share_from_bytes every message is copied into Packet::data.
  transport::Channel pull(ctx, transport::Pattern::kPull), push(ctx, transport::Pattern::kPush);
  push.Connect(pull.Bind("inproc://channel-test-copy"));
  REQUIRE(push.Send(std::string(big)));
  auto d = pull.Receive(2s);
  REQUIRE(d.has_value());
  CHECK(d->shared.owner == nullptr);
  CHECK(d->data == big);
}

TEST_CASE("transport: a large send that cannot go out is dropped, counted and freed") {
  zmq::context_t ctx(1);
  // A PUSH with no peer (and ZMQ_IMMEDIATE) drops at once; the handed-over string is freed by ZeroMQ
  // (LeakSanitizer would report it otherwise).
  transport::Channel push(ctx, transport::Pattern::kPush);
  CHECK_FALSE(push.Send(Pattern(256 * 1024, 3)));
  CHECK_FALSE(push.Send(std::string_view("short")));
  CHECK(push.Stats().send_dropped == 2);
  CHECK(push.Stats().sent == 0);
  // SendShared keeps the owner alive until ZeroMQ is done, and releases it when dropped.
  auto owner = std::make_shared<const std::string>(Pattern(128 * 1024, 5));
  CHECK_FALSE(transport::SendShared(push, *owner, owner));
  CHECK(owner.use_count() == 1);
}
