// MoveSource: the source's side of a live shard move, against a real
// (in-process) target kvserver (peer_test_fixture.h). Writers keep
// committing to the source keyspace (through its commit pipeline, whose
// commit point is a ForwardingCommitPoint, as on a cluster node) while
// the copier runs; after the hand-off (Freeze) the target must hold
// exactly the source's versions — every key, value and sequence, no key
// the source deleted — and the source must refuse every later commit.
#include "move_source.h"

#include <atomic>
#include <map>
#include <random>

#include "forwarding_commit_point.h"
#include "kv/store/commit_pipeline.h"
#include "peer_test_fixture.h"

namespace kv::server {
namespace {

using std::chrono::milliseconds;

class MoveSourceTest : public testing::PeerTest {
 protected:
  void SetUp() override {
    PeerTest::SetUp();
    if (HasFatalFailure()) return;
    point_ = std::make_unique<ForwardingCommitPoint>(
        source_->persister(), source_->log_base(), source_->region().log_size);
    source_->pipeline().set_commit_point(point_.get());
  }
  void TearDown() override {
    source_->pipeline().set_commit_point(nullptr);
    PeerTest::TearDown();
  }
  MoveSource::Options MoveOptions() {
    MoveSource::Options o;
    o.keyspace = source_;
    o.commit_point = point_.get();
    o.link = LinkOptions();
    return o;
  }
  // Waits (bounded) for the copier to finish or the move to fail.
  MoveSource::Progress WaitCopied(MoveSource* m) {
    MoveSource::Progress p;
    for (int i = 0; i < 3000; i++) {
      p = m->progress();
      if (p.copied || !p.failure.ok()) break;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return p;
  }
  // Every live key of the source, with its version, equals the target's;
  // the target has no other key.
  void ExpectTargetEqualsSource() {
    std::map<std::string, std::pair<std::string, uint64_t>> want;
    ASSERT_TRUE(source_
                    ->ForEach([&](const record_format::RecordView& v) {
                      want[std::string(v.key)] = {std::string(v.value),
                                                  v.header.sequence};
                      return true;
                    })
                    .ok());
    auto target = server_->LocalKeyspace(kShard);
    ASSERT_TRUE(target.ok());
    size_t there = 0;
    ASSERT_TRUE((*target)
                    ->ForEach([&](const record_format::RecordView& v) {
                      there++;
                      auto it = want.find(std::string(v.key));
                      EXPECT_TRUE(it != want.end())
                          << "'" << v.key << "' is on the target only (a "
                          << "deleted key came back?)";
                      if (it != want.end()) {
                        EXPECT_EQ(std::string(v.value), it->second.first)
                            << v.key;
                        EXPECT_EQ(v.header.sequence, it->second.second)
                            << v.key;
                      }
                      return true;
                    })
                    .ok());
    EXPECT_EQ(there, want.size());
  }

  std::unique_ptr<ForwardingCommitPoint> point_;
};

// Puts, updates and deletes from two writers during the whole copy.
TEST_F(MoveSourceTest, ALiveCopyUnderWritesEndsEqualAtTheHandOff) {
  store::Writer seed(source_);
  for (int i = 0; i < 2000; i++) {
    ASSERT_TRUE(seed.Put("k" + std::to_string(i), "seed").ok());
  }
  MoveSource::Options o = MoveOptions();
  o.rate_bytes_per_s = 400 << 10;  // ~0.5 s of copying: writes overlap it
  auto m = MoveSource::Start(o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // The writers start once the copier has listed the keys (so the count
  // below is the seed's, not a race with a writer's delete or new key);
  // the paced copy of the records then overlaps their writes.
  for (int i = 0; i < 3000 && (*m)->progress().keys_total == 0; i++) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; t++) {
    writers.emplace_back([&, t] {
      store::Writer w(source_);
      std::mt19937 rng(t);
      while (!stop.load()) {
        const std::string key = "k" + std::to_string(rng() % 2500);
        Status st = (rng() % 4 == 0)
                        ? w.Delete(key).status()
                        : w.Put(key, "w" + std::to_string(t) + "-" +
                                         std::to_string(rng()))
                              .status();
        if (st.IsWrongShard()) break;  // frozen
        EXPECT_TRUE(st.ok()) << st.ToString();
        acked++;
      }
    });
  }
  MoveSource::Progress p = WaitCopied(m->get());
  ASSERT_TRUE(p.failure.ok()) << p.failure.ToString();
  ASSERT_TRUE(p.copied);
  EXPECT_EQ(p.keys_total, 2000u);
  EXPECT_GT(p.keys_forwarded, 0u) << "no write overlapped the copy";
  Result<uint64_t> last = (*m)->Freeze();
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_GT(acked.load(), 100);
  // Frozen: nothing commits any more, and the target has it all.
  store::Writer late(source_);
  EXPECT_TRUE(late.Put("k1", "late").status().IsWrongShard());
  // Every acknowledged version is at or below the hand-off's sequence
  // (refused commits took sequences too, never versions).
  ASSERT_TRUE(source_
                  ->ForEach([&](const record_format::RecordView& v) {
                    EXPECT_LE(v.header.sequence, *last) << v.key;
                    return true;
                  })
                  .ok());
  ExpectTargetEqualsSource();
  // Still frozen after the MoveSource goes (the shard is the target's).
  m->reset();
  EXPECT_TRUE(late.Put("k1", "late").status().IsWrongShard());
}

TEST_F(MoveSourceTest, FreezeWaitsForTheCopyAndUnfreezeServesAgain) {
  store::Writer w(source_);
  for (int i = 0; i < 200; i++) {
    ASSERT_TRUE(w.Put("k" + std::to_string(i), "v").ok());
  }
  MoveSource::Options o = MoveOptions();
  o.paused = true;
  auto m = MoveSource::Start(o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ((*m)->progress().keys_copied, 0u) << "a paused copier copied";
  EXPECT_EQ((*m)->Freeze().status().code(), StatusCode::kBusy);
  // Writes go on while paused, and are forwarded.
  ASSERT_TRUE(w.Put("new", "x").ok());
  EXPECT_EQ((*m)->progress().keys_forwarded, 1u);
  (*m)->SetPaused(false);
  ASSERT_TRUE(WaitCopied(m->get()).copied);
  ASSERT_TRUE((*m)->Freeze().ok());
  EXPECT_TRUE(w.Put("k1", "x").status().IsWrongShard());
  (*m)->Unfreeze();  // a cancelled hand-off
  EXPECT_TRUE(w.Put("k1", "y").ok());
  ExpectTargetEqualsSource();
}

// The target stops receiving (its move was cancelled): the move fails,
// the source's writes go on unharmed, and there is no hand-off.
TEST_F(MoveSourceTest, AFailedMoveLeavesTheSourceServing) {
  store::Writer w(source_);
  for (int i = 0; i < 50; i++) {
    ASSERT_TRUE(w.Put("k" + std::to_string(i), "v").ok());
  }
  auto m = MoveSource::Start(MoveOptions());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(WaitCopied(m->get()).copied);
  shards_.SetIncoming({});
  ASSERT_TRUE(w.Put("k1", "after").ok()) << "a failed forward failed a commit";
  EXPECT_TRUE((*m)->progress().failure.IsWrongShard());
  EXPECT_TRUE((*m)->Freeze().status().IsWrongShard());
  EXPECT_TRUE(w.Put("k2", "after").ok()) << "a failed hand-off froze";
  m->reset();
  EXPECT_TRUE(w.Put("k3", "after").ok());
  std::string got;
  ASSERT_TRUE(source_->Get("k1", &got).ok());
  EXPECT_EQ(got, "after");
}

}  // namespace
}  // namespace kv::server
