// Tickets: one connect per ticket, within its lifetime, only the exact
// bytes issued.
#include "tickets.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace kv::server {
namespace {

OpenKeyspace* Fake(int i) {
  static int slots[4];
  return reinterpret_cast<OpenKeyspace*>(&slots[i]);
}

std::string Issue(Tickets* t, OpenKeyspace* ks, bool peer = false) {
  uint8_t out[protocol::kTicketSize];
  EXPECT_TRUE(t->Issue(ks, out, peer).ok());
  return std::string(reinterpret_cast<char*>(out), sizeof(out));
}

TEST(TicketsTest, ATicketAdmitsOnceToItsKeyspace) {
  Tickets t(std::chrono::milliseconds(60000));
  const std::string a = Issue(&t, Fake(0));
  const std::string b = Issue(&t, Fake(1));
  ASSERT_NE(a, b);
  EXPECT_EQ(t.Redeem(b), Fake(1));
  EXPECT_EQ(t.Redeem(b), nullptr);  // used
  EXPECT_EQ(t.Redeem(a), Fake(0));
  EXPECT_EQ(t.Redeem(a), nullptr);
}

// A peer's ticket makes a peer session, a client's a client session:
// the kind travels with the ticket, not with the reconnect.
TEST(TicketsTest, APeersTicketSaysSo) {
  Tickets t(std::chrono::milliseconds(60000));
  const std::string peer = Issue(&t, Fake(2), true);
  const std::string client = Issue(&t, Fake(2));
  bool is_peer = false;
  EXPECT_EQ(t.Redeem(peer, &is_peer), Fake(2));
  EXPECT_TRUE(is_peer);
  EXPECT_EQ(t.Redeem(client, &is_peer), Fake(2));
  EXPECT_FALSE(is_peer);
}

TEST(TicketsTest, OnlyTheIssuedBytesRedeem) {
  Tickets t(std::chrono::milliseconds(60000));
  const std::string a = Issue(&t, Fake(0));
  for (size_t i = 0; i < a.size(); i++) {
    std::string guess = a;
    guess[i] = static_cast<char>(guess[i] ^ 1);
    EXPECT_EQ(t.Redeem(guess), nullptr) << i;
  }
  EXPECT_EQ(t.Redeem(a.substr(0, 15)), nullptr);
  EXPECT_EQ(t.Redeem(a + "x"), nullptr);
  EXPECT_EQ(t.Redeem(std::string(16, '\0')), nullptr);
  EXPECT_EQ(t.Redeem(a), Fake(0));  // the guesses did not consume it
}

TEST(TicketsTest, AnExpiredTicketAdmitsNothing) {
  Tickets t(std::chrono::milliseconds(1));
  const std::string a = Issue(&t, Fake(0));
  // Not a timed assertion: the ticket has expired whenever this ends.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(t.Redeem(a), nullptr);
}

TEST(TicketsTest, AtMostKMaxOutstandingOldestDroppedFirst) {
  Tickets t(std::chrono::milliseconds(60000));
  const std::string first = Issue(&t, Fake(0));
  const std::string second = Issue(&t, Fake(0));
  for (size_t i = 2; i < Tickets::kMax + 1; i++) Issue(&t, Fake(1));
  EXPECT_EQ(t.Redeem(first), nullptr);
  EXPECT_EQ(t.Redeem(second), Fake(0));
}

}  // namespace
}  // namespace kv::server
