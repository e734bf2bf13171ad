// kvserver keyspace isolation (issue 19): a protection domain per keyspace,
// HELLO-flow connections in the listener's empty domain, one-time admission
// tickets, write grants reachable only through their own connection, the
// write floor that keeps a committed record out of its writer's reach, and
// INFO that shows only the session's own keyspace.
//
// Each attack below uses a REAL descriptor (handed to an authorised client)
// from a connection that must not reach it; it must get a remote access
// error and change nothing. Access errors delay later connects from
// 127.0.0.1 (the tcp provider's auth delay): attacks per test are few.
#include <sys/stat.h>

#include <fstream>

#include "kv/store/pool.h"
#include "server_test_util.h"

namespace kv::e2e {
namespace {

using protocol::Admit;

constexpr char kVaultKey[] = "vault-key-0123456789abcdef";

class ServerIsolationTest : public ServerTest {
 protected:
  // The access keys file: keyspace `vault` is protected, others are not.
  std::string WriteKeys() {
    const std::string path = dir_ + "/keys";
    std::ofstream(path) << "vault " << kVaultKey << "\n";
    chmod(path.c_str(), 0600);
    return path;
  }
  void StartWithVault(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = {"--allow_create",
                                      "--access_keys=" + WriteKeys(),
                                      "--hello_timeout_ms=60000"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    StartServer(flags);
  }
  // An authorised vault client: HELLO with the key, ticket reconnect, a
  // grant. Fills *a (with a->grant).
  void ConnectVault(RawClient* c, protocol::Accept* a, uint8_t flags = 0) {
    protocol::Accept w = SendHello(c, "vault", kVaultKey, flags);
    ASSERT_EQ(w.admit, Admit::kReconnect) << w.reason;
    *a = Reconnect(c, w);
    ASSERT_EQ(a->admit, Admit::kOk) << a->reason;
    protocol::RefillAck ack;
    Status st = RefillRetrying(c, *a, &ack);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
    a->grant = ack.grant;
  }
  // A connection in the listener's domain: HELLO flag, no HELLO sent.
  void ConnectSilentHello(RawClient* c) {
    protocol::Accept a =
        ConnectRaw(c, ConnectPdata("", protocol::kConnectHello));
    ASSERT_EQ(a.admit, Admit::kHelloRequired) << a.reason;
  }
  // Reads the record `ack` committed through the read region: "key=value"
  // when it verifies as committed with the ack's sequence, else what is
  // wrong ("<...>").
  static std::string ReadCommitted(RawClient* c, const protocol::Accept& a,
                                   const protocol::CommitAck& ack) {
    std::string bytes;
    Status st =
        c->Read(a.read_desc, a.log_offset + ack.log_offset, ack.length, &bytes);
    if (!st.ok()) return "<read: " + st.ToString() + ">";
    record_format::RecordView r;
    st = record_format::VerifyRecord(bytes.data(), bytes.size(), a.keyspace_id,
                                     &r);
    if (!st.ok()) return "<" + st.ToString() + ">";
    if (r.header.sequence != ack.sequence) return "<another sequence>";
    return std::string(r.key) + "=" + std::string(r.value);
  }
  // Writes a record at segment offset `offset` of grant `g` (no COMMIT).
  static Status WriteRecord(RawClient* c, const protocol::Accept& a,
                            const protocol::Grant& g, uint64_t offset,
                            std::string_view key, std::string_view value) {
    return c->Write(g.write_desc, offset - g.start,
                    EncodeTestRecord(a.keyspace_id, key, value));
  }
  // COMMITs the record of `key` already written at `offset`.
  static Status CommitWritten(RawClient* c, const protocol::Grant& g,
                              uint64_t offset, std::string_view key,
                              size_t value_size, protocol::CommitAck* ack,
                              uint32_t request_id = 21) {
    protocol::Commit cm;
    cm.segment = g.segment;
    cm.grant_id = g.grant_id;
    cm.offset = offset;
    cm.length = static_cast<uint32_t>(
        record_format::RecordSize(key.size(), value_size));
    cm.key_hash = index_format::HashKey(key);
    KV_RETURN_IF_ERROR(
        c->SendMessage(protocol::Type::kCommit, CommitPayload(cm), request_id));
    protocol::Header h;
    std::string payload;
    KV_RETURN_IF_ERROR(c->ReceiveMessage(&h, &payload));
    if (h.type != protocol::Type::kCommitAck || h.request_id != request_id) {
      return Status::Corruption("expected COMMIT_ACK");
    }
    return protocol::DecodeCommitAck(
        reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), ack);
  }
  // After the server stopped: `key` of keyspace `ks` in the pool file.
  std::string PoolValue(const std::string& ks, const std::string& key) {
    store::PoolOptions ro;
    ro.read_only = true;
    auto pool = store::Pool::Open(pool_, ro);
    EXPECT_TRUE(pool.ok()) << pool.status().ToString();
    if (!pool.ok()) return "<no pool>";
    auto k = (*pool)->GetKeyspace(ks);
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    if (!k.ok()) return "<no keyspace>";
    std::string value;
    Status st = (*k)->Get(key, &value);
    if (!st.ok()) return "<" + st.ToString() + ">";
    return value;
  }
};

// `st` is the outcome of an access that must be refused.
void ExpectAccessError(const Status& st, const char* what) {
  EXPECT_FALSE(st.ok()) << what << " succeeded";
  if (!st.ok()) {
    EXPECT_NE(st.message().find("access"), std::string::npos)
        << what << ": " << st.ToString();
  }
}

// The attack: a client that never sends vault's access key, with
// vault's real descriptors, reads nothing of vault and writes nothing.
TEST_F(ServerIsolationTest, KeylessClientCannotReachProtectedKeyspace) {
  StartWithVault();
  RawClient v;
  protocol::Accept va;
  ConnectVault(&v, &va, protocol::kConnectCreate);
  const std::string secret = "TOP-SECRET-VALUE-0123456789";
  protocol::CommitAck sack;
  ASSERT_TRUE(
      PutRaw(&v, va, va.grant, va.grant.start, "secret", secret, &sack).ok());
  ASSERT_EQ(sack.status, StatusCode::kOk) << sack.message;
  const std::string rec = EncodeTestRecord(va.keyspace_id, "secret", secret);
  // Control: the authorised connection reads the record through the very
  // descriptor and offset the attackers use.
  const uint64_t at = va.log_offset + sack.log_offset;
  ASSERT_EQ(ReadCommitted(&v, va, sack), "secret=" + secret);
  RawClient p0;
  protocol::Accept pa;
  ConnectOk(&p0, "public", &pa, protocol::kConnectCreate, false);

  // (a) Read from the listener's domain (HELLO flag, no HELLO sent).
  {
    RawClient h;
    ConnectSilentHello(&h);
    std::string out;
    Status st = h.Read(va.read_desc, at, rec.size(), &out);
    ExpectAccessError(st, "read of vault from a HELLO-flow connection");
    EXPECT_EQ(out.find(secret), std::string::npos);
  }
  // (b) Read from a connection admitted to `public`.
  {
    RawClient p;
    protocol::Accept a;
    ConnectOk(&p, "public", &a, 0, false);
    std::string out;
    Status st = p.Read(va.read_desc, at, rec.size(), &out);
    ExpectAccessError(st, "read of vault from a client of 'public'");
    EXPECT_EQ(out.find(secret), std::string::npos);
  }
  // (c) Writes: over the committed record through vault's read region,
  // and into the vault writer's grant where its next record is in flight.
  const uint64_t next = va.grant.start + rec.size();
  const std::string value2 = "second-value";
  ASSERT_TRUE(WriteRecord(&v, va, va.grant, next, "second", value2).ok());
  const std::string junk(64, 'X');
  {
    RawClient h;
    ConnectSilentHello(&h);
    ExpectAccessError(h.Write(va.read_desc, at, junk),
                      "write to vault's region from a HELLO-flow connection");
  }
  {
    RawClient h;
    ConnectSilentHello(&h);
    ExpectAccessError(h.Write(va.grant.write_desc, next - va.grant.start, junk),
                      "write to vault's grant from a HELLO-flow connection");
  }
  {
    RawClient p;
    protocol::Accept a;
    ConnectOk(&p, "public", &a, 0, false);
    ExpectAccessError(p.Write(va.grant.write_desc, next - va.grant.start, junk),
                      "write to vault's grant from a client of 'public'");
  }
  // The victim's in-flight record arrived intact (a changed byte fails its
  // CRC), its committed one is unchanged.
  protocol::CommitAck ack2;
  ASSERT_TRUE(
      CommitWritten(&v, va.grant, next, "second", value2.size(), &ack2).ok());
  EXPECT_EQ(ack2.status, StatusCode::kOk) << ack2.message;
  EXPECT_EQ(ReadCommitted(&v, va, sack), "secret=" + secret);
  EXPECT_EQ(ReadCommitted(&v, va, ack2), "second=" + value2);
  v.Disconnect();
  EXPECT_EQ(server_.Stop(), 0);
  EXPECT_EQ(PoolValue("vault", "secret"), secret);
  EXPECT_EQ(PoolValue("vault", "second"), value2);
}

// Within one keyspace: B cannot write through A's grant (it was
// registered for A's connection only); A's record is intact.
TEST_F(ServerIsolationTest, GrantIsReachableOnlyThroughItsConnection) {
  StartServer({"--allow_create"});
  RawClient ca;
  protocol::Accept a;
  ConnectOk(&ca, "public", &a, protocol::kConnectCreate);
  ASSERT_GT(a.grant.size, 0u);
  // A's record, written but not yet committed.
  const std::string value = "A's value, in flight";
  ASSERT_TRUE(WriteRecord(&ca, a, a.grant, a.grant.start, "ka", value).ok());
  {
    RawClient cb;
    protocol::Accept b;
    ConnectOk(&cb, "public", &b);
    ASSERT_NE(b.grant.grant_id, a.grant.grant_id);
    const std::string forged =
        EncodeTestRecord(a.keyspace_id, "ka", "B's forged value!!!!");
    ExpectAccessError(cb.Write(a.grant.write_desc, 0, forged),
                      "B's write through A's grant");
  }
  protocol::CommitAck ack;
  ASSERT_TRUE(
      CommitWritten(&ca, a.grant, a.grant.start, "ka", value.size(), &ack)
          .ok());
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_EQ(ReadCommitted(&ca, a, ack), "ka=" + value);
  // A goes on putting.
  Putter put{&ca, a, a.grant, a.grant.start + ack.length};
  ASSERT_TRUE(put.Put("kb", "more", 22).ok());
  ca.Disconnect();
  EXPECT_EQ(server_.Stop(), 0);
  EXPECT_EQ(PoolValue("public", "ka"), value);
  EXPECT_EQ(PoolValue("public", "kb"), "more");
}

// Issue 19 defect 8: once committed, a record is out of its writer's
// reach (the grant's floor moved past it); bytes above stay writable.
TEST_F(ServerIsolationTest, CommittedRecordIsNoLongerWritableByItsWriter) {
  StartServer({"--allow_create"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "public", &a, protocol::kConnectCreate);
  ASSERT_GT(a.grant.size, 0u);
  protocol::CommitAck ack1;
  ASSERT_TRUE(
      PutRaw(&c, a, a.grant, a.grant.start, "k", "committed", &ack1).ok());
  ASSERT_EQ(ack1.status, StatusCode::kOk) << ack1.message;
  const std::string rec1 = EncodeTestRecord(a.keyspace_id, "k", "committed");
  // Above the floor: the next put through the same grant works.
  protocol::CommitAck ack2;
  ASSERT_TRUE(PutRaw(&c, a, a.grant, a.grant.start + rec1.size(), "k2",
                     "second", &ack2, false, 8)
                  .ok());
  ASSERT_EQ(ack2.status, StatusCode::kOk) << ack2.message;
  // The attack: rewrite the first committed record as a valid committed
  // record (same size, the sequence the ack gave, a recomputed CRC) with a
  // value never committed, through the writer's own descriptor.
  std::string forged(rec1.size(), '\0');
  ASSERT_EQ(record_format::RecordSize(1, 9), rec1.size());
  record_format::EncodeRecord(forged.data(), a.keyspace_id, ack1.sequence,
                              false, "k", "FORGED!!!");
  ExpectAccessError(c.Write(a.grant.write_desc, 0, forged),
                    "rewriting a committed record");
  // The access error ended that connection; a fresh one sees both records
  // as committed and can put.
  RawClient d;
  protocol::Accept da;
  ConnectOk(&d, "public", &da);
  EXPECT_EQ(ReadCommitted(&d, da, ack1), "k=committed");
  EXPECT_EQ(ReadCommitted(&d, da, ack2), "k2=second");
  protocol::CommitAck ack3;
  ASSERT_TRUE(
      PutRaw(&d, da, da.grant, da.grant.start, "k3", "third", &ack3).ok());
  EXPECT_EQ(ack3.status, StatusCode::kOk) << ack3.message;
  d.Disconnect();
  EXPECT_EQ(server_.Stop(), 0);
  EXPECT_EQ(PoolValue("public", "k"), "committed");
  EXPECT_EQ(PoolValue("public", "k2"), "second");
  EXPECT_EQ(PoolValue("public", "k3"), "third");
}

// A ticket admits once, into its keyspace; used or random ones are refused.
TEST_F(ServerIsolationTest, TicketIsSingleUseAndRandomOnesAreRefused) {
  StartWithVault();
  RawClient c;
  protocol::Accept w =
      SendHello(&c, "vault", kVaultKey, protocol::kConnectCreate);
  ASSERT_EQ(w.admit, Admit::kReconnect) << w.reason;
  const std::string ticket(reinterpret_cast<const char*>(w.ticket),
                           protocol::kTicketSize);
  protocol::Accept a = Reconnect(&c, w);
  ASSERT_EQ(a.admit, Admit::kOk) << a.reason;
  // In the keyspace: a put works and reads back through its read region.
  protocol::RefillAck rack;
  ASSERT_TRUE(RefillRetrying(&c, a, &rack).ok());
  ASSERT_EQ(rack.status, StatusCode::kOk) << rack.message;
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&c, a, rack.grant, rack.grant.start, "k", "v", &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_EQ(ReadCommitted(&c, a, ack), "k=v");
  // The same ticket again (while its first connection is still open).
  {
    RawClient again;
    protocol::Accept r =
        ConnectRaw(&again, ConnectPdata(ticket, protocol::kConnectTicket));
    EXPECT_EQ(r.admit, Admit::kAccessDenied) << r.reason;
    EXPECT_TRUE(again.WaitClosed());
  }
  // A random ticket.
  {
    std::string forged(protocol::kTicketSize, '\0');
    for (size_t i = 0; i < forged.size(); i++) {
      forged[i] = static_cast<char>(ticket[i] ^ (0x5a + i));
    }
    RawClient r;
    protocol::Accept ra =
        ConnectRaw(&r, ConnectPdata(forged, protocol::kConnectTicket));
    EXPECT_EQ(ra.admit, Admit::kAccessDenied) << ra.reason;
    EXPECT_TRUE(r.WaitClosed());
  }
  // A second HELLO gets a fresh ticket that works.
  RawClient c2;
  protocol::Accept w2 = SendHello(&c2, "vault", kVaultKey);
  ASSERT_EQ(w2.admit, Admit::kReconnect) << w2.reason;
  EXPECT_NE(std::memcmp(w2.ticket, w.ticket, protocol::kTicketSize), 0);
  protocol::Accept a2 = Reconnect(&c2, w2);
  EXPECT_EQ(a2.admit, Admit::kOk) << a2.reason;
  EXPECT_EQ(a2.keyspace_id, a.keyspace_id);
}

// A ticket not used within its lifetime (10 s) is refused: HELLO again.
TEST_F(ServerIsolationTest, TicketExpires) {
  StartWithVault();
  RawClient c;
  protocol::Accept w =
      SendHello(&c, "vault", kVaultKey, protocol::kConnectCreate);
  ASSERT_EQ(w.admit, Admit::kReconnect) << w.reason;
  c.Disconnect();
  sleep(11);
  protocol::Accept a = ConnectRaw(
      &c, ConnectPdata(std::string(reinterpret_cast<const char*>(w.ticket),
                                   protocol::kTicketSize),
                       protocol::kConnectTicket));
  EXPECT_EQ(a.admit, Admit::kAccessDenied) << a.reason;
  EXPECT_NE(a.reason.find("expired"), std::string::npos) << a.reason;
}

// Server::Admit logged a ticket connect as "session N admitted: keyspace
// '<cr.connect.name>'", and for kConnectTicket that name is the 16 raw
// ticket bytes: the log got binary garbage (and the used ticket) instead
// of the keyspace's name.
TEST_F(ServerIsolationTest, TicketConnectIsLoggedWithItsKeyspace) {
  StartWithVault();
  RawClient c;
  protocol::Accept w =
      SendHello(&c, "vault", kVaultKey, protocol::kConnectCreate);
  ASSERT_EQ(w.admit, Admit::kReconnect) << w.reason;
  const std::string ticket(reinterpret_cast<const char*>(w.ticket),
                           protocol::kTicketSize);
  protocol::Accept a = Reconnect(&c, w);
  ASSERT_EQ(a.admit, Admit::kOk) << a.reason;
  EXPECT_TRUE(server_.WaitForLog("session 2 admitted"));
  const std::string log = server_.StderrText();
  EXPECT_EQ(log.find(ticket), std::string::npos) << "the ticket is logged";
  const size_t at = log.find("session 2 admitted");
  ASSERT_NE(at, std::string::npos);
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find("'vault'"), std::string::npos) << line;
}

// INFO shows a client only its own keyspace, unless --info_all_keyspaces.
class ServerIsolationInfoTest : public ServerIsolationTest,
                                public ::testing::WithParamInterface<bool> {};

TEST_P(ServerIsolationInfoTest, InfoNamesOtherKeyspacesOnlyWhenTold) {
  const bool all = GetParam();
  StartWithVault(all ? std::vector<std::string>{"--info_all_keyspaces"}
                     : std::vector<std::string>{});
  {
    RawClient v;
    protocol::Accept va;
    ConnectVault(&v, &va, protocol::kConnectCreate);
    Putter put{&v, va, va.grant, va.grant.start};
    for (int i = 0; i < 3; i++) {
      ASSERT_TRUE(put.Put("vk" + std::to_string(i), "x", 30 + i).ok());
    }
  }
  RawClient p;
  protocol::Accept pa;
  ConnectOk(&p, "public", &pa, protocol::kConnectCreate);
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&p, pa, pa.grant, pa.grant.start, "pk", "y", &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kOk);
  const std::string names = Info(&p, protocol::InfoTopic::kKeyspaces);
  const std::string stats = Info(&p, protocol::InfoTopic::kStats);
  EXPECT_NE(names.find("public\n"), std::string::npos) << names;
  EXPECT_NE(stats.find("keyspace.public.keys 1\n"), std::string::npos) << stats;
  if (all) {
    EXPECT_NE(names.find("vault\n"), std::string::npos) << names;
    EXPECT_NE(stats.find("keyspace.vault.keys 3\n"), std::string::npos)
        << stats;
  } else {
    EXPECT_EQ(names, "public\n");
    EXPECT_EQ(names.find("vault"), std::string::npos) << names;
    EXPECT_EQ(stats.find("vault"), std::string::npos) << stats;
    EXPECT_EQ(stats.find("default"), std::string::npos) << stats;
  }
}

INSTANTIATE_TEST_SUITE_P(, ServerIsolationInfoTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "AllKeyspaces" : "OwnKeyspace";
                         });

}  // namespace
}  // namespace kv::e2e
