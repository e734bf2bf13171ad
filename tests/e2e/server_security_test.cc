// kvserver under attack through the memory registrations: forged
// descriptors, rkeys and offsets get a remote access error, change no byte
// of the pool, and the server keeps serving.
#include <fstream>
#include <sstream>
#include <vector>

#include "kv/store/pool.h"
#include "server_test_util.h"

namespace kv::e2e {
namespace {

using protocol::Admit;

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Descriptor fields (rpma/README.md): addr u64, len u64, rkey u32, usage u8.
struct Desc {
  uint8_t bytes[protocol::kDescriptorSize];
  explicit Desc(const uint8_t* d) { std::memcpy(bytes, d, sizeof(bytes)); }
  uint64_t addr() const { return protocol::Get64(bytes, 0); }
  uint64_t len() const { return protocol::Get64(bytes, 8); }
  uint32_t rkey() const { return protocol::Get32(bytes, 16); }
  Desc& set_addr(uint64_t v) {
    protocol::Put64(bytes, 0, v);
    return *this;
  }
  Desc& set_len(uint64_t v) {
    protocol::Put64(bytes, 8, v);
    return *this;
  }
  Desc& set_rkey(uint32_t v) {
    protocol::Put32(bytes, 16, v);
    return *this;
  }
};

class ServerSecurityTest : public ServerTest {
 protected:
  // Where keyspace regions start: everything from there on is index and
  // log (the superblock and catalog before it change on every open).
  uint64_t DataStart() {
    store::PoolOptions o;
    o.read_only = true;
    auto pool = store::Pool::Open(pool_, o);
    EXPECT_TRUE(pool.ok()) << pool.status().ToString();
    if (!pool.ok()) return 0;
    uint64_t start = ~uint64_t{0};
    for (const auto& k : (*pool)->ListKeyspaces()) {
      start = std::min(start, k.region_offset);
    }
    return start;
  }
  // A fresh client of `name`; the attack runs on it and must fail.
  template <typename Attack>
  void ExpectRefusedAccess(const char* what, Attack attack,
                           const std::string& name = "default") {
    RawClient c;
    protocol::Accept a;
    ConnectOk(&c, name, &a);
    Status st = attack(&c, a);
    EXPECT_FALSE(st.ok()) << what << " succeeded";
    if (!st.ok()) {
      EXPECT_NE(st.message().find("access"), std::string::npos)
          << what << ": " << st.ToString();
    }
    ExpectServing();
  }
  // Another client still commits... without changing the pool: a ping.
  void ExpectServing() {
    RawClient ok;
    protocol::Accept a;
    ConnectOk(&ok, "default", &a);
    std::string payload(1, static_cast<char>(protocol::InfoTopic::kPing));
    ASSERT_TRUE(ok.SendMessage(protocol::Type::kInfo, payload).ok());
    protocol::Header h;
    std::string reply;
    ASSERT_TRUE(ok.ReceiveMessage(&h, &reply).ok());
    EXPECT_EQ(h.type, protocol::Type::kInfoAck);
  }
};

TEST_F(ServerSecurityTest, ForgedAccessGetsRemoteAccessErrorAndChangesNoByte) {
  // The cleaner off: it may move a record, and this test compares bytes.
  StartServer({"--allow_create", "--cleaner_threshold=1"});
  // Some committed data, and a returned segment (so a later grant starts
  // after committed records: the bytes before it must stay out of reach).
  {
    RawClient c;
    protocol::Accept a;
    ConnectOk(&c, "default", &a);
    protocol::CommitAck ack;
    ASSERT_TRUE(
        PutRaw(&c, a, a.grant, a.grant.start, "key", "value", &ack).ok());
    ASSERT_EQ(ack.status, StatusCode::kOk);
    ASSERT_TRUE(c.SendMessage(protocol::Type::kBye, "").ok());
    EXPECT_TRUE(c.WaitClosed());
  }
  RawClient other_ks;
  protocol::Accept b;
  ConnectOk(&other_ks, "other", &b, protocol::kConnectCreate);
  other_ks.Disconnect();
  // Commits are durable (persisted) when acknowledged: the file has them.
  const std::string before = ReadWholeFile(pool_);

  const std::string junk(64, 'X');
  {
    // The next grant is the returned segment (returned ones go first): it
    // starts after the committed record, which must stay out of reach.
    std::vector<std::unique_ptr<RawClient>> held;
    protocol::Accept a;
    for (int i = 0; i < 40; i++) {
      held.push_back(std::make_unique<RawClient>());
      ConnectOk(held.back().get(), "default", &a);
      if (a.grant.start > 0) break;
    }
    ASSERT_GT(a.grant.start, 0u) << "no grant of a returned segment";
    Desc d(a.grant.write_desc);
    d.set_addr(d.addr() - 64).set_len(d.len() + 64);
    Status st = held.back()->Write(d.bytes, 0, junk);
    EXPECT_FALSE(st.ok()) << "write before the grant succeeded";
    ExpectServing();
  }
  ExpectRefusedAccess("write past the grant", [&](RawClient* c, auto& a) {
    return c->Write(a.grant.write_desc, a.grant.size - a.grant.start, junk);
  });
  ExpectRefusedAccess(
      "write straddling the grant end", [&](RawClient* c, auto& a) {
        return c->Write(a.grant.write_desc, a.grant.size - a.grant.start - 32,
                        junk);
      });
  ExpectRefusedAccess("write through the read region",
                      [&](RawClient* c, auto& a) {
                        return c->Write(a.read_desc, a.log_offset, junk);
                      });
  ExpectRefusedAccess("write with a forged rkey", [&](RawClient* c, auto& a) {
    Desc d(a.grant.write_desc);
    d.set_rkey(d.rkey() ^ 0x00a50000u);
    return c->Write(d.bytes, 0, junk);
  });
  ExpectRefusedAccess("write with a forged rkey and length",
                      [&](RawClient* c, auto& a) {
                        Desc d(a.read_desc);
                        d.set_rkey(d.rkey() ^ 0x5a000000u).set_len(1ull << 40);
                        return c->Write(d.bytes, 0, junk);
                      });
  ExpectRefusedAccess(
      "read past the keyspace region", [&](RawClient* c, auto& a) {
        std::string out;
        return c->Read(a.read_desc, Desc(a.read_desc).len(), 64, &out);
      });
  ExpectRefusedAccess("read with a forged length", [&](RawClient* c, auto& a) {
    Desc d(a.read_desc);
    d.set_len(d.len() + (64ull << 20));
    std::string out;
    return c->Read(d.bytes, Desc(a.read_desc).len(), 4096, &out);
  });
  ExpectRefusedAccess("read through the write region",
                      [&](RawClient* c, auto& a) {
                        std::string out;
                        return c->Read(a.grant.write_desc, 0, 64, &out);
                      });
  ExpectRefusedAccess("read keyspace 'other' through default's rkey",
                      [&](RawClient* c, auto& a) {
                        Desc d(a.read_desc);
                        Desc theirs(b.read_desc);
                        d.set_addr(theirs.addr()).set_len(theirs.len());
                        std::string out;
                        return c->Read(d.bytes, 0, 64, &out);
                      });
  ExpectRefusedAccess(
      "read keyspace default from a client of 'other'",
      [&](RawClient* c, auto& a) {
        RawClient d;
        protocol::Accept da;
        ConnectOk(&d, "default", &da);
        Desc mine(a.read_desc);
        Desc theirs(da.read_desc);
        mine.set_addr(theirs.addr()).set_len(theirs.len());
        std::string out;
        return c->Read(mine.bytes, 0, 64, &out);
      },
      "other");

  EXPECT_EQ(server_.Stop(), 0);
  const std::string after = ReadWholeFile(pool_);
  const uint64_t data = DataStart();
  ASSERT_GT(data, 0u);
  ASSERT_EQ(before.size(), after.size());
  // The server's own commit log checkpoint (docs/format.md "Commit log":
  // bytes [16, 80) of each region's header page) moves at every grant and
  // at the clean close; nothing a client sends reaches it.
  std::vector<uint64_t> checkpoints;
  {
    store::PoolOptions o;
    o.read_only = true;
    auto pool = store::Pool::Open(pool_, o);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    for (const auto& k : (*pool)->ListKeyspaces()) {
      if (k.commit_log_entries != 0) checkpoints.push_back(k.region_offset);
    }
  }
  auto server_owned = [&](size_t i) {
    for (uint64_t r : checkpoints) {
      if (i >= r + 16 && i < r + 80) return true;
    }
    return false;
  };
  size_t first_diff = before.size();
  for (size_t i = data; i < before.size(); i++) {
    if (before[i] != after[i] && !server_owned(i)) {
      first_diff = i;
      break;
    }
  }
  EXPECT_EQ(first_diff, before.size())
      << "pool byte " << first_diff << " changed";
  // And the committed key is intact.
  store::PoolOptions ro;
  ro.read_only = true;
  auto pool = store::Pool::Open(pool_, ro);
  ASSERT_TRUE(pool.ok());
  auto ks = (*pool)->GetKeyspace("default");
  ASSERT_TRUE(ks.ok());
  std::string value;
  ASSERT_TRUE((*ks)->Get("key", &value).ok());
  EXPECT_EQ(value, "value");
}

TEST_F(ServerSecurityTest, RefilledGrantIsNoLongerWritable) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  ASSERT_TRUE(c.SendMessage(protocol::Type::kRefill, "", 9).ok());
  protocol::Header h;
  std::string payload;
  ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok());
  ASSERT_EQ(h.type, protocol::Type::kRefillAck);
  protocol::RefillAck ack;
  ASSERT_TRUE(protocol::DecodeRefillAck(
                  reinterpret_cast<const uint8_t*>(payload.data()),
                  payload.size(), a.segment_size, &ack)
                  .ok());
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_NE(ack.grant.grant_id, a.grant.grant_id);
  // The new grant takes records; the old registration is gone.
  protocol::CommitAck cack;
  ASSERT_TRUE(PutRaw(&c, a, ack.grant, ack.grant.start, "k", "v", &cack).ok());
  EXPECT_EQ(cack.status, StatusCode::kOk) << cack.message;
  Status st = c.Write(a.grant.write_desc, 0, std::string(64, 'X'));
  EXPECT_FALSE(st.ok());
}

TEST_F(ServerSecurityTest, CommitOutsideTheGrantIsRefusedNotApplied) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  // Another grant's id.
  protocol::Grant forged = a.grant;
  forged.grant_id ^= 1;
  protocol::CommitAck ack;
  // PutRaw writes through the real descriptor, commits naming `forged`.
  ASSERT_TRUE(PutRaw(&c, a, forged, a.grant.start, "k", "v", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument);
  // An offset beyond the segment.
  protocol::Commit cm;
  cm.segment = a.grant.segment;
  cm.grant_id = a.grant.grant_id;
  cm.offset = a.grant.size;
  cm.length = 64;
  ASSERT_TRUE(
      c.SendMessage(protocol::Type::kCommit, CommitPayload(cm), 11).ok());
  protocol::Header h;
  std::string payload;
  ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok());
  ASSERT_TRUE(protocol::DecodeCommitAck(
                  reinterpret_cast<const uint8_t*>(payload.data()),
                  payload.size(), &ack)
                  .ok());
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument);
  // A record carrying a sequence of its own choosing is refused.
  std::string rec = EncodeTestRecord(a.keyspace_id, "pin", "x");
  std::string pinned(rec.size(), '\0');
  record_format::EncodeRecord(pinned.data(), a.keyspace_id, ~uint64_t{0}, false,
                              "pin", "x");
  ASSERT_TRUE(c.Write(a.grant.write_desc, 0, pinned).ok());
  cm.offset = a.grant.start;
  cm.length = static_cast<uint32_t>(pinned.size());
  cm.key_hash = index_format::HashKey("pin");
  ASSERT_TRUE(
      c.SendMessage(protocol::Type::kCommit, CommitPayload(cm), 12).ok());
  ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok());
  ASSERT_TRUE(protocol::DecodeCommitAck(
                  reinterpret_cast<const uint8_t*>(payload.data()),
                  payload.size(), &ack)
                  .ok());
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  // The op must match the record: a put's record committed as a delete.
  {
    std::string rec2 = EncodeTestRecord(a.keyspace_id, "op", "x");
    const uint64_t at = a.grant.start + pinned.size();
    ASSERT_TRUE(c.Write(a.grant.write_desc, at - a.grant.start, rec2).ok());
    protocol::Commit del;
    del.op = 1;
    del.segment = a.grant.segment;
    del.grant_id = a.grant.grant_id;
    del.offset = at;
    del.length = static_cast<uint32_t>(rec2.size());
    del.key_hash = index_format::HashKey("op");
    ASSERT_TRUE(
        c.SendMessage(protocol::Type::kCommit, CommitPayload(del), 13).ok());
    ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok());
    ASSERT_TRUE(protocol::DecodeCommitAck(
                    reinterpret_cast<const uint8_t*>(payload.data()),
                    payload.size(), &ack)
                    .ok());
    EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  }
  // The connection still works: a proper put after that (past the refused
  // record: a claimed range is not handed out twice).
  ASSERT_TRUE(
      PutRaw(&c, a, a.grant,
             a.grant.start + pinned.size() + record_format::RecordSize(2, 1),
             "k", "v", &ack)
          .ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
}

}  // namespace
}  // namespace kv::e2e
