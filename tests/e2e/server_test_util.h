// Shared fixture of the server-side end-to-end tests: a kvserver on a
// fresh pool in a temporary directory, raw clients, and helpers that put
// a record through the raw protocol (write + COMMIT).
#ifndef KV_TESTS_E2E_SERVER_TEST_UTIL_H_
#define KV_TESTS_E2E_SERVER_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "kv/protocol.h"
#include "kv/record_format.h"
#include "raw_client.h"
#include "server_process.h"

namespace kv::e2e {

// A record as a client writes it (sequence 0), `rec` bytes for a COMMIT.
inline std::string EncodeTestRecord(uint32_t keyspace_id, std::string_view key,
                                    std::string_view value,
                                    bool tombstone = false);

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("kv_server_test");
    ASSERT_FALSE(dir_.empty());
    pool_ = dir_ + "/pool";
  }
  void TearDown() override {
    if (server_.running()) server_.Stop();
    if (HasFailure()) {
      fprintf(stderr, "---- kvserver stderr ----\n%s\n",
              server_.StderrText().c_str());
    }
    RemoveTree(dir_);
  }
  // Starts kvserver on pool_ (64 MiB, 1 MiB segments) plus `extra` flags.
  void StartServer(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = {"--pool=" + pool_, "--pool_size=64M",
                                      "--segment_size=1M",
                                      "--index_capacity=4096"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    Status st = server_.Start(flags);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  // Connects `c` to keyspace `name`, expecting ok; fills *a. The accept
  // carries no grant (grants are lazy); with `take_grant` a REFILL takes
  // one and puts it in a->grant (left empty when the REFILL fails, e.g.
  // no_space).
  void ConnectOk(RawClient* c, const std::string& name, protocol::Accept* a,
                 uint8_t flags = 0, bool take_grant = true) {
    Status st = c->ConnectTo(server_.host(), server_.port(), name, flags);
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = c->accept(a);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(a->admit, protocol::Admit::kOk) << a->reason;
    ASSERT_EQ(a->grant.size, 0u) << "the accept carries no grant";
    if (take_grant) {
      protocol::RefillAck ack;
      st = Refill(c, *a, &ack);
      ASSERT_TRUE(st.ok()) << st.ToString();
      if (ack.status == StatusCode::kOk) a->grant = ack.grant;
    }
  }
  // Refill, sent again while the answer is busy (the per-connection rate
  // limit); at most ~5 s.
  static Status RefillRetrying(RawClient* c, const protocol::Accept& a,
                               protocol::RefillAck* ack, uint8_t flags = 0) {
    for (int attempt = 0;; attempt++) {
      KV_RETURN_IF_ERROR(Refill(c, a, ack, flags));
      if (ack->status != StatusCode::kBusy || attempt >= 250)
        return Status::Ok();
      usleep(20000);
    }
  }
  // Sends REFILL (`flags`: kRefillForDelete) and decodes the REFILL_ACK.
  static Status Refill(RawClient* c, const protocol::Accept& a,
                       protocol::RefillAck* ack, uint8_t flags = 0,
                       uint32_t request_id = 0x7fff0001) {
    KV_RETURN_IF_ERROR(c->SendMessage(
        protocol::Type::kRefill,
        std::string_view(reinterpret_cast<const char*>(&flags), 1),
        request_id));
    protocol::Header h;
    std::string payload;
    KV_RETURN_IF_ERROR(c->ReceiveMessage(&h, &payload));
    if (h.type != protocol::Type::kRefillAck || h.request_id != request_id) {
      return Status::Corruption("expected REFILL_ACK, got type " +
                                std::to_string(static_cast<int>(h.type)));
    }
    return protocol::DecodeRefillAck(
        reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
        a.segment_size, ack);
  }
  // Connects with raw pdata and returns the decoded accept (a refusal
  // expected: the connection then closes).
  protocol::Accept ConnectRaw(RawClient* c, std::optional<std::string> pdata) {
    protocol::Accept a;
    Status st = c->Connect(server_.host(), server_.port(), std::move(pdata));
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return a;
    st = c->accept(&a);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return a;
  }

  // Sends INFO `topic` and returns its text (the test fails on a transport
  // error or a reply that is not an ok INFO_ACK).
  static std::string Info(RawClient* c, protocol::InfoTopic topic) {
    std::string payload(1, static_cast<char>(topic));
    EXPECT_TRUE(c->SendMessage(protocol::Type::kInfo, payload, 5).ok());
    protocol::Header h;
    std::string reply;
    EXPECT_TRUE(c->ReceiveMessage(&h, &reply).ok());
    EXPECT_EQ(h.type, protocol::Type::kInfoAck);
    EXPECT_EQ(h.request_id, 5u);
    StatusCode code = StatusCode::kOk;
    std::string text;
    EXPECT_TRUE(protocol::DecodeStatusText(
                    reinterpret_cast<const uint8_t*>(reply.data()),
                    reply.size(), &code, &text)
                    .ok());
    EXPECT_EQ(code, StatusCode::kOk);
    return text;
  }
  // The value of `name` in INFO stats text, or -1.
  static long long StatValue(const std::string& text, const std::string& name) {
    size_t at = text.find(name + " ");
    if (at == std::string::npos || (at != 0 && text[at - 1] != '\n')) {
      return -1;
    }
    return atoll(text.c_str() + at + name.size() + 1);
  }
  // Sends a COMMIT and returns its ack (status unavailable on a transport
  // failure, which also fails the test).
  static protocol::CommitAck Commit(RawClient* c, const protocol::Commit& cm,
                                    uint32_t id = 9) {
    protocol::CommitAck ack;
    ack.status = StatusCode::kUnavailable;
    EXPECT_TRUE(
        c->SendMessage(protocol::Type::kCommit, CommitPayload(cm), id).ok());
    protocol::Header h;
    std::string payload;
    Status st = c->ReceiveMessage(&h, &payload);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return ack;
    EXPECT_EQ(h.type, protocol::Type::kCommitAck);
    EXPECT_TRUE(protocol::DecodeCommitAck(
                    reinterpret_cast<const uint8_t*>(payload.data()),
                    payload.size(), &ack)
                    .ok());
    return ack;
  }
  // A HELLO-flow connect plus HELLO; returns the WELCOME's accept (not
  // reconnected with its ticket).
  protocol::Accept SendHello(RawClient* c, const std::string& name,
                             const std::string& key, uint8_t flags = 0) {
    protocol::Accept a =
        ConnectRaw(c, ConnectPdata("", protocol::kConnectHello));
    EXPECT_EQ(a.admit, protocol::Admit::kHelloRequired) << a.reason;
    EXPECT_GT(a.max_inflight, 0);
    EXPECT_TRUE(c->SendMessage(protocol::Type::kHello,
                               HelloPayload(name, key, flags), 3)
                    .ok());
    protocol::Header h;
    std::string payload;
    protocol::Accept w;
    Status st = c->ReceiveMessage(&h, &payload);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return w;
    EXPECT_EQ(h.type, protocol::Type::kWelcome);
    st = protocol::DecodeAccept(payload.data(), payload.size(), &w);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return w;
  }
  // After a WELCOME that said reconnect (HELLO admitted): connects `c`
  // again with the WELCOME's ticket and returns that connection's accept.
  static constexpr int kPipelinedCommits = 8;
  // Writes kPipelinedCommits records into g from *tail on and sends their
  // COMMITs (request ids 100...) without waiting, then one message of
  // `type`/`payload` (id 99).
  void PipelineCommitsThen(RawClient* c, const protocol::Accept& a,
                           const protocol::Grant& g, uint64_t* tail_io,
                           int round, protocol::Type type,
                           const std::string& payload) {
    uint64_t tail = *tail_io;
    for (int i = 0; i < kPipelinedCommits; i++) {
      const std::string key =
          "k" + std::to_string(round) + "." + std::to_string(i);
      std::string rec = EncodeTestRecord(a.keyspace_id, key, "value");
      ASSERT_TRUE(c->Write(g.write_desc, tail - g.start, rec).ok());
      protocol::Commit cm;
      cm.segment = g.segment;
      cm.grant_id = g.grant_id;
      cm.offset = tail;
      cm.length = static_cast<uint32_t>(rec.size());
      cm.key_hash = index_format::HashKey(key);
      ASSERT_TRUE(c->SendMessage(protocol::Type::kCommit, CommitPayload(cm),
                                 static_cast<uint32_t>(100 + i))
                      .ok());
      tail += rec.size();
    }
    *tail_io = tail;
    ASSERT_TRUE(c->SendMessage(type, payload, 99).ok());
  }

  // The kPipelinedCommits COMMIT_ACKs (ok, in order), then the reply to id 99,
  // whose payload goes to *last.
  void ExpectAcksThen(RawClient* c, int round, protocol::Type last_type,
                      std::string* last) {
    for (int i = 0; i <= kPipelinedCommits; i++) {
      protocol::Header h;
      std::string payload;
      ASSERT_TRUE(c->ReceiveMessage(&h, &payload).ok()) << round << "." << i;
      if (i < kPipelinedCommits) {
        ASSERT_EQ(h.type, protocol::Type::kCommitAck)
            << "round " << round << ": reply " << i
            << " is not a COMMIT_ACK: a later message overtook the commits";
        EXPECT_EQ(h.request_id, static_cast<uint32_t>(100 + i));
        protocol::CommitAck ack;
        ASSERT_TRUE(protocol::DecodeCommitAck(
                        reinterpret_cast<const uint8_t*>(payload.data()),
                        payload.size(), &ack)
                        .ok());
        EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
      } else {
        ASSERT_EQ(h.type, last_type);
        EXPECT_EQ(h.request_id, 99u);
        *last = payload;
      }
    }
  }

  protocol::Accept Reconnect(RawClient* c, const protocol::Accept& welcome) {
    EXPECT_EQ(welcome.admit, protocol::Admit::kReconnect) << welcome.reason;
    c->Disconnect();
    return ConnectRaw(
        c,
        ConnectPdata(std::string(reinterpret_cast<const char*>(welcome.ticket),
                                 protocol::kTicketSize),
                     protocol::kConnectTicket));
  }

  std::string dir_;
  std::string pool_;
  ServerProcess server_;
};

// A record (sequence 0) as a client writes it.
inline std::string EncodeTestRecord(uint32_t keyspace_id, std::string_view key,
                                    std::string_view value, bool tombstone) {
  std::string rec(record_format::RecordSize(key.size(), value.size()), '\0');
  record_format::EncodeRecord(rec.data(), keyspace_id, 0, tombstone, key,
                              value);
  return rec;
}

// Writes a record at segment offset `offset` of the grant in `a` and
// commits it; returns the decoded COMMIT_ACK (status in ack->status).
// Transport failures are returned as the Status.
inline Status PutRaw(RawClient* c, const protocol::Accept& a,
                     const protocol::Grant& g, uint64_t offset,
                     std::string_view key, std::string_view value,
                     protocol::CommitAck* ack, bool tombstone = false,
                     uint32_t request_id = 7) {
  std::string rec = EncodeTestRecord(a.keyspace_id, key, value, tombstone);
  KV_RETURN_IF_ERROR(c->Write(g.write_desc, offset - g.start, rec));
  protocol::Commit cm;
  cm.op = tombstone ? 1 : 0;
  cm.segment = g.segment;
  cm.grant_id = g.grant_id;
  cm.offset = offset;
  cm.length = static_cast<uint32_t>(rec.size());
  cm.key_hash = index_format::HashKey(key);
  KV_RETURN_IF_ERROR(
      c->SendMessage(protocol::Type::kCommit, CommitPayload(cm), request_id));
  protocol::Header h;
  std::string payload;
  KV_RETURN_IF_ERROR(c->ReceiveMessage(&h, &payload));
  if (h.type != protocol::Type::kCommitAck) {
    return Status::Corruption("expected COMMIT_ACK, got type " +
                              std::to_string(static_cast<int>(h.type)));
  }
  if (h.request_id != request_id) return Status::Corruption("request id");
  return protocol::DecodeCommitAck(
      reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), ack);
}

// Puts key=value through the raw protocol, refilling when the grant is
// full.
struct Putter {
  RawClient* c;
  protocol::Accept a;
  protocol::Grant g;
  uint64_t tail;
  int busy_refills = 0;  // REFILLs answered busy and sent again
  Status Put(const std::string& key, const std::string& value, uint32_t id) {
    const uint64_t size = record_format::RecordSize(key.size(), value.size());
    if (tail + size > g.size) {
      protocol::RefillAck ack;
      // A busy REFILL (the server's per-connection rate limit) is sent
      // again after a pause, as the client library does; bounded.
      for (int attempt = 0;; attempt++) {
        KV_RETURN_IF_ERROR(c->SendMessage(protocol::Type::kRefill, "", id));
        protocol::Header h;
        std::string payload;
        KV_RETURN_IF_ERROR(c->ReceiveMessage(&h, &payload));
        KV_RETURN_IF_ERROR(protocol::DecodeRefillAck(
            reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
            a.segment_size, &ack));
        if (ack.status != StatusCode::kBusy || attempt >= 200) break;
        busy_refills++;
        usleep(20000);
      }
      if (ack.status != StatusCode::kOk) {
        return Status(ack.status, "refill: " + ack.message);
      }
      g = ack.grant;
      tail = g.start;
    }
    protocol::CommitAck ack;
    KV_RETURN_IF_ERROR(PutRaw(c, a, g, tail, key, value, &ack, false, id));
    if (ack.status != StatusCode::kOk) return Status(ack.status, ack.message);
    tail += size;
    return Status::Ok();
  }
};

// Puts `value` under fresh keys through `p` until the keyspace says
// no_space; returns how many were stored (the test fails if it never
// fills, or on another error).
inline int FillKeyspace(Putter* p, const std::string& value) {
  int stored = 0;
  Status st;
  for (; stored < 5000; stored++) {
    st = p->Put("k" + std::to_string(stored), value, stored);
    if (!st.ok()) break;
  }
  EXPECT_EQ(st.code(), StatusCode::kNoSpace) << st.ToString();
  return stored;
}

// For tests with hundreds of commits: the pool in memory (tmpfs) when
// there is one, so that each commit's msync is cheap.
class InMemoryServerTest : public ServerTest {
 protected:
  void SetUp() override {
    const char* old = getenv("TMPDIR");
    old_tmpdir_ = old != nullptr ? old : "";
    if (access("/dev/shm", W_OK) == 0) setenv("TMPDIR", "/dev/shm", 1);
    ServerTest::SetUp();
  }
  void TearDown() override {
    ServerTest::TearDown();
    if (old_tmpdir_.empty()) {
      unsetenv("TMPDIR");
    } else {
      setenv("TMPDIR", old_tmpdir_.c_str(), 1);
    }
  }
  std::string old_tmpdir_;
};

}  // namespace kv::e2e

#endif  // KV_TESTS_E2E_SERVER_TEST_UTIL_H_
