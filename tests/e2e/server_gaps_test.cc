// kvserver's checks that issue 19's mutation run found tested in one
// direction only (or not at all): a COMMIT naming a grant that is not the
// connection's current one, returned segments handed out again, a commit
// into the old grant after a REFILL answered no_space, and a shutdown with
// commits still queued. Each test names the break it catches.
#include <signal.h>

#include <limits>
#include <map>

#include "kv/store/pool.h"
#include "server_test_util.h"

namespace kv::e2e {
namespace {

class ServerGapsTest : public InMemoryServerTest {
 protected:
  // A COMMIT of a record of `rec_size` bytes for `key` at `offset`.
  static protocol::Commit CommitOf(uint32_t segment, uint64_t grant_id,
                                   uint64_t offset, size_t rec_size,
                                   std::string_view key, bool tombstone) {
    protocol::Commit cm;
    cm.op = tombstone ? 1 : 0;
    cm.segment = segment;
    cm.grant_id = grant_id;
    cm.offset = offset;
    cm.length = static_cast<uint32_t>(rec_size);
    cm.key_hash = index_format::HashKey(key);
    return cm;
  }
  // keyspace.default.keys from INFO stats on `c`; -1 when absent.
  long long Keys(RawClient* c) {
    std::string payload(1, static_cast<char>(protocol::InfoTopic::kStats));
    EXPECT_TRUE(c->SendMessage(protocol::Type::kInfo, payload, 5).ok());
    protocol::Header h;
    std::string reply;
    EXPECT_TRUE(c->ReceiveMessage(&h, &reply).ok());
    StatusCode code;
    std::string text;
    EXPECT_TRUE(protocol::DecodeStatusText(
                    reinterpret_cast<const uint8_t*>(reply.data()),
                    reply.size(), &code, &text)
                    .ok());
    const std::string name = "\nkeyspace.default.keys ";
    const size_t at = text.find(name);
    if (at == std::string::npos) return -1;
    return std::atoll(text.c_str() + at + name.size());
  }
  // Stops the server and checks the pool: `want` (key -> value; an empty
  // optional: absent) and Check() clean.
  void ExpectPool(
      const std::map<std::string, std::optional<std::string>>& want) {
    EXPECT_EQ(server_.Stop(), 0);
    store::PoolOptions ro;
    ro.read_only = true;
    auto pool = store::Pool::Open(pool_, ro);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    auto ks = (*pool)->GetKeyspace("default");
    ASSERT_TRUE(ks.ok());
    for (const auto& [k, v] : want) {
      std::string got;
      Status st = (*ks)->Get(k, &got);
      if (v.has_value()) {
        ASSERT_TRUE(st.ok()) << k << ": " << st.ToString();
        EXPECT_EQ(got, *v) << k;
      } else {
        EXPECT_TRUE(st.IsNotFound()) << k << ": " << st.ToString();
      }
    }
    store::CheckReport report = (*pool)->Check();
    EXPECT_TRUE(report.ok()) << report.problems.front();
  }
};

// 1. A COMMIT must name the connection's current grant: segment AND grant
// id. Catches: HandleCommit's grant check dropped (B commits A's written,
// uncommitted record through A's numbers: the store's own check passes,
// that grant being live) or weakened to one of the two fields.
TEST_F(ServerGapsTest, CommitNamingAnyOtherGrantIsRefusedAndChangesNothing) {
  StartServer();
  RawClient ca, cb;
  protocol::Accept a, b;
  ConnectOk(&ca, "default", &a);
  ConnectOk(&cb, "default", &b);
  const protocol::Grant ga = a.grant;
  protocol::Grant gb = b.grant;
  ASSERT_NE(ga.segment, gb.segment);
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&ca, a, ga, ga.start, "a0", "committed", &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  uint64_t a_tail = ga.start + record_format::RecordSize(2, 9);
  // A writes "a1" and does not commit it yet.
  const std::string a1 = EncodeTestRecord(a.keyspace_id, "a1", "pending");
  ASSERT_TRUE(ca.Write(ga.write_desc, a_tail - ga.start, a1).ok());
  ASSERT_EQ(Keys(&cb), 1);

  // B names A's segment and A's grant id.
  ack = Commit(
      &cb, CommitOf(ga.segment, ga.grant_id, a_tail, a1.size(), "a1", false));
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  // B names A's segment with its own grant id, and its own segment with
  // A's grant id.
  ack = Commit(
      &cb, CommitOf(ga.segment, gb.grant_id, a_tail, a1.size(), "a1", false));
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  ack = Commit(
      &cb, CommitOf(gb.segment, ga.grant_id, a_tail, a1.size(), "a1", false));
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  EXPECT_EQ(Keys(&cb), 1);
  // A's record was not consumed: A commits it at that very offset.
  ack = Commit(
      &ca, CommitOf(ga.segment, ga.grant_id, a_tail, a1.size(), "a1", false));
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  a_tail += a1.size();
  EXPECT_EQ(Keys(&cb), 2);

  // B's own grant, then a REFILL: the old grant id is stale, for the old
  // segment and for the new one; the new grant id with the old segment
  // number is not this grant either.
  ASSERT_TRUE(PutRaw(&cb, b, gb, gb.start, "b0", "v", &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  const protocol::Grant old_b = gb;
  protocol::RefillAck rack;
  ASSERT_TRUE(RefillRetrying(&cb, b, &rack).ok());
  ASSERT_EQ(rack.status, StatusCode::kOk) << rack.message;
  gb = rack.grant;
  ASSERT_NE(gb.grant_id, old_b.grant_id);
  const std::string b1 = EncodeTestRecord(b.keyspace_id, "b1", "new");
  ASSERT_TRUE(cb.Write(gb.write_desc, 0, b1).ok());
  const protocol::Commit forged[] = {
      CommitOf(old_b.segment, old_b.grant_id, gb.start, b1.size(), "b1", false),
      CommitOf(gb.segment, old_b.grant_id, gb.start, b1.size(), "b1", false),
      CommitOf(gb.segment == 0 ? 1 : gb.segment - 1, gb.grant_id, gb.start,
               b1.size(), "b1", false),
      CommitOf(ga.segment, gb.grant_id, gb.start, b1.size(), "b1", false),
  };
  for (const protocol::Commit& cm : forged) {
    ack = Commit(&cb, cm);
    EXPECT_EQ(ack.status, StatusCode::kInvalidArgument)
        << "segment " << cm.segment << " grant " << cm.grant_id << ": "
        << ack.message;
  }
  EXPECT_EQ(Keys(&cb), 3);
  // The record is still committable through the real grant.
  ack = Commit(
      &cb, CommitOf(gb.segment, gb.grant_id, gb.start, b1.size(), "b1", false));
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_EQ(Keys(&cb), 4);

  // The op against the record, both directions, and nothing applied:
  // a tombstone of a0 committed as a put (would delete a0), a put of a
  // new key committed as a delete (would add it).
  const std::string tomb = EncodeTestRecord(a.keyspace_id, "a0", "", true);
  ASSERT_TRUE(ca.Write(ga.write_desc, a_tail - ga.start, tomb).ok());
  ack = Commit(&ca, CommitOf(ga.segment, ga.grant_id, a_tail, tomb.size(), "a0",
                             /*tombstone=*/false));
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  a_tail += tomb.size();
  const std::string put = EncodeTestRecord(a.keyspace_id, "a2", "x");
  ASSERT_TRUE(ca.Write(ga.write_desc, a_tail - ga.start, put).ok());
  ack = Commit(&ca, CommitOf(ga.segment, ga.grant_id, a_tail, put.size(), "a2",
                             /*tombstone=*/true));
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  EXPECT_EQ(Keys(&ca), 4);
  ca.Disconnect();
  cb.Disconnect();
  ExpectPool({{"a0", "committed"},
              {"a1", "pending"},
              {"a2", std::nullopt},
              {"b0", "v"},
              {"b1", "new"}});
}

// 2. A returned segment is granted again from its tail. Catches:
// ClaimAppend's `offset < tail` check dropped (the second client commits
// the first one's refused record, which is below its start and still
// carries sequence 0), and a write registration that starts before the
// grant's start (GrantBytes / the registered length).
TEST_F(ServerGapsTest, ReturnedSegmentIsGrantedFromItsTailOnly) {
  StartServer();
  RawClient ca;
  protocol::Accept a;
  ConnectOk(&ca, "default", &a);
  const protocol::Grant ga = a.grant;
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&ca, a, ga, ga.start, "r0", "first", &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  uint64_t tail = ga.start + record_format::RecordSize(2, 5);
  // A record committed with the wrong op: refused, its range consumed,
  // its bytes left there unsealed (sequence 0).
  const std::string ghost = EncodeTestRecord(a.keyspace_id, "ghost", "boo");
  const uint64_t ghost_at = tail;
  ASSERT_TRUE(ca.Write(ga.write_desc, ghost_at - ga.start, ghost).ok());
  ack = Commit(&ca, CommitOf(ga.segment, ga.grant_id, ghost_at, ghost.size(),
                             "ghost", /*tombstone=*/true));
  ASSERT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  tail += ghost.size();
  ASSERT_TRUE(ca.SendMessage(protocol::Type::kBye, "").ok());
  EXPECT_TRUE(ca.WaitClosed());

  // The next grant is that segment (returned ones go first), from the
  // tail, its registration exactly [start, size).
  RawClient cb;
  protocol::Accept b;
  ConnectOk(&cb, "default", &b);
  const protocol::Grant gb = b.grant;
  ASSERT_EQ(gb.segment, ga.segment);
  ASSERT_EQ(gb.start, tail);
  ASSERT_GT(gb.start, 0u);
  EXPECT_EQ(protocol::Get64(gb.write_desc, 8), gb.size - gb.start)
      << "the write registration must cover [start, size) only";
  // Below the start, through B's own grant: refused.
  ack = Commit(&cb, CommitOf(gb.segment, gb.grant_id, ghost_at, ghost.size(),
                             "ghost", false));
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  ack = Commit(&cb, CommitOf(gb.segment, gb.grant_id, ga.start,
                             record_format::RecordSize(2, 5), "r0", false));
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  EXPECT_EQ(Keys(&cb), 1);
  // B's grant works from its start.
  ASSERT_TRUE(PutRaw(&cb, b, gb, gb.start, "b0", "second", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  // A write before the start (offset -64, wrapped) is out of the
  // registration (and may end the connection: the last thing done on it).
  const uint64_t minus64 = std::numeric_limits<uint64_t>::max() - 63;
  EXPECT_FALSE(cb.Write(gb.write_desc, minus64, std::string(64, 'X')).ok());
  cb.Disconnect();
  RawClient cc;
  protocol::Accept c;
  ConnectOk(&cc, "default", &c, 0, /*take_grant=*/false);
  EXPECT_EQ(Keys(&cc), 2);
  cc.Disconnect();
  ExpectPool({{"r0", "first"}, {"ghost", std::nullopt}, {"b0", "second"}});
}

// 3. A REFILL answered no_space keeps the old grant: a record that still
// fits there is accepted and readable. Catches: the held grant sealed (or
// dropped) before the new segment is known (AcquireSegment / HandleRefill's
// failure path).
TEST_F(ServerGapsTest, CommitIntoOldGrantAfterNoSpaceRefill) {
  StartServer({"--pool_size=16M", "--segment_size=64K"});
  RawClient c;
  Putter p{&c, {}, {}, 0};
  ConnectOk(&c, "default", &p.a);
  p.g = p.a.grant;
  p.tail = p.g.start;
  const std::string big(30000, 'b');
  const int stored = FillKeyspace(&p, big);
  ASSERT_FALSE(HasFailure());
  ASSERT_GT(stored, 10);
  // Putter refilled because `big` did not fit; the old grant has room for
  // a small record still.
  const std::string small = "fits";
  const uint64_t size = record_format::RecordSize(5, small.size());
  ASSERT_LE(p.tail + size, p.g.size);
  protocol::RefillAck rack;
  ASSERT_TRUE(RefillRetrying(&c, p.a, &rack).ok());
  ASSERT_EQ(rack.status, StatusCode::kNoSpace) << rack.message;
  EXPECT_EQ(rack.grant.grant_id, p.g.grant_id) << "the old grant stays";
  EXPECT_EQ(rack.grant.segment, p.g.segment);
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&c, p.a, p.g, p.tail, "small", small, &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_EQ(Keys(&c), stored + 1);
  c.Disconnect();
  std::map<std::string, std::optional<std::string>> want = {{"small", small}};
  for (int i = 0; i < stored; i++) want["k" + std::to_string(i)] = big;
  ExpectPool(want);
}

// The pool on disk (not tmpfs): each commit's msync takes long enough
// for COMMITs sent back to back to be still queued at a SIGTERM.
class ServerGapsDiskTest : public ServerGapsTest {
 protected:
  void SetUp() override { ServerTest::SetUp(); }
  void TearDown() override { ServerTest::TearDown(); }
};

// 4. SIGTERM with COMMITs still queued: every acknowledged commit is in
// the pool after the stop; an unacknowledged one is all there or not at
// all (Check() clean). Catches: a shutdown that acknowledges commits of a
// group whose commit point it then skips, or that applies half a commit.
TEST_F(ServerGapsDiskTest, ShutdownWithQueuedCommitsKeepsEveryAcknowledgedOne) {
  StartServer({"--group_commit=false"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  const protocol::Grant g = a.grant;
  // Fewer than the client's receive slots (so every ack has a buffer) and
  // than the server's --max_inflight (32).
  constexpr int kCommits = 14;
  std::vector<std::string> keys, values;
  std::vector<protocol::Commit> commits;
  uint64_t tail = g.start;
  for (int i = 0; i < kCommits; i++) {
    keys.push_back("q" + std::to_string(i));
    values.push_back(std::string(100 + 37 * i, static_cast<char>('a' + i)));
    const std::string rec =
        EncodeTestRecord(a.keyspace_id, keys.back(), values.back());
    ASSERT_TRUE(c.Write(g.write_desc, tail - g.start, rec).ok());
    commits.push_back(
        CommitOf(g.segment, g.grant_id, tail, rec.size(), keys.back(), false));
    tail += rec.size();
  }
  // All of them back to back, then SIGTERM at once: the server is still
  // persisting the first ones (one msync each, --group_commit=false).
  for (int i = 0; i < kCommits; i++) {
    ASSERT_TRUE(c.SendMessage(protocol::Type::kCommit,
                              CommitPayload(commits[i]), 100 + i)
                    .ok());
  }
  ASSERT_EQ(kill(server_.pid(), SIGTERM), 0);
  EXPECT_EQ(server_.Stop(), 0);
  // The acks that arrived before the connection went away.
  std::vector<bool> acked(kCommits, false);
  for (;;) {
    protocol::Header h;
    std::string payload;
    if (!c.ReceiveMessage(&h, &payload, milliseconds(500)).ok()) break;
    if (h.type != protocol::Type::kCommitAck) continue;
    protocol::CommitAck ack;
    ASSERT_TRUE(protocol::DecodeCommitAck(
                    reinterpret_cast<const uint8_t*>(payload.data()),
                    payload.size(), &ack)
                    .ok());
    const int i = static_cast<int>(h.request_id) - 100;
    ASSERT_TRUE(i >= 0 && i < kCommits) << h.request_id;
    EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
    acked[i] = ack.status == StatusCode::kOk;
  }
  int n_acked = 0;
  for (bool b : acked) n_acked += b;
  c.Abandon();
  store::PoolOptions ro;
  ro.read_only = true;
  auto pool = store::Pool::Open(pool_, ro);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  auto ks = (*pool)->GetKeyspace("default");
  ASSERT_TRUE(ks.ok());
  int n_present = 0;
  for (int i = 0; i < kCommits; i++) {
    std::string got;
    Status st = (*ks)->Get(keys[i], &got);
    if (acked[i]) {
      ASSERT_TRUE(st.ok()) << keys[i] << " acknowledged: " << st.ToString();
    } else {
      ASSERT_TRUE(st.ok() || st.IsNotFound()) << keys[i] << st.ToString();
    }
    if (st.ok()) EXPECT_EQ(got, values[i]) << keys[i];
    n_present += st.ok();
  }
  printf("acknowledged before the stop: %d of %d; in the pool: %d\n", n_acked,
         kCommits, n_present);
  store::CheckReport report = (*pool)->Check();
  EXPECT_TRUE(report.ok()) << report.problems.front();
  EXPECT_TRUE(report.notes.empty()) << "a clean stop leaves nothing to repair";
}

}  // namespace
}  // namespace kv::e2e
