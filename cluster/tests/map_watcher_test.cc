// MapWatcher (map_watcher.h) on the in-process FakeEtcd: the first read,
// changes through the watch in order, a map that does not decode is
// reported and skipped (the last good one stays), a deleted key changes
// nothing, compaction is survived, Refresh reads at once.
#include "kv/cluster/map_watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "kv/cluster/fake_etcd.h"

namespace kv::cluster {
namespace {

using std::chrono::milliseconds;

// Keyspace "k" (id `id`) in one shard on node 1.
std::string MapJson(uint32_t id) {
  return R"({"format": 1, "slots": 1024, "keyspaces": [{"name": "k", "id": )" +
         std::to_string(id) +
         R"(, "shards": [{"id": 0, "epoch": 1, "replicas": [1], )"
         R"("slots": [[0, 1023]]}]}]})";
}

template <typename F>
bool WaitFor(F f) {
  for (int i = 0; i < 500; i++) {
    if (f()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return f();
}

class MapWatcherTest : public ::testing::Test {
 protected:
  MapWatcher::Options Options() {
    MapWatcher::Options o;
    o.cluster = "c";
    o.poll = milliseconds(20);
    o.on_map = [this](const ClusterMap& m, int64_t rev) {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back({m.keyspaces().at(0).id, rev});
    };
    o.on_error = [this](const Status&) { errors_++; };
    return o;
  }
  std::vector<std::pair<uint32_t, int64_t>> Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  uint32_t IdOf(const MapWatcher& w) {
    auto m = w.map();
    return m ? m->keyspaces().at(0).id : 0;
  }

  FakeEtcd etcd_;
  std::mutex mu_;
  std::vector<std::pair<uint32_t, int64_t>> seen_;
  std::atomic<int> errors_{0};
};

TEST_F(MapWatcherTest, FollowsTheMapAndKeepsTheLastGoodOne) {
  ASSERT_TRUE(etcd_.Put("/rpkv/c/map", MapJson(1)).ok());
  auto w = MapWatcher::Start(etcd_, Options());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(IdOf(**w), 1u);  // read before Start returns
  ASSERT_EQ(Seen().size(), 1u);

  ASSERT_TRUE(etcd_.Put("/rpkv/c/map", MapJson(2)).ok());
  ASSERT_TRUE(WaitFor([&] { return IdOf(**w) == 2; }));

  // Garbage: reported, skipped; the map stays at 2.
  ASSERT_TRUE(etcd_.Put("/rpkv/c/map", "{not json").ok());
  ASSERT_TRUE(WaitFor([&] { return errors_.load() >= 1; }));
  EXPECT_EQ(IdOf(**w), 2u);
  // A deleted key changes nothing either.
  ASSERT_TRUE(etcd_.Delete("/rpkv/c/map").ok());
  ASSERT_TRUE(WaitFor([&] { return errors_.load() >= 2; }));
  EXPECT_EQ(IdOf(**w), 2u);

  ASSERT_TRUE(etcd_.Put("/rpkv/c/map", MapJson(3)).ok());
  ASSERT_TRUE(WaitFor([&] { return IdOf(**w) == 3; }));
  // Every good map once, in revision order.
  const auto seen = Seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1].first, 2u);
  EXPECT_EQ(seen[2].first, 3u);
  EXPECT_LT(seen[0].second, seen[1].second);
  EXPECT_LT(seen[1].second, seen[2].second);
  EXPECT_EQ((*w)->revision(), seen[2].second);
}

TEST_F(MapWatcherTest, NoMapYetThenOneAndARefresh) {
  auto w = MapWatcher::Start(etcd_, Options());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ((*w)->map(), nullptr);
  ASSERT_TRUE(etcd_.Put("/rpkv/c/map", MapJson(5)).ok());
  auto r = (*w)->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_NE(*r, nullptr);
  EXPECT_EQ((*r)->keyspaces().at(0).id, 5u);
  // The watch delivers the same revision later: not handed out twice.
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(Seen().size(), 1u);
  // A garbage map makes Refresh fail; the held one stays.
  ASSERT_TRUE(etcd_.Put("/rpkv/c/map", "[]").ok());
  EXPECT_FALSE((*w)->Refresh().ok());
  EXPECT_EQ(IdOf(**w), 5u);
}

TEST_F(MapWatcherTest, SurvivesCompactionOfWhatItWatches) {
  ASSERT_TRUE(etcd_.Put("/rpkv/c/map", MapJson(1)).ok());
  auto w = MapWatcher::Start(etcd_, Options());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(WaitFor([&] { return IdOf(**w) == 1; }));
  // Fall behind on purpose: the changes and the compaction happen while
  // the watch delivers nothing, then its stream drops and resumes from a
  // revision etcd no longer has.
  etcd_.HoldWatches(true);
  int64_t rev = 0;
  for (int i = 0; i < 3; i++) rev = etcd_.Put("/rpkv/other", "x").value();
  ASSERT_TRUE(etcd_.Put("/rpkv/c/map", MapJson(9)).ok());
  ASSERT_TRUE(etcd_.Compact(rev).ok());
  etcd_.BreakWatchStreams();
  etcd_.HoldWatches(false);
  ASSERT_TRUE(WaitFor([&] { return IdOf(**w) == 9; }));
  EXPECT_GE(errors_.load(), 1) << "the compaction was not met";
  ASSERT_TRUE(etcd_.Put("/rpkv/c/map", MapJson(10)).ok());
  ASSERT_TRUE(WaitFor([&] { return IdOf(**w) == 10; }));
}

TEST_F(MapWatcherTest, BadOptionsAreRefused) {
  MapWatcher::Options o = Options();
  o.cluster = "Bad/Name";
  EXPECT_TRUE(MapWatcher::Start(etcd_, o).status().IsInvalidArgument());
  o = Options();
  o.poll = milliseconds(0);
  EXPECT_TRUE(MapWatcher::Start(etcd_, o).status().IsInvalidArgument());
}

}  // namespace
}  // namespace kv::cluster
