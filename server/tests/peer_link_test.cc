// PeerLink against a real (in-process) kvserver acting as a move's
// target: its ShardTable lists the shard as incoming, so a peer with the
// cluster's peer key may write the copy. Records come from a source
// keyspace (same cluster-assigned id) in an in-memory pool, read the way
// the move's copier reads them (Keyspace::WithCurrentRecord).
#include "peer_link.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "kv/cluster_slots.h"
#include "kv/record_format.h"
#include "kv/server/server_options.h"
#include "kv/store/mapping.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "server.h"
#include "shard_table.h"

namespace kv::server {
namespace {

namespace fs = std::filesystem;
namespace rf = kv::record_format;

constexpr char kPeerKey[] = "peer-key-0123456789abcdef";
constexpr uint32_t kEpoch = 5;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class PeerLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("RPMA_PROVIDER", "tcp", 1);
    dir_ = fs::temp_directory_path() /
           ("rpkv-peer-link-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    const std::string key = (dir_ / "peer.key").string();
    std::ofstream(key) << kPeerKey << "\n";
    chmod(key.c_str(), 0600);
    shards_.SetLeaseCheck([] { return true; });
    ServerOptions o;
    o.pool_path = (dir_ / "target.pool").string();
    o.pool_size = 64 << 20;
    o.listen = {"127.0.0.1", std::to_string(FreePort())};
    o.provider = "tcp";
    o.segment_size = 256 << 10;  // small: the copies cross grants
    o.index_capacity = 4096;
    o.workers = 1;
    o.peer_key_path = key;
    o.auth_delay = std::chrono::milliseconds(0);
    o.shards = &shards_;
    auto server = Server::Open(o);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    stop_fd_ = eventfd(0, EFD_CLOEXEC);
    runner_ = std::thread([this] { server_->Run(stop_fd_); });
    ASSERT_TRUE(server_->EnsureShard(kShard, kShardId, 1, true).ok());
    shards_.SetIncoming({{kShard, kEpoch}});

    auto pool = store::Pool::CreateOn(
        store::MemoryMapping::Zeroed(16 << 20, nullptr), store::PoolOptions());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    source_pool_ = std::move(pool).value();
    store::KeyspaceOptions ko;
    ko.id = kShardId;
    ko.segment_size = 256 << 10;
    ko.log_size = 8 << 20;
    ko.index_capacity = 4096;
    ko.max_value_size = 64 << 10;
    auto ks = source_pool_->CreateKeyspace(kShard, ko);
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    source_ = *ks;
  }
  void TearDown() override {
    if (stop_fd_ >= 0) {
      uint64_t one = 1;
      (void)!write(stop_fd_, &one, sizeof(one));
    }
    if (runner_.joinable()) runner_.join();
    server_.reset();
    if (stop_fd_ >= 0) close(stop_fd_);
    fs::remove_all(dir_);
  }

  PeerLink::Options LinkOptions() {
    PeerLink::Options o;
    o.target = server_->endpoint();
    o.keyspace = kShard;
    o.peer_key = kPeerKey;
    o.epoch = kEpoch;
    o.timeout = std::chrono::milliseconds(5000);
    return o;
  }
  // Copies the source's current version of `key`.
  Result<PeerLink::Copied> CopyKey(PeerLink* link, const std::string& key) {
    Result<PeerLink::Copied> out = Status::NotFound("no version");
    Status st = source_->WithCurrentRecord(
        key, [&](const uint8_t* rec, size_t n) { out = link->Copy(rec, n); });
    if (!st.ok()) return st;
    return out;
  }
  std::string TargetValue(const std::string& key, store::Version* v = nullptr) {
    auto ks = server_->LocalKeyspace(kShard);
    if (!ks.ok()) return "<" + ks.status().ToString() + ">";
    std::string got;
    Status st = (*ks)->Get(key, &got, v);
    if (st.IsNotFound()) return "<not_found>";
    return st.ok() ? got : "<" + st.ToString() + ">";
  }

  const std::string kShard = ShardKeyspaceName("users", 3);
  const uint32_t kShardId = ShardKeyspaceId(2, 3);
  fs::path dir_;
  ShardTable shards_{2};
  std::unique_ptr<Server> server_;
  int stop_fd_ = -1;
  std::thread runner_;
  std::unique_ptr<store::Pool> source_pool_;
  std::shared_ptr<store::Keyspace> source_;
};

TEST_F(PeerLinkTest, CopiesKeepTheSourcesVersionsAcrossGrants) {
  store::Writer w(source_);
  // ~1.2 MiB of records through 256 KiB segments: several REFILLs.
  const std::string big(4000, 'v');
  for (int i = 0; i < 300; i++) {
    ASSERT_TRUE(w.Put("k" + std::to_string(i), big + std::to_string(i)).ok());
  }
  auto link = PeerLink::Open(LinkOptions());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  for (int i = 0; i < 300; i++) {
    auto c = CopyKey(link->get(), "k" + std::to_string(i));
    ASSERT_TRUE(c.ok()) << i << ": " << c.status().ToString();
    EXPECT_FALSE(c->stale);
  }
  EXPECT_EQ((*link)->records(), 300u);
  for (int i : {0, 150, 299}) {
    const std::string key = "k" + std::to_string(i);
    store::Version here, there;
    std::string got;
    ASSERT_TRUE(source_->Get(key, &got, &there).ok());
    EXPECT_EQ(TargetValue(key, &here), big + std::to_string(i));
    EXPECT_EQ(here.sequence, there.sequence) << key;
  }
}

TEST_F(PeerLinkTest, AnOlderCopyIsStaleAndADeleteApplies) {
  store::Writer w(source_);
  ASSERT_TRUE(w.Put("k", "v1").ok());
  std::string old;
  ASSERT_TRUE(
      source_
          ->WithCurrentRecord("k",
                              [&](const uint8_t* r, size_t n) {
                                old.assign(reinterpret_cast<const char*>(r), n);
                              })
          .ok());
  ASSERT_TRUE(w.Put("k", "v2").ok());
  auto link = PeerLink::Open(LinkOptions());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  ASSERT_TRUE(CopyKey(link->get(), "k").ok());
  auto stale =
      (*link)->Copy(reinterpret_cast<const uint8_t*>(old.data()), old.size());
  ASSERT_TRUE(stale.ok()) << stale.status().ToString();
  EXPECT_TRUE(stale->stale);
  EXPECT_EQ(TargetValue("k"), "v2");
  // A tombstone as the source seals it (a forwarded delete).
  std::string tomb(rf::RecordSize(1, 0), '\0');
  store::Version v;
  std::string got;
  ASSERT_TRUE(source_->Get("k", &got, &v).ok());
  rf::EncodeRecord(tomb.data(), kShardId, v.sequence + 1, true, "k", "");
  auto del =
      (*link)->Copy(reinterpret_cast<const uint8_t*>(tomb.data()), tomb.size());
  ASSERT_TRUE(del.ok()) << del.status().ToString();
  EXPECT_FALSE(del->stale);
  EXPECT_EQ(TargetValue("k"), "<not_found>");
}

TEST_F(PeerLinkTest, RefusalsNameTheirReason) {
  PeerLink::Options o = LinkOptions();
  o.peer_key = "peer-key-0123456789abcdeX";
  EXPECT_EQ(PeerLink::Open(o).status().code(), StatusCode::kPermissionDenied);
  o = LinkOptions();
  o.epoch = kEpoch - 1;  // a stale move
  EXPECT_TRUE(PeerLink::Open(o).status().IsWrongShard());
  o = LinkOptions();
  o.keyspace = ShardKeyspaceName("users", 4);  // not incoming here
  EXPECT_TRUE(PeerLink::Open(o).status().IsWrongShard());
  shards_.SetIncoming({{kShard, kEpoch}, {ShardKeyspaceName("users", 4), 5}});
  Status st = PeerLink::Open(o).status();  // incoming, but never made
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  // A record that does not verify is not sent.
  auto link = PeerLink::Open(LinkOptions());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  std::string junk(128, 'x');
  EXPECT_TRUE(
      (*link)
          ->Copy(reinterpret_cast<const uint8_t*>(junk.data()), junk.size())
          .status()
          .IsCorruption());
  EXPECT_TRUE((*link)->health().ok());
}

// The move was cancelled (the target no longer receives the shard): the
// next copy is refused and the link stays failed.
TEST_F(PeerLinkTest, ACancelledMoveFailsTheLinkForGood) {
  store::Writer w(source_);
  ASSERT_TRUE(w.Put("a", "1").ok());
  ASSERT_TRUE(w.Put("b", "2").ok());
  auto link = PeerLink::Open(LinkOptions());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  ASSERT_TRUE(CopyKey(link->get(), "a").ok());
  shards_.SetIncoming({});
  Status st = CopyKey(link->get(), "b").status();
  EXPECT_TRUE(st.IsWrongShard()) << st.ToString();
  EXPECT_TRUE((*link)->health().IsWrongShard());
  EXPECT_TRUE(CopyKey(link->get(), "a").status().IsWrongShard());
  EXPECT_EQ(TargetValue("b"), "<not_found>");
}

}  // namespace
}  // namespace kv::server
