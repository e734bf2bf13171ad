#include "admission.h"

#include <gtest/gtest.h>

#include "cleaner_policy.h"
#include "stats.h"

namespace kv::server {
namespace {

using protocol::Admit;

std::string Pdata(const std::string& name, uint8_t flags = 0) {
  protocol::Connect c;
  c.name = name;
  c.flags = flags;
  uint8_t out[protocol::kConnectSize];
  protocol::EncodeConnect(c, out);
  return std::string(reinterpret_cast<char*>(out), sizeof(out));
}

Refusal Refused(const std::string& p) {
  ConnectRequest cr;
  Refusal r;
  EXPECT_FALSE(Admission::ParseConnect(p.data(), p.size(), &cr, &r));
  EXPECT_FALSE(
      r.reason.empty());  // cut to 59 bytes on the wire, whole in the log
  return r;
}

TEST(AdmissionTest, ParsesAGoodConnect) {
  const std::string p = Pdata("default", protocol::kConnectCreate);
  ConnectRequest cr;
  Refusal r;
  ASSERT_TRUE(Admission::ParseConnect(p.data(), p.size(), &cr, &r));
  EXPECT_EQ(cr.connect.name, "default");
  EXPECT_TRUE(cr.create());
  EXPECT_FALSE(cr.hello());
  // Zero padding to 56 bytes (a NIC) changes nothing.
  std::string padded = p + std::string(4, '\0');
  ASSERT_TRUE(Admission::ParseConnect(padded.data(), padded.size(), &cr, &r));
}

TEST(AdmissionTest, ClassifiesEveryRefusal) {
  ConnectRequest cr;
  Refusal r;
  EXPECT_FALSE(Admission::ParseConnect(nullptr, 0, &cr, &r));
  EXPECT_EQ(r.admit, Admit::kMalformed);
  // All zeros (a NIC pads to 56 bytes) is no private data either.
  const std::string zeros(56, '\0');
  EXPECT_EQ(Refused(zeros).admit, Admit::kMalformed);
  EXPECT_NE(Refused(zeros).reason.find("no private data"), std::string::npos);
  std::string p = Pdata("default");
  EXPECT_EQ(Refused(p.substr(0, 3)).admit, Admit::kMalformed);
  std::string magic = p;
  magic[1] ^= 1;
  EXPECT_EQ(Refused(magic).admit, Admit::kBadMagic);
  std::string version = p;
  version[4] = 1;  // the version before tickets
  EXPECT_EQ(Refused(version).admit, Admit::kBadVersion);
  EXPECT_NE(Refused(version).reason.find("version 1"), std::string::npos);
  std::string flags = p;
  flags[5] = 8;
  EXPECT_EQ(Refused(flags).admit, Admit::kMalformed);
  std::string len = p;
  len[6] = 41;
  EXPECT_EQ(Refused(len).admit, Admit::kMalformed);
  EXPECT_EQ(Refused(Pdata("a b")).admit, Admit::kMalformed);
  EXPECT_EQ(Refused(Pdata("")).admit, Admit::kMalformed);
}

TEST(AdmissionTest, TicketConnectsAreSixteenBytesWithoutHello) {
  const std::string ticket(protocol::kTicketSize, '\x7f');
  ConnectRequest cr;
  Refusal r;
  const std::string good = Pdata(ticket, protocol::kConnectTicket);
  ASSERT_TRUE(Admission::ParseConnect(good.data(), good.size(), &cr, &r))
      << r.reason;
  EXPECT_TRUE(cr.ticket());
  EXPECT_FALSE(cr.hello());
  EXPECT_EQ(cr.connect.name, ticket);  // binary: not checked as a name
  EXPECT_EQ(Refused(Pdata(ticket.substr(1), protocol::kConnectTicket)).admit,
            Admit::kMalformed);
  EXPECT_EQ(
      Refused(Pdata("", protocol::kConnectTicket | protocol::kConnectHello))
          .admit,
      Admit::kMalformed);
}

TEST(AdmissionTest, RefusalAcceptCarriesStatusAndReason) {
  protocol::Accept a = RefusalAccept({Admit::kAccessDenied, "nope"}, 42);
  uint8_t out[protocol::kAcceptSize];
  protocol::EncodeAccept(a, out);
  protocol::Accept back;
  ASSERT_TRUE(protocol::DecodeAccept(out, sizeof(out), &back).ok());
  EXPECT_EQ(back.admit, Admit::kAccessDenied);
  EXPECT_EQ(back.reason, "nope");
  EXPECT_EQ(back.session_id, 42u);
}

TEST(CleanerPolicyTest, CleansOnlyPastTheThresholdWithASealedSegment) {
  store::KeyspaceStats s;
  EXPECT_FALSE(ShouldClean(s, 0.5));  // empty
  s.live_bytes = 100;
  s.dead_bytes = 100;
  s.sealed_segments = 1;
  EXPECT_FALSE(ShouldClean(s, 0.5));  // exactly at it
  s.dead_bytes = 101;
  EXPECT_TRUE(ShouldClean(s, 0.5));
  s.sealed_segments = 0;
  EXPECT_FALSE(ShouldClean(s, 0.5));  // nothing sealed to reclaim
}

TEST(StatsTest, TextHasEveryCounterAndKeyspaceLines) {
  Stats s;
  Stats::Add(s.puts, 3);
  store::KeyspaceStats k;
  k.live_bytes = 640;
  const std::string text = StatsText(s, {{"default", k}});
  EXPECT_NE(text.find("puts 3\n"), std::string::npos);
  EXPECT_NE(text.find("connections_active 0\n"), std::string::npos);
  EXPECT_NE(text.find("keyspace.default.live_bytes 640\n"), std::string::npos);
  EXPECT_NE(text.find("keyspace.default.dead_bytes 0\n"), std::string::npos);
}

}  // namespace
}  // namespace kv::server
