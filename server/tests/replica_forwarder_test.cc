// ReplicaForwarder against a real (in-process) kvserver as the backup
// (peer_test_fixture.h: shard "users.s3" taken from peers at epoch 5):
// records reach the backup before Forward returns; a backup that refuses
// is reported and the commit waits for the replica set to change; a shard
// that leaves the node fails the waiting commit as unknown-outcome.
#include "replica_forwarder.h"

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "peer_test_fixture.h"

namespace kv::server {
namespace {

using ReplicaForwarderTest = testing::PeerTest;
using testing::kEpoch;
using testing::kPeerKey;
using namespace std::chrono_literals;

class Reports {
 public:
  void Add(uint32_t epoch, uint32_t node) {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.emplace_back(epoch, node);
  }
  std::vector<std::pair<uint32_t, uint32_t>> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<uint32_t, uint32_t>> seen_;
};

class ReplicaForwarderFixture : public ReplicaForwarderTest {
 protected:
  std::shared_ptr<ReplicaForwarder> Make(std::chrono::milliseconds max_wait) {
    ReplicaForwarder::Options o;
    o.keyspace = kShard;
    o.peer_key = kPeerKey;
    o.link_timeout = 2000ms;
    o.max_wait = max_wait;
    o.resolve = [this](uint32_t node) -> Result<Endpoint> {
      if (node != 7) return Status::Unavailable("node is not registered");
      return server_->endpoint();
    };
    o.report = [this](uint32_t epoch, uint32_t node, const Status&) {
      reports_.Add(epoch, node);
    };
    return std::make_shared<ReplicaForwarder>(o);
  }
  std::string Record(const std::string& key, const std::string& value) {
    store::Writer w(source_);
    EXPECT_TRUE(w.Put(key, value).ok());
    return CurrentRecord(key);
  }
  // Forwards `batch` on another thread and waits until a failed backup
  // was reported (the forward then waits for the replica set to change).
  std::future<Status> ForwardUntilReported(ReplicaForwarder& f,
                                           const ForwardedRecord* batch,
                                           size_t n) {
    auto waiting = std::async(std::launch::async, [&f, batch, n] {
      return f.ForwardAround(batch, n, [] { return Status::Ok(); });
    });
    for (int i = 0; i < 100 && reports_.seen().empty(); i++) {
      std::this_thread::sleep_for(20ms);
    }
    return waiting;
  }
  static ForwardedRecord Of(const std::string& rec) {
    return {reinterpret_cast<const uint8_t*>(rec.data()), rec.size()};
  }
  Reports reports_;
};

TEST_F(ReplicaForwarderFixture, RecordsAreOnTheBackupWhenForwardReturns) {
  auto f = Make(5000ms);
  f->Update(kEpoch, {7});
  const std::string a = Record("a", "1"), b = Record("b", "2");
  const ForwardedRecord batch[] = {Of(a), Of(b)};
  bool local_ran = false;
  Status st = f->ForwardAround(batch, 2, [&] {
    local_ran = true;
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(local_ran);
  EXPECT_EQ(TargetValue("a"), "1");
  EXPECT_EQ(TargetValue("b"), "2");
  EXPECT_EQ(f->state().forwarded, 2u);
  EXPECT_TRUE(reports_.seen().empty());
  // No backups: the local persist only.
  f->Update(kEpoch + 1, {});
  local_ran = false;
  EXPECT_TRUE(f->ForwardAround(batch, 2, [&] {
                 local_ran = true;
                 return Status::Ok();
               }).ok());
  EXPECT_TRUE(local_ran);
}

// A backup that cannot be reached is reported once and the commit waits;
// the map dropping it (a new epoch, no backups) lets the commit complete.
TEST_F(ReplicaForwarderFixture, AFailedBackupIsReportedAndTheCommitWaits) {
  auto f = Make(20000ms);
  f->Update(kEpoch, {8});  // node 8 is not registered: no link
  const std::string a = Record("a", "1");
  const ForwardedRecord batch[] = {Of(a)};
  auto waiting = ForwardUntilReported(*f, batch, 1);
  ASSERT_EQ(reports_.seen().size(), 1u);
  EXPECT_EQ(reports_.seen()[0], std::make_pair(kEpoch, uint32_t{8}));
  EXPECT_EQ(waiting.wait_for(200ms), std::future_status::timeout)
      << "the commit must wait for the replica set to change";
  EXPECT_EQ(f->state().failed, std::vector<uint32_t>{8});
  f->Update(kEpoch + 1, {});  // the controller dropped node 8
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(waiting.get().ok());
}

// The shard leaves this node while a commit waits: unknown outcome.
TEST_F(ReplicaForwarderFixture, AShardThatLeavesFailsTheWaitingCommit) {
  auto f = Make(20000ms);
  f->Update(kEpoch, {8});
  const std::string a = Record("a", "1");
  const ForwardedRecord batch[] = {Of(a)};
  auto waiting = ForwardUntilReported(*f, batch, 1);
  f->Gone();
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  Status st = waiting.get();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("may or may not have been applied"),
            std::string::npos)
      << st.message();
  // And nothing after: Gone is final.
  EXPECT_FALSE(f->ForwardAround(batch, 1, [] { return Status::Ok(); }).ok());
}

// The wait is bounded: no change within max_wait is unknown-outcome too.
TEST_F(ReplicaForwarderFixture, TheWaitForANewReplicaSetIsBounded) {
  auto f = Make(300ms);
  f->Update(kEpoch, {8});
  const std::string a = Record("a", "1");
  const ForwardedRecord batch[] = {Of(a)};
  Status st = f->ForwardAround(batch, 1, [] { return Status::Ok(); });
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("did not change within 300 ms"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace kv::server
