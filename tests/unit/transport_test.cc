#include "mpi_bridge/transport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using fiber::bridge::Envelope;
using fiber::bridge::frame;

// Peers decode the envelope with memcpy, so its layout is part of the wire format.
static_assert(sizeof(Envelope) == 32);

Envelope envelope_of(const std::vector<std::byte>& bytes) {
  Envelope envelope;
  std::memcpy(&envelope, bytes.data(), sizeof envelope);
  return envelope;
}

TEST(TransportTest, FrameIsEnvelopeThenPayload) {
  const Envelope envelope{11,   0x80000001u, 0x1122334455667788ull, 0xfedcba9876543210ull,
                          4242, 0xa0b0c0d0u};
  std::vector<std::byte> payload(300);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i % 251);

  const auto bytes = frame(envelope, payload);
  ASSERT_EQ(bytes.size(), sizeof(Envelope) + payload.size());
  const Envelope back = envelope_of(bytes);
  EXPECT_EQ(back.kind, 11u);
  EXPECT_EQ(back.flags, 0x80000001u);
  EXPECT_EQ(back.id, 0x1122334455667788ull);
  EXPECT_EQ(back.aux, 0xfedcba9876543210ull);
  EXPECT_EQ(back.sender, 4242u);
  EXPECT_EQ(back.seq, 0xa0b0c0d0u);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), bytes.begin() + sizeof(Envelope)));
}

TEST(TransportTest, FrameWithEmptyPayloadIsJustTheEnvelope) {
  const Envelope envelope{3, 2, 1, 0};
  const auto bytes = frame(envelope, {});
  ASSERT_EQ(bytes.size(), sizeof(Envelope));
  const Envelope back = envelope_of(bytes);
  EXPECT_EQ(back.kind, 3u);
  EXPECT_EQ(back.flags, 2u);
  EXPECT_EQ(back.id, 1u);
  EXPECT_EQ(back.aux, 0u);
}

TEST(TransportTest, DefaultEnvelopeFramesAsZeros) {
  const std::vector<std::byte> payload{std::byte{0xab}};
  const auto bytes = frame(Envelope{}, payload);
  ASSERT_EQ(bytes.size(), sizeof(Envelope) + 1);
  for (size_t i = 0; i < sizeof(Envelope); ++i) EXPECT_EQ(bytes[i], std::byte{0}) << "byte " << i;
  EXPECT_EQ(bytes.back(), std::byte{0xab});
}

}  // namespace
