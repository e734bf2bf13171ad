// Controller on a FakeEtcd and a FakeClock, with nodes registered through
// Membership.
#include "kv/cluster/controller.h"

#include <gtest/gtest.h>

#include "cluster_test_util.h"
#include "kv/cluster/membership.h"

namespace kv::cluster {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeCluster;
using testing::FaultyEtcd;
using testing::WaitFor;

constexpr char kMapKey[] = "/rpkv/c/map";

class ControllerTest : public ::testing::Test {
 protected:
  void AddNode(uint32_t id) {
    Membership::Options o;
    o.cluster = "c";
    o.node_id = id;
    o.address = "127.0.0.1:" + std::to_string(7000 + id);
    o.lease.ttl = seconds(6);
    o.clock = &f_.clock;
    auto m = Membership::Join(f_.etcd, o, nullptr);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    nodes_[id] = std::move(*m);
  }

  Controller::Options Opts(uint32_t id) {
    Controller::Options o;
    o.cluster = "c";
    o.node_id = id;
    o.desired = {{"users", 4, 2}};
    o.lease.ttl = seconds(6);
    o.clock = &f_.clock;
    o.poll = milliseconds(20);
    return o;
  }

  std::optional<ClusterMap> Map() {
    Range r = f_.etcd.Get(kMapKey).value();
    if (r.kvs.empty()) return std::nullopt;
    Result<ClusterMap> m = ClusterMap::Decode(r.kvs[0].value);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::optional<ClusterMap>(*m) : std::nullopt;
  }

  // Advances both clocks in 1 s steps, letting `sleepers` keeper threads
  // renew after each.
  void Run(seconds total, int sleepers) {
    for (int i = 0; i < total.count(); i++) {
      f_.Advance(seconds(1));
      ASSERT_TRUE(WaitFor([&] { return f_.clock.sleepers() >= sleepers; }));
    }
  }

  bool MapWithout(uint32_t node) {
    std::optional<ClusterMap> m = Map();
    if (!m) return false;
    for (const auto& ks : m->keyspaces()) {
      for (const auto& s : ks.shards) {
        for (uint32_t r : s.replicas) {
          if (r == node) return false;
        }
      }
    }
    return true;
  }

  FakeCluster f_;
  std::map<uint32_t, std::unique_ptr<Membership>> nodes_;
};

TEST_F(ControllerTest, CreatesTheMapForTheDesiredKeyspaces) {
  for (uint32_t id : {1, 2, 3}) AddNode(id);
  auto c = Controller::Start(f_.etcd, Opts(1));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return Map().has_value(); }));
  ClusterMap m = *Map();
  ASSERT_EQ(m.keyspaces().size(), 1u);
  EXPECT_EQ(m.keyspaces()[0].name, "users");
  EXPECT_EQ(m.keyspaces()[0].shards.size(), 4u);
  for (const Shard& s : m.keyspaces()[0].shards) {
    EXPECT_EQ(s.replicas.size(), 2u);
  }
  ASSERT_TRUE(WaitFor([&] { return (*c)->stats().passes >= 2; }));
  Controller::Stats st = (*c)->stats();
  EXPECT_EQ(st.writes, 1);  // the pass after its own write changes nothing
  EXPECT_EQ(st.last_changes.size(), 1u);
  EXPECT_TRUE(st.last_error.empty()) << st.last_error;
}

// A dead node leaves every replica set it was in (epoch + 1); no empty
// node takes its place in the map: the degraded shards get a join record
// instead (a new backup catches up first; max_moves 1: one at a time).
TEST_F(ControllerTest, ADeadNodesShardsDropItAndAJoinIsPlanned) {
  for (uint32_t id : {1, 2, 3}) AddNode(id);
  auto c = Controller::Start(f_.etcd, Opts(1));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(WaitFor([&] { return Map().has_value(); }));
  const ClusterMap before = *Map();
  nodes_.erase(3);                  // crashes: no Leave, its lease expires
  Run(seconds(7), /*sleepers=*/6);  // 2 memberships + the election
  ASSERT_TRUE(WaitFor([&] { return MapWithout(3); }));
  ClusterMap after = *Map();
  const auto& old_shards = before.keyspaces()[0].shards;
  const auto& new_shards = after.keyspaces()[0].shards;
  bool degraded = false;
  for (size_t i = 0; i < new_shards.size(); i++) {
    std::vector<uint32_t> kept;
    for (uint32_t n : old_shards[i].replicas) {
      if (n != 3) kept.push_back(n);
    }
    const bool had3 = kept.size() != old_shards[i].replicas.size();
    degraded |= had3;
    EXPECT_EQ(new_shards[i].epoch, old_shards[i].epoch + (had3 ? 1 : 0));
    EXPECT_EQ(new_shards[i].replicas, kept);
  }
  ASSERT_TRUE(degraded);
  ASSERT_TRUE(WaitFor([&] {
    Range r = f_.etcd.GetPrefix("/rpkv/c/moves/").value();
    return r.kvs.size() == 1 &&
           r.kvs[0].value.find(R"("join":true)") != std::string::npos;
  }));
}

TEST_F(ControllerTest, LosesATxnRaceAndRetriesOnAFreshRead) {
  AddNode(1);
  FaultyEtcd racy(f_.etcd);
  // Just before the controller's first map write, someone else writes one.
  const ClusterMap theirs =
      ClusterMap::Build({{"other", 7, {{0, 1, {1}, {{0, 1023}}}}}}).value();
  racy.SetBeforeTxnPutting(kMapKey, [&] {
    ASSERT_TRUE(f_.etcd.Put(kMapKey, theirs.Encode()).ok());
  });
  auto c = Controller::Start(racy, Opts(1));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(WaitFor([&] {
    std::optional<ClusterMap> m = Map();
    return m && m->Find("users") != nullptr;
  }));
  ClusterMap m = *Map();
  ASSERT_NE(m.Find("other"), nullptr);  // not overwritten
  EXPECT_EQ(m.Find("users")->id, 8u);   // planned on the fresh read
  // The map can be seen in etcd just before the writer counts it.
  ASSERT_TRUE(WaitFor([&] { return (*c)->stats().writes == 1; }));
  Controller::Stats st = (*c)->stats();
  EXPECT_EQ(st.lost_races, 1);
  EXPECT_EQ(st.writes, 1);
}

TEST_F(ControllerTest, TwoControllersNeverBothWrite) {
  for (uint32_t id : {1, 2, 3}) AddNode(id);
  FaultyEtcd a_link(f_.etcd), b_link(f_.etcd);
  auto a = Controller::Start(a_link, Opts(1));
  auto b = Controller::Start(b_link, Opts(2));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(WaitFor([&] { return Map().has_value(); }));
  const bool a_leads = (*a)->election().terms_won() == 1;
  Controller& leader = a_leads ? **a : **b;
  Controller& follower = a_leads ? **b : **a;
  FaultyEtcd& follower_link = a_leads ? b_link : a_link;
  EXPECT_EQ(follower.election().terms_won(), 0);
  // A node dies: the leader rewrites the map, the follower does nothing.
  nodes_.erase(3);
  Run(seconds(7), /*sleepers=*/8);  // 2 memberships, 2 election leases
  ASSERT_TRUE(WaitFor([&] { return MapWithout(3); }));
  EXPECT_EQ(follower_link.TxnsPutting(kMapKey), 0);
  EXPECT_EQ(follower.stats().passes, 0);
  // The first map, the repair, one join record for a degraded shard.
  EXPECT_TRUE(WaitFor([&] { return leader.stats().writes == 3; }));
  // The leader stops: the follower takes over and serves the next change
  // (a keyspace asked for).
  leader.Stop();
  ASSERT_TRUE(WaitFor(
      [&] { return follower.election().Leading(f_.clock.Now()).has_value(); }));
  ASSERT_TRUE(
      f_.etcd.Put("/rpkv/c/keyspaces/more", R"({"shards":1,"replicas":1})")
          .ok());
  ASSERT_TRUE(WaitFor([&] { return Map() && Map()->Find("more") != nullptr; }));
  EXPECT_TRUE(WaitFor([&] { return follower.stats().writes >= 1; }));
}

TEST_F(ControllerTest, GarbageMapIsReportedNotOverwritten) {
  AddNode(1);
  ASSERT_TRUE(f_.etcd.Put(kMapKey, "{not json").ok());
  auto c = Controller::Start(f_.etcd, Opts(1));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(WaitFor([&] {
    return (*c)->stats().last_error.find("does not decode") !=
           std::string::npos;
  }));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(f_.etcd.Get(kMapKey)->kvs.at(0).value, "{not json");
  EXPECT_EQ((*c)->stats().writes, 0);
  // A person deletes it: the controller writes a fresh map.
  ASSERT_TRUE(f_.etcd.Delete(kMapKey).ok());
  ASSERT_TRUE(WaitFor([&] { return Map().has_value(); }));
}

TEST_F(ControllerTest, CreatesTheKeyspacesDesiredInEtcd) {
  AddNode(1);
  AddNode(2);
  ASSERT_TRUE(f_.etcd
                  .Put("/rpkv/c/keyspaces/orders",
                       KeyspaceSpec{"orders", 2, 2}.Encode())
                  .ok());
  Controller::Options o = Opts(1);
  o.desired.clear();
  auto c = Controller::Start(f_.etcd, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return Map().has_value(); }));
  ClusterMap m = *Map();
  ASSERT_EQ(m.keyspaces().size(), 1u);
  const KeyspaceShards* orders = m.Find("orders");
  ASSERT_NE(orders, nullptr);
  ASSERT_EQ(orders->shards.size(), 2u);
  EXPECT_EQ(orders->shards[0].replicas.size(), 2u);
  // A key written while the controller runs starts a pass of its own.
  ASSERT_TRUE(
      f_.etcd.Put("/rpkv/c/keyspaces/items", R"({"shards":3,"replicas":1})")
          .ok());
  ASSERT_TRUE(WaitFor([&] {
    std::optional<ClusterMap> now = Map();
    return now && now->Find("items") != nullptr;
  }));
  m = *Map();
  EXPECT_EQ(m.Find("items")->shards.size(), 3u);
  EXPECT_EQ(m.Find("items")->shards[0].replicas.size(), 1u);
  EXPECT_EQ(m.Find("orders")->id, 1u);  // untouched
  EXPECT_EQ(m.Find("orders")->shards[0].epoch, 1u);
  EXPECT_EQ(m.Find("items")->id, 2u);
  EXPECT_TRUE((*c)->stats().last_error.empty()) << (*c)->stats().last_error;
}

TEST_F(ControllerTest, GarbageDesiredKeysAreReportedAndSkipped) {
  AddNode(1);
  const std::pair<std::string, std::string> garbage[] = {
      {"/rpkv/c/keyspaces/bad", "{not json"},
      {"/rpkv/c/keyspaces/zero", R"({"shards":0,"replicas":1})"},
      {"/rpkv/c/keyspaces/bad name", R"({"shards":1,"replicas":1})"},
      {"/rpkv/c/keyspaces/" + std::string(58, 'n'),
       R"({"shards":1,"replicas":1})"},
      {"/rpkv/c/keyspaces/a/b", R"({"shards":1,"replicas":1})"},
  };
  for (const auto& [key, value] : garbage) {
    ASSERT_TRUE(f_.etcd.Put(key, value).ok());
  }
  ASSERT_TRUE(
      f_.etcd.Put("/rpkv/c/keyspaces/good", R"({"shards":2,"replicas":1})")
          .ok());
  auto c = Controller::Start(f_.etcd, Opts(1));  // desires "users" too
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(WaitFor([&] { return Map().has_value(); }));
  ClusterMap m = *Map();
  EXPECT_EQ(m.keyspaces().size(), 2u);
  EXPECT_NE(m.Find("users"), nullptr);
  ASSERT_NE(m.Find("good"), nullptr);
  EXPECT_EQ(m.Find("good")->shards.size(), 2u);
  ASSERT_TRUE(WaitFor([&] { return (*c)->stats().passes >= 2; }));
  Controller::Stats st = (*c)->stats();
  EXPECT_TRUE(st.last_error.empty()) << st.last_error;
  std::string all;
  for (const std::string& p : st.last_problems) all += p + "\n";
  EXPECT_EQ(st.last_problems.size(), std::size(garbage)) << all;
  EXPECT_NE(all.find("ignoring /rpkv/c/keyspaces/bad: keyspace spec 'bad': "
                     "not a JSON object"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("keyspace spec 'zero': \"shards\" must be an integer"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("/rpkv/c/keyspaces/bad name does not name a keyspace"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("at most 57 bytes"), std::string::npos) << all;
  EXPECT_NE(all.find("/rpkv/c/keyspaces/a/b does not name a keyspace"),
            std::string::npos)
      << all;
  // Nothing of the garbage was written back or removed.
  EXPECT_EQ(f_.etcd.Get("/rpkv/c/keyspaces/bad")->kvs.at(0).value, "{not json");
}

TEST_F(ControllerTest, TheOptionsWinOverAKeyOfTheSameName) {
  AddNode(1);
  AddNode(2);
  ASSERT_TRUE(
      f_.etcd.Put("/rpkv/c/keyspaces/users", R"({"shards":1,"replicas":1})")
          .ok());
  auto c = Controller::Start(f_.etcd, Opts(1));  // users: 4 shards x 2
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(WaitFor([&] { return Map().has_value(); }));
  const ClusterMap m = *Map();
  const KeyspaceShards* users = m.Find("users");
  ASSERT_NE(users, nullptr);
  EXPECT_EQ(users->shards.size(), 4u);
  EXPECT_EQ(users->shards[0].replicas.size(), 2u);
}

TEST_F(ControllerTest, StopReturnsPromptlyAndResigns) {
  AddNode(1);
  auto c = Controller::Start(f_.etcd, Opts(1));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(WaitFor([&] { return Map().has_value(); }));
  const auto t = std::chrono::steady_clock::now();
  (*c)->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t, milliseconds(1000));
  EXPECT_TRUE(f_.etcd.Get("/rpkv/c/controller")->kvs.empty());
  (*c)->Stop();  // idempotent
}

TEST_F(ControllerTest, BadOptionsAreRefused) {
  Controller::Options o = Opts(1);
  o.desired = {{"users", 0, 1}};
  EXPECT_EQ(Controller::Start(f_.etcd, o).status().code(),
            StatusCode::kInvalidArgument);
  o = Opts(0);
  EXPECT_EQ(Controller::Start(f_.etcd, o).status().code(),
            StatusCode::kInvalidArgument);
  o = Opts(1);
  o.max_txn_attempts = 0;
  EXPECT_EQ(Controller::Start(f_.etcd, o).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kv::cluster
