// The fixture of the peer tests: a real (in-process) kvserver acting as a
// move's target — its ShardTable lists shard "users.s3" as incoming at
// epoch 5, and it takes peers with the cluster's peer key — and a source
// keyspace of the same cluster-assigned id in an in-memory pool.
#ifndef KV_SERVER_TESTS_PEER_TEST_FIXTURE_H_
#define KV_SERVER_TESTS_PEER_TEST_FIXTURE_H_

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
#include "peer_link.h"
#include "server.h"
#include "shard_table.h"

namespace kv::server {
namespace testing {

namespace fs = std::filesystem;
namespace rf = kv::record_format;

inline constexpr char kPeerKey[] = "peer-key-0123456789abcdef";
inline constexpr uint32_t kEpoch = 5;

inline int FreePort() {
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

class PeerTest : public ::testing::Test {
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
  // The source's current record of `key` (sealed, as in its log).
  std::string CurrentRecord(const std::string& key) {
    std::string rec;
    EXPECT_TRUE(source_
                    ->WithCurrentRecord(
                        key,
                        [&](const uint8_t* r, size_t n) {
                          rec.assign(reinterpret_cast<const char*>(r), n);
                        })
                    .ok())
        << key;
    return rec;
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

}  // namespace testing
}  // namespace kv::server

#endif  // KV_SERVER_TESTS_PEER_TEST_FIXTURE_H_
