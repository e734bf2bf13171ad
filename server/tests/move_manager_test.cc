// MoveManager as a move's target, against the in-process fake etcd and a
// host whose shard keyspace lives in an in-memory pool: when it prepares
// (empties the shard and lists it as incoming) and when it must not.
#include "move_manager.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "kv/cluster/fake_etcd.h"
#include "kv/cluster/move_record.h"
#include "kv/cluster_slots.h"
#include "kv/record_format.h"
#include "kv/store/mapping.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "shard_table.h"

namespace kv::server {
namespace {

// Keyspace "users" (id 7), shard 0 (all slots) with primary `primary` at
// `epoch`.
std::string Map(uint32_t primary, uint32_t epoch) {
  return R"({"format": 1, "slots": 1024, "keyspaces": [{"name": "users", )"
         R"("id": 7, "shards": [{"id": 0, "epoch": )" +
         std::to_string(epoch) + R"(, "replicas": [)" +
         std::to_string(primary) + R"(], "slots": [[0, 1023]]}]}]})";
}

// The host of node 2: one shard keyspace, made by EnsureShard.
class FakeHost : public ShardHost {
 public:
  FakeHost() {
    pool_ =
        store::Pool::CreateOn(store::MemoryMapping::Zeroed(16 << 20, nullptr),
                              store::PoolOptions())
            .value();
  }
  Status EnsureShard(std::string_view name, uint32_t id, uint32_t,
                     bool) override {
    ensured++;
    if (ks_ != nullptr) return Status::Ok();
    store::KeyspaceOptions ko;
    ko.id = id;
    ko.segment_size = 256 << 10;
    ko.log_size = 4 << 20;
    ko.index_capacity = 1024;
    ko.max_value_size = 64 << 10;
    auto ks = pool_->CreateKeyspace(std::string(name), ko);
    if (!ks.ok()) return ks.status();
    ks_ = *ks;
    return Status::Ok();
  }
  Result<std::shared_ptr<store::Keyspace>> LocalKeyspace(
      std::string_view) override {
    if (ks_ == nullptr) return Status::NotFound("no shard keyspace");
    return ks_;
  }
  ForwardingCommitPoint* ShardCommitPoint(std::string_view) override {
    return nullptr;
  }
  Status EndShardSessions(std::string_view,
                          std::chrono::milliseconds) override {
    return Status::Ok();
  }
  Status DropShard(std::string_view) override { return Status::Ok(); }

  int ensured = 0;
  std::unique_ptr<store::Pool> pool_;
  std::shared_ptr<store::Keyspace> ks_;
};

class MoveManagerTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shards_.SetLeaseCheck([] { return true; });
    cluster::MoveRecord r;
    r.keyspace = "users";
    r.shard = 0;
    r.source = 1;
    r.target = 2;
    r.epoch = 1;
    ASSERT_TRUE(etcd_.Put("/rpkv/t/map", Map(1, 1)).ok());
    ASSERT_TRUE(etcd_.Put("/rpkv/t/moves/users/0", r.Encode()).ok());
  }
  // A manager for node 2 whose map lock reports `applied` (the revision
  // of the map the node serves by).
  std::unique_ptr<MoveManager> Manager(const int64_t* applied) {
    MoveManager::Options o;
    o.cluster = "t";
    o.node_id = 2;
    o.shards = &shards_;
    o.host = &host_;
    o.with_applied_map = [applied](const std::function<void(int64_t)>& f) {
      f(*applied);
    };
    return MoveManager::Create(etcd_, std::move(o)).value();
  }
  // The shard keyspace with `n` keys, as after a switch to this node.
  void ServeWithKeys(int n) {
    ASSERT_TRUE(host_.EnsureShard(kShard, ShardKeyspaceId(7, 0), 1, true).ok());
    store::Writer w(host_.ks_);
    for (int i = 0; i < n; i++) {
      ASSERT_TRUE(w.Put("k" + std::to_string(i), "v").ok());
    }
  }
  int Keys() {
    int n = 0;
    if (host_.ks_ != nullptr) {
      EXPECT_TRUE(host_.ks_
                      ->ForEach([&](const record_format::RecordView&) {
                        n++;
                        return true;
                      })
                      .ok());
    }
    return n;
  }

  const std::string kShard = ShardKeyspaceName("users", 0);
  cluster::FakeEtcd etcd_;
  ShardTable shards_{2};
  FakeHost host_;
};

TEST_F(MoveManagerTargetTest, AFreshRecordPreparesAnEmptiedIncomingShard) {
  ServeWithKeys(5);  // an older copy, not served
  const int64_t applied = 0;
  auto m = Manager(&applied);
  m->Pass();
  EXPECT_EQ(shards_.IncomingEpoch(kShard), 1u);
  EXPECT_EQ(Keys(), 0) << "an older copy is emptied";
}

// The switch was applied (revision R) after the read that still shows the
// record and the old map was taken: the read is stale, nothing happens.
TEST_F(MoveManagerTargetTest, AReadOlderThanTheAppliedMapPreparesNothing) {
  ServeWithKeys(5);
  const int64_t applied = etcd_.GetPrefix("/rpkv/t/")->revision + 1;
  auto m = Manager(&applied);
  m->Pass();
  EXPECT_EQ(shards_.IncomingEpoch(kShard), 0u);
  EXPECT_EQ(Keys(), 5) << "a stale read emptied the shard";
}

// The node serves the shard (owned in its ShardTable): whatever a read
// says, its keyspace is never emptied.
TEST_F(MoveManagerTargetTest, AServedShardIsNeverEmptied) {
  ServeWithKeys(5);
  shards_.Set({{kShard, 2}});
  const int64_t applied = 0;
  auto m = Manager(&applied);
  m->Pass();
  EXPECT_EQ(shards_.IncomingEpoch(kShard), 0u);
  EXPECT_EQ(Keys(), 5) << "a served shard was emptied";
}

}  // namespace
}  // namespace kv::server
