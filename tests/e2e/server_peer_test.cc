// kvserver: peer sessions (a kvserver writing the copy of a shard moving
// to this node, docs/cluster.md "Moving a shard: the protocol") from the
// outside — who is refused, and that a client can never send a replica
// record (a record with a sequence of its choosing).
#include <sys/stat.h>

#include <fstream>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

using protocol::Admit;

constexpr char kPeerKey[] = "peer-key-0123456789abcdef";

class ServerPeerTest : public ServerTest {
 protected:
  std::string WritePeerKey(const std::string& text, mode_t mode = 0600) {
    const std::string path = dir_ + "/peer.key";
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }
  // A peer HELLO for `name` with `key`: the WELCOME's accept.
  protocol::Accept PeerHello(RawClient* c, const std::string& name,
                             const std::string& key) {
    return SendHello(c, name, key, protocol::kHelloPeer);
  }
  // kvserver's exit code and stderr for a start with --peer_key_file.
  int StartWithPeerKey(const std::string& path, std::string* err) {
    return RunToExit({KvserverPath(), "--pool=" + pool_, "--pool_size=64M",
                      "--listen=127.0.0.1:" + std::to_string(PickFreePort()),
                      "--peer_key_file=" + path},
                     err);
  }
};

// The defect this guards against: a client that sets the replica flag
// would commit a record sealed with a sequence of its choosing — pinning
// a key against every later write (newest sequence wins).
TEST_F(ServerPeerTest, AClientsReplicaCommitIsAProtocolErrorAndChangesNothing) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  // A record sealed as if committed elsewhere, with a huge sequence.
  std::string rec(record_format::RecordSize(3, 5), '\0');
  record_format::EncodeRecord(rec.data(), a.keyspace_id, uint64_t{1} << 50,
                              false, "key", "value");
  ASSERT_TRUE(c.Write(a.grant.write_desc, 0, rec).ok());
  protocol::Commit cm;
  cm.flags = protocol::kCommitReplica;
  cm.segment = a.grant.segment;
  cm.grant_id = a.grant.grant_id;
  cm.offset = a.grant.start;
  cm.length = static_cast<uint32_t>(rec.size());
  cm.key_hash = index_format::HashKey("key");
  ASSERT_TRUE(
      c.SendMessage(protocol::Type::kCommit, CommitPayload(cm), 5).ok());
  protocol::Header h;
  std::string payload;
  ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok());
  EXPECT_EQ(h.type, protocol::Type::kError);
  EXPECT_NE(payload.find("only a peer kvserver"), std::string::npos) << payload;
  EXPECT_TRUE(c.WaitClosed());
  // Nothing was committed: a fresh client's write of the key gets an
  // ordinary sequence, below the forged one, and reads back.
  RawClient d;
  protocol::Accept b;
  ConnectOk(&d, "default", &b);
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&d, b, b.grant, b.grant.start, "key", "mine", &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_LT(ack.sequence, uint64_t{1} << 50);
  EXPECT_FALSE(ack.flags & protocol::kAckHadPrevious)
      << "the forged record became a version of the key";
}

TEST_F(ServerPeerTest, WithoutAPeerKeyNoPeerIsAdmitted) {
  StartServer();
  RawClient c;
  protocol::Accept w = PeerHello(&c, "default", kPeerKey);
  EXPECT_EQ(w.admit, Admit::kAccessDenied);
  EXPECT_NE(w.reason.find("--peer_key_file"), std::string::npos) << w.reason;
  EXPECT_TRUE(c.WaitClosed());
}

TEST_F(ServerPeerTest, AWrongPeerKeyIsDeniedAndASingleServerTakesNoCopy) {
  StartServer({"--peer_key_file=" + WritePeerKey(std::string(kPeerKey) + "\n"),
               "--auth_delay_ms=0"});
  {
    RawClient c;
    protocol::Accept w = PeerHello(&c, "default", "peer-key-0123456789abcdeX");
    EXPECT_EQ(w.admit, Admit::kAccessDenied);
    EXPECT_NE(w.reason.find("wrong peer key"), std::string::npos) << w.reason;
  }
  {
    // The right key: still no copy outside a cluster.
    RawClient c;
    protocol::Accept w = PeerHello(&c, "default", kPeerKey);
    EXPECT_EQ(w.admit, Admit::kWrongShard);
    EXPECT_NE(w.reason.find("single server"), std::string::npos) << w.reason;
  }
  // A client's access to the keyspace is untouched by the peer key.
  RawClient d;
  protocol::Accept a;
  ConnectOk(&d, "default", &a);
}

TEST_F(ServerPeerTest, APeerKeyFileOthersCanReadOrThatIsMalformedStopsStart) {
  std::string err;
  EXPECT_EQ(StartWithPeerKey(WritePeerKey(kPeerKey, 0644), &err), 3) << err;
  EXPECT_NE(err.find("peer key file"), std::string::npos) << err;
  EXPECT_NE(err.find("chmod 600"), std::string::npos) << err;
  EXPECT_EQ(StartWithPeerKey(WritePeerKey("short\n"), &err), 3) << err;
  EXPECT_NE(err.find("16 to 64"), std::string::npos) << err;
  EXPECT_EQ(StartWithPeerKey(WritePeerKey("# only a comment\n"), &err), 3)
      << err;
  EXPECT_NE(err.find("no key"), std::string::npos) << err;
  EXPECT_EQ(StartWithPeerKey(dir_ + "/absent.key", &err), 3) << err;
}

}  // namespace
}  // namespace kv::e2e
