// Server tests written for mutants of tests/mutation/ that no other test
// killed (server/README.md, "Mutation check"): each names its mutant.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

class ServerMutationGapsTest : public ServerTest {};

// Mutant 88: a REFILL among pipelined COMMITs that the session reaps in
// one batch must first bring the group to its commit point and send its
// acks: the REFILL seals the segment the commits are in. Each round
// writes 8 records, sends their COMMITs and a REFILL without waiting, and
// expects the 8 COMMIT_ACKs (ok) before the REFILL_ACK. (Correct code
// orders them always; the mutant shows whenever a batch holds both.)
TEST_F(ServerMutationGapsTest, RefillAmongPipelinedCommitsIsAnsweredLast) {
  StartServer({"--refill_rate=10000", "--refill_burst=1000"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  ASSERT_GT(a.grant.size, 0u);
  protocol::Grant g = a.grant;
  for (int round = 0; round < 20; round++) {
    uint64_t tail = g.start;
    PipelineCommitsThen(&c, a, g, &tail, round, protocol::Type::kRefill,
                        std::string(1, '\0'));
    if (HasFatalFailure()) return;
    std::string last;
    ExpectAcksThen(&c, round, protocol::Type::kRefillAck, &last);
    if (HasFatalFailure()) return;
    protocol::RefillAck ack;
    ASSERT_TRUE(
        protocol::DecodeRefillAck(reinterpret_cast<const uint8_t*>(last.data()),
                                  last.size(), a.segment_size, &ack)
            .ok());
    ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
    g = ack.grant;
  }
}

// Mutant 87: a REFILL refused busy leaves the connection its grant, and
// the REFILL_ACK says which (the client keeps writing there).
TEST_F(ServerMutationGapsTest, BusyRefillAckCarriesTheGrantThatStays) {
  StartServer({"--refill_rate=1", "--refill_burst=1"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);  // takes the one token
  ASSERT_GT(a.grant.size, 0u);
  protocol::RefillAck ack;
  ASSERT_TRUE(Refill(&c, a, &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kBusy) << ack.message;
  EXPECT_EQ(ack.grant.segment, a.grant.segment);
  EXPECT_EQ(ack.grant.grant_id, a.grant.grant_id);
  EXPECT_EQ(ack.grant.start, a.grant.start);
  EXPECT_EQ(ack.grant.size, a.grant.size);
  // And it is still this connection's grant: a put through it commits.
  protocol::CommitAck cack;
  ASSERT_TRUE(
      PutRaw(&c, a, ack.grant, ack.grant.start, "key", "value", &cack).ok());
  EXPECT_EQ(cack.status, StatusCode::kOk) << cack.message;
}

// Mutant 127: every message restarts --idle_timeout_ms; a connection that
// pings every 200 ms outlives two timeouts (2500 ms each: the margin is
// 12x, so a slow host — TSan on a loaded 2-core VM once stalled this
// client for over 1.3 s — does not end it).
TEST_F(ServerMutationGapsTest, MessagesKeepAConnectionFromTheIdleTimeout) {
  StartServer({"--idle_timeout_ms=2500"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  const std::string ping(1, static_cast<char>(protocol::InfoTopic::kPing));
  for (int i = 0; i < 30; i++) {  // 6 s
    usleep(200000);
    ASSERT_TRUE(c.SendMessage(protocol::Type::kInfo, ping, 50).ok()) << i;
    protocol::Header h;
    std::string payload;
    ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok()) << i;
    ASSERT_EQ(h.type, protocol::Type::kInfoAck)
        << "ping " << i << ": " << payload.substr(1);
  }
}

// Mutant 108: a connection whose first REFILL fails (the keyspace is full)
// holds no place in the keyspace's grant share (--grant_share_percent):
// more such connections than the share all hear no_space, never busy.
TEST_F(ServerMutationGapsTest, FailedFirstRefillsTakeNoShare) {
  StartServer({"--pool_size=16M", "--segment_size=64K",
               "--grant_share_percent=5", "--refill_rate=1000",
               "--refill_burst=100"});
  RawClient c;
  Putter p{&c, {}, {}, 0};
  ConnectOk(&c, "default", &p.a);
  p.g = p.a.grant;
  p.tail = p.g.start;
  const std::string big(30000, 'b');
  Status st;
  for (int i = 0; i < 5000 && st.ok(); i++) {
    st = p.Put("k" + std::to_string(i), big, i);
  }
  ASSERT_EQ(st.code(), StatusCode::kNoSpace) << st.ToString();
  // The share is 5% of the keyspace's segments (a few); 30 connections
  // without a grant ask for one, each kept open.
  std::vector<std::unique_ptr<RawClient>> readers;
  for (int i = 0; i < 30; i++) {
    readers.push_back(std::make_unique<RawClient>());
    protocol::Accept ra;
    ConnectOk(readers.back().get(), "default", &ra, 0, /*take_grant=*/false);
    protocol::RefillAck ack;
    ASSERT_TRUE(Refill(readers.back().get(), ra, &ack).ok());
    EXPECT_EQ(ack.status, StatusCode::kNoSpace)
        << "connection " << i << ": " << ack.message;
  }
}

// Mutant 111: the write floor is the committed record's end, exactly: its
// last byte is out of its writer's reach, the next byte is not.
TEST_F(ServerMutationGapsTest, WriteFloorIsTheCommittedRecordsEnd) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  ASSERT_GT(a.grant.size, 0u);
  protocol::CommitAck ack;
  ASSERT_TRUE(
      PutRaw(&c, a, a.grant, a.grant.start, "k", "committed", &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  const uint64_t end = ack.length;  // grant-relative: the record's end
  EXPECT_TRUE(c.Write(a.grant.write_desc, end, "Z").ok())
      << "the byte after the committed record is not writable";
  Status st = c.Write(a.grant.write_desc, end - 1, "Z");
  EXPECT_FALSE(st.ok()) << "the committed record's last byte was rewritten";
  if (!st.ok()) {
    EXPECT_NE(st.message().find("access"), std::string::npos) << st.ToString();
  }
  // A fresh connection reads the record as committed.
  RawClient d;
  protocol::Accept da;
  ConnectOk(&d, "default", &da, 0, /*take_grant=*/false);
  std::string rec;
  ASSERT_TRUE(
      d.Read(da.read_desc, da.log_offset + ack.log_offset, ack.length, &rec)
          .ok());
  record_format::RecordView view;
  ASSERT_TRUE(
      record_format::VerifyRecord(rec.data(), rec.size(), da.keyspace_id, &view)
          .ok());
  EXPECT_EQ(view.value, "committed");
}

// Mutant 99: a keyspace listed in --access_keys is refused for a missing
// or wrong key whether it exists or not: a refusal does not tell which
// protected names exist.
TEST_F(ServerMutationGapsTest, ProtectedNamesAreRefusedAlikeExistingOrNot) {
  const std::string keys = dir_ + "/keys";
  {
    FILE* f = fopen(keys.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("default s3cret-0123456789\nghost s3cret-9876543210\n", f);
    fclose(f);
    chmod(keys.c_str(), 0600);
  }
  StartServer({"--access_keys=" + keys, "--auth_delay_ms=0"});
  auto hello = [&](const std::string& name, const std::string& key) {
    RawClient c;
    protocol::Accept a =
        ConnectRaw(&c, ConnectPdata("", protocol::kConnectHello));
    EXPECT_EQ(a.admit, protocol::Admit::kHelloRequired) << a.reason;
    EXPECT_TRUE(
        c.SendMessage(protocol::Type::kHello, HelloPayload(name, key), 3).ok());
    protocol::Header h;
    std::string payload;
    protocol::Accept w;
    EXPECT_TRUE(c.ReceiveMessage(&h, &payload).ok());
    EXPECT_TRUE(
        protocol::DecodeAccept(payload.data(), payload.size(), &w).ok());
    return w;
  };
  for (const std::string name : {"default", "ghost"}) {
    protocol::Accept w = hello(name, "");
    EXPECT_EQ(w.admit, protocol::Admit::kAccessDenied)
        << name << ": " << w.reason;
    w = hello(name, "wrong-key-0123456789");
    EXPECT_EQ(w.admit, protocol::Admit::kAccessDenied)
        << name << ": " << w.reason;
    EXPECT_NE(w.reason.find("wrong access key"), std::string::npos) << w.reason;
    RawClient c;
    protocol::Accept a = ConnectRaw(&c, ConnectPdata(name));
    EXPECT_EQ(a.admit, protocol::Admit::kAccessDenied)
        << name << ": " << a.reason;
  }
  // An unlisted missing keyspace is simply unknown.
  RawClient c;
  EXPECT_EQ(ConnectRaw(&c, ConnectPdata("nowhere")).admit,
            protocol::Admit::kUnknownKeyspace);
}

// Mutant 140: only COMMITs that succeed make a grant "used up" (whose
// REFILL is free of --refill_rate); a refused one naming the grant's end
// does not, or one bogus COMMIT per REFILL would make every REFILL free.
TEST_F(ServerMutationGapsTest, RefusedCommitsDoNotMakeRefillsFree) {
  StartServer({"--refill_rate=1", "--refill_burst=2"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);  // one of the two tokens
  ASSERT_GT(a.grant.size, 0u);
  protocol::Grant g = a.grant;
  int busy = 0;
  for (int round = 0; round < 10; round++) {
    // Nothing was written there: the record does not verify.
    protocol::Commit cm;
    cm.segment = g.segment;
    cm.grant_id = g.grant_id;
    cm.offset = g.size - 64;
    cm.length = 64;
    cm.key_hash = 1;
    ASSERT_TRUE(
        c.SendMessage(protocol::Type::kCommit, CommitPayload(cm), 40).ok());
    protocol::Header h;
    std::string payload;
    ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok());
    ASSERT_EQ(h.type, protocol::Type::kCommitAck);
    protocol::CommitAck ack;
    ASSERT_TRUE(protocol::DecodeCommitAck(
                    reinterpret_cast<const uint8_t*>(payload.data()),
                    payload.size(), &ack)
                    .ok());
    ASSERT_NE(ack.status, StatusCode::kOk) << "a bogus COMMIT was accepted";
    protocol::RefillAck rack;
    ASSERT_TRUE(Refill(&c, a, &rack).ok());
    if (rack.status == StatusCode::kBusy) {
      busy++;
    } else {
      ASSERT_EQ(rack.status, StatusCode::kOk) << rack.message;
      g = rack.grant;
    }
  }
  // Ten REFILLs in well under ten seconds with one token left: most are
  // busy.
  EXPECT_GT(busy, 0) << "every REFILL after a refused COMMIT was free";
}

}  // namespace
}  // namespace kv::e2e
