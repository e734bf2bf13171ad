// ClusterMap (cluster_map.h) and the slot function (kv/cluster_slots.h):
// routing, every validation error, the JSON form and hostile JSON.
#include "kv/cluster/cluster_map.h"

#include <gtest/gtest.h>

#include <string>

#include "kv/index_format.h"

namespace kv::cluster {
namespace {

// Two shards: slots 0..511 on nodes {1, 2}, 512..1023 on node 3.
std::vector<KeyspaceShards> TwoShards() {
  KeyspaceShards ks;
  ks.name = "default";
  ks.id = 7;
  ks.shards.push_back({0, 4, {1, 2}, {{0, 511}}});
  ks.shards.push_back({1, 1, {3}, {{512, 1023}}});
  return {ks};
}

TEST(ClusterSlotsTest, TheSlotIsBitsSixteenToTwentyFiveOfTheHash) {
  EXPECT_EQ(SlotOf(0), 0u);
  EXPECT_EQ(SlotOf(uint64_t{1} << 16), 1u);
  EXPECT_EQ(SlotOf(uint64_t{1023} << 16), 1023u);
  EXPECT_EQ(SlotOf(uint64_t{1024} << 16), 0u);
  // Independent of the fingerprint (bits 0..15) and the bucket (32..).
  const uint64_t h = index_format::HashKey("some key");
  EXPECT_EQ(SlotOf(h), SlotOf(h ^ 0xffff));
  EXPECT_EQ(SlotOf(h), SlotOf(h ^ (uint64_t{0xffffffff} << 32)));
  EXPECT_NE(SlotOf(h), SlotOf(h ^ (uint64_t{1} << 16)));
}

TEST(ClusterMapTest, KeysRouteToTheShardOfTheirSlot) {
  Result<ClusterMap> m = ClusterMap::Build(TwoShards());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const KeyspaceShards* ks = m->Find("default");
  ASSERT_NE(ks, nullptr);
  EXPECT_EQ(m->Find("other"), nullptr);
  EXPECT_EQ(m->ShardFor(*ks, uint64_t{511} << 16)->id, 0u);
  EXPECT_EQ(m->ShardFor(*ks, uint64_t{512} << 16)->id, 1u);
  EXPECT_EQ(m->ShardFor(*ks, uint64_t{512} << 16)->primary(), 3u);
  int per_shard[2] = {0, 0};
  for (int i = 0; i < 2000; i++) {
    const uint64_t h = index_format::HashKey("k" + std::to_string(i));
    per_shard[m->ShardFor(*ks, h)->id]++;
  }
  EXPECT_GT(per_shard[0], 800);  // the hash spreads keys over both
  EXPECT_GT(per_shard[1], 800);
  KeyspaceShards foreign = TwoShards()[0];
  EXPECT_EQ(m->ShardFor(foreign, 0), nullptr);  // not this map's
}

// Each way a map can be wrong, with the word its message must carry.
TEST(ClusterMapTest, BuildRefusesEveryInconsistency) {
  struct Case {
    const char* why;
    void (*edit)(std::vector<KeyspaceShards>*);
    const char* says;
  };
  const Case cases[] = {
      {"bad name", [](auto* v) { (*v)[0].name = "a b"; }, "keyspace name"},
      {"id 0", [](auto* v) { (*v)[0].id = 0; }, "id 0"},
      {"name of 58 bytes", [](auto* v) { (*v)[0].name = std::string(58, 'n'); },
       "at most 57 bytes"},
      {"id past the pool's limit",
       [](auto* v) { (*v)[0].id = kMaxClusterKeyspaceId + 1; },
       "outside 1..4194303"},
      {"id 2^32-1", [](auto* v) { (*v)[0].id = UINT32_MAX; },
       "outside 1..4194303"},
      {"shard id 1024", [](auto* v) { (*v)[0].shards[1].id = 1024; },
       "shard ids are 0..1023"},
      {"no shards", [](auto* v) { (*v)[0].shards.clear(); }, "shards needed"},
      {"same shard twice", [](auto* v) { (*v)[0].shards[1].id = 0; },
       "appears twice"},
      {"epoch 0", [](auto* v) { (*v)[0].shards[0].epoch = 0; }, "epoch 0"},
      {"no replicas", [](auto* v) { (*v)[0].shards[0].replicas.clear(); },
       "replicas needed"},
      {"nine replicas",
       [](auto* v) {
         (*v)[0].shards[0].replicas = {1, 2, 3, 4, 5, 6, 7, 8, 9};
       },
       "replicas needed"},
      {"node 0", [](auto* v) { (*v)[0].shards[0].replicas = {0}; },
       "node id 0"},
      {"node twice",
       [](auto* v) {
         (*v)[0].shards[0].replicas = {2, 2};
       },
       "two replicas"},
      {"gap",
       [](auto* v) {
         (*v)[0].shards[0].slots = {{0, 510}};
       },
       "slot 511 has no shard"},
      {"overlap",
       [](auto* v) {
         (*v)[0].shards[0].slots = {{0, 512}};
       },
       "slot 512 is in two shards"},
      {"reversed",
       [](auto* v) {
         (*v)[0].shards[0].slots = {{511, 0}};
       },
       "out of order"},
      {"past the end",
       [](auto* v) {
         (*v)[0].shards[1].slots = {{512, 1024}};
       },
       "outside 0..1023"},
      {"ranges descending",
       [](auto* v) {
         (*v)[0].shards[0].slots = {{256, 511}, {0, 255}};
       },
       "out of order"},
      {"no slots", [](auto* v) { (*v)[0].shards[0].slots.clear(); },
       "serves no slots"},
      {"same keyspace twice", [](auto* v) { v->push_back((*v)[0]); },
       "used twice"},
      {"same id twice",
       [](auto* v) {
         v->push_back((*v)[0]);
         (*v)[1].name = "second";
       },
       "used twice"},
  };
  for (const Case& c : cases) {
    std::vector<KeyspaceShards> v = TwoShards();
    c.edit(&v);
    Result<ClusterMap> m = ClusterMap::Build(v);
    ASSERT_FALSE(m.ok()) << c.why;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << c.why;
    EXPECT_NE(m.status().message().find(c.says), std::string::npos)
        << c.why << ": " << m.status().message();
  }
}

// The limits a shard's pool keyspace implies (kv/cluster_slots.h) are
// accepted exactly up to the edge.
TEST(ClusterMapTest, BuildAcceptsThePoolLimitsExactly) {
  std::vector<KeyspaceShards> v = TwoShards();
  v[0].name = std::string(kMaxClusterKeyspaceNameSize, 'n');
  v[0].id = kMaxClusterKeyspaceId;
  v[0].shards[1].id = kMaxShardId;
  Result<ClusterMap> m = ClusterMap::Build(v);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Result<ClusterMap> back = ClusterMap::Decode(m->Encode());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == *m);
}

TEST(ClusterMapTest, DecodeRefusesWhatAPoolCannotHoldAsCorruption) {
  const std::string good = ClusterMap::Build(TwoShards())->Encode();
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    return s.replace(s.find(from), from.size(), to);
  };
  const struct {
    std::string json;
    const char* says;
  } cases[] = {
      {with("\"name\":\"default\"",
            "\"name\":\"" + std::string(58, 'n') + "\""),
       "at most 57 bytes"},
      {with("\"id\":7", "\"id\":4194304"), "outside 1..4194303"},
      {with("\"id\":1,", "\"id\":1024,"), "shard ids are 0..1023"},
  };
  for (const auto& c : cases) {
    Result<ClusterMap> m = ClusterMap::Decode(c.json);
    ASSERT_FALSE(m.ok()) << c.json;
    EXPECT_EQ(m.status().code(), StatusCode::kCorruption) << c.json;
    EXPECT_EQ(m.status().message().rfind("cluster map: ", 0), 0u)
        << m.status().message();
    EXPECT_NE(m.status().message().find(c.says), std::string::npos)
        << m.status().message();
  }
}

TEST(ClusterMapTest, JsonRoundTripsAndIgnoresUnknownMembers) {
  Result<ClusterMap> m = ClusterMap::Build(TwoShards());
  ASSERT_TRUE(m.ok());
  const std::string json = m->Encode();
  Result<ClusterMap> back = ClusterMap::Decode(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << json;
  EXPECT_TRUE(*back == *m);
  EXPECT_EQ(back->Find("default")->shards[0].replicas,
            (std::vector<uint32_t>{1, 2}));
  // A newer writer's extra members are ignored.
  std::string extra = json;
  extra.insert(1, "\"owner_hint\":{\"x\":[1,2]},");
  Result<ClusterMap> e = ClusterMap::Decode(extra);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(*e == *m);
  Result<ClusterMap> empty = ClusterMap::Decode(ClusterMap().Encode());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->keyspaces().empty());
}

TEST(ClusterMapTest, HostileJsonIsCorruptionNeverACrash) {
  const std::string good = ClusterMap::Build(TwoShards())->Encode();
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from << " in " << good;
    return at == std::string::npos ? s : s.replace(at, from.size(), to);
  };
  const std::string cases[] = {
      "",
      "null",
      "[]",
      "{",
      good.substr(0, good.size() / 2),
      std::string(100000, '['),
      "{\"a\":" + std::string(50000, '{'),
      "\"" + std::string(1000, '\\'),
      with("\"format\":1", "\"format\":\"1\""),
      with("\"format\":1", "\"format\":0"),
      with("\"slots\":1024", "\"slots\":2048"),
      with("\"epoch\":4", "\"epoch\":-4"),
      with("\"epoch\":4", "\"epoch\":4294967296"),
      with("\"epoch\":4", "\"epoch\":1e3"),
      with("\"epoch\":4", "\"epoch\":99999999999999999999999"),
      with("\"id\":7", "\"id\":0"),
      with("\"replicas\":[1,2]", "\"replicas\":[1,\"2\"]"),
      with("\"replicas\":[1,2]", "\"replicas\":[1,4294967296]"),
      with("\"replicas\":[1,2]", "\"replicas\":{}"),
      with("[[0,511]]", "[[0,511,3]]"),
      with("[[0,511]]", "[[0,5000000000]]"),
      with("[[0,511]]", "[[0,510]]"),
      with("[[0,511]]", "[[-1,511]]"),
      with("\"name\":\"default\"", "\"name\":\"\""),
      with("\"name\":\"default\"", "\"name\":7"),
  };
  for (const std::string& c : cases) {
    Result<ClusterMap> m = ClusterMap::Decode(c);
    ASSERT_FALSE(m.ok()) << c.substr(0, 200);
    EXPECT_EQ(m.status().code(), StatusCode::kCorruption)
        << c.substr(0, 200) << ": " << m.status().ToString();
    EXPECT_EQ(m.status().message().rfind("cluster map: ", 0), 0u)
        << m.status().message();
  }
  std::string huge = good;
  huge.insert(
      1, "\"pad\":\"" + std::string(ClusterMap::kMaxJsonBytes, 'x') + "\",");
  EXPECT_EQ(ClusterMap::Decode(huge).status().code(), StatusCode::kCorruption);
}

TEST(ClusterMapTest, ANewerFormatAsksForAnUpgrade) {
  const std::string good = ClusterMap::Build(TwoShards())->Encode();
  std::string newer = good;
  newer.replace(newer.find("\"format\":1"), 10, "\"format\":2");
  Result<ClusterMap> m = ClusterMap::Decode(newer);
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("upgrade rpkv"), std::string::npos);
}

TEST(ClusterMapTest, ChangingReplicasBumpsTheEpochAndKeepsTheRest) {
  Result<ClusterMap> m = ClusterMap::Build(TwoShards());
  ASSERT_TRUE(m.ok());
  Result<ClusterMap> moved = m->WithReplicas("default", 1, {4, 3});
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  const Shard& s = moved->Find("default")->shards[1];
  EXPECT_EQ(s.epoch, 2u);
  EXPECT_EQ(s.primary(), 4u);
  EXPECT_EQ(moved->Find("default")->shards[0].epoch, 4u);  // untouched
  EXPECT_EQ(m->Find("default")->shards[1].epoch, 1u);      // a copy
  EXPECT_EQ(m->WithReplicas("nope", 1, {4}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(m->WithReplicas("default", 9, {4}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(m->WithReplicas("default", 1, {4, 4}).status().code(),
            StatusCode::kInvalidArgument);
  std::vector<KeyspaceShards> v = TwoShards();
  v[0].shards[1].epoch = UINT32_MAX;
  Result<ClusterMap> old = ClusterMap::Build(v);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->WithReplicas("default", 1, {4}).status().code(),
            StatusCode::kNoSpace);
}

}  // namespace
}  // namespace kv::cluster
