// End-to-end: kv::Client against a real kvserver process on 127.0.0.1.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "client_fixture.h"
#include "kv/client/client.h"
#include "kv/record_format.h"

namespace kv::e2e {
namespace {

TEST_F(ClientTest, PutGetOverwriteDeleteExists) {
  auto c = Open();
  KeyVersion v1, v2;
  ASSERT_TRUE(c->Put("apple", "red", {.version = &v1}).ok());
  std::string got;
  KeyVersion seen;
  ASSERT_TRUE(c->Get("apple", &got, &seen).ok());
  EXPECT_EQ(got, "red");
  EXPECT_EQ(seen.sequence, v1.sequence);
  ASSERT_TRUE(c->Put("apple", "green", {.version = &v2}).ok());
  EXPECT_GT(v2.sequence, v1.sequence);
  ASSERT_TRUE(c->Get("apple", &got).ok());
  EXPECT_EQ(got, "green");
  EXPECT_TRUE(c->Exists("apple").value());
  bool had = false;
  ASSERT_TRUE(c->Delete("apple", {}, &had).ok());
  EXPECT_TRUE(had);
  EXPECT_TRUE(c->Get("apple", &got).IsNotFound());
  EXPECT_FALSE(c->Exists("apple").value());
  // Deleting an absent key is ok and says so.
  ASSERT_TRUE(c->Delete("apple", {}, &had).ok());
  EXPECT_FALSE(had);
  // A second connection sees the same state (reads are one-sided).
  auto d = Open();
  EXPECT_TRUE(d->Get("apple", &got).IsNotFound());
  ASSERT_TRUE(c->Put("pear", "yellow").ok());
  ASSERT_TRUE(d->Get("pear", &got).ok());
  EXPECT_EQ(got, "yellow");
}

TEST_F(ClientTest, AWarmGetIsOneRoundTripAColdOneIsNot) {
  auto c = Open();
  ASSERT_TRUE(c->Put("warm", "v1").ok());  // the put caches the slot
  std::string got;
  ASSERT_TRUE(c->Get("warm", &got).ok());
  EXPECT_EQ(c->stats().gets_one_round_trip, 1u);
  EXPECT_EQ(c->stats().gets_cold, 0u);
  // Another client's update makes the cached slot stale: the get notices
  // (the neighbourhood no longer holds it), goes cold, returns the new value.
  auto d = Open();
  ASSERT_TRUE(d->Put("warm", "v2").ok());
  ASSERT_TRUE(c->Get("warm", &got).ok());
  EXPECT_EQ(got, "v2");
  EXPECT_EQ(c->stats().gets_cold, 1u);
  // ... and caches what it found: warm again.
  ASSERT_TRUE(c->Get("warm", &got).ok());
  EXPECT_EQ(c->stats().gets_one_round_trip, 2u);
  // A client that never wrote the key starts cold.
  ASSERT_TRUE(d->Get("pear-never", &got).IsNotFound());
  EXPECT_EQ(d->stats().gets_cold, 1u);
}

TEST_F(ClientTest, EdgeSizesAndBinaryBytes) {
  auto c = Open();
  std::string got;
  ASSERT_TRUE(c->Put("e", "").ok());
  ASSERT_TRUE(c->Get("e", &got).ok());
  EXPECT_EQ(got, "");
  const std::string k1(1, 'k'), k1024(1024, 'K');
  ASSERT_TRUE(c->Put(k1, "one").ok());
  ASSERT_TRUE(c->Put(k1024, "big key").ok());
  ASSERT_TRUE(c->Get(k1024, &got).ok());
  EXPECT_EQ(got, "big key");
  EXPECT_TRUE(c->Put(std::string(1025, 'x'), "v").IsInvalidArgument());
  EXPECT_TRUE(c->Put("", "v").IsInvalidArgument());
  const std::string bk("a\0b\0", 4), bv("\0\xff\0\n\r", 5);
  ASSERT_TRUE(c->Put(bk, bv).ok());
  ASSERT_TRUE(c->Get(bk, &got).ok());
  EXPECT_EQ(got, bv);
  EXPECT_TRUE(c->Get(std::string("a\0b", 3), &got).IsNotFound());
}

TEST_F(ClientTest, ValueAtTheLimitAndOneOver) {
  auto c = Open();
  const uint32_t max = c->max_value_size();
  ASSERT_GT(max, 0u);
  std::string big(max, 'v');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i);
  ASSERT_TRUE(c->Put("big", big).ok());
  std::string got;
  ASSERT_TRUE(c->Get("big", &got).ok());
  EXPECT_EQ(got, big);
  Status over = c->Put("big", big + "x");
  EXPECT_TRUE(over.IsInvalidArgument()) << over.ToString();
  EXPECT_NE(over.message().find(std::to_string(max)), std::string::npos)
      << over.message();
  // Nothing changed, the connection still works.
  ASSERT_TRUE(c->Get("big", &got).ok());
  EXPECT_EQ(got, big);
}

TEST_F(ClientTest, ManyKeysForceGrantRefills) {
  auto c = Open();
  // 64 KiB segments (fixture): 3,000 records of ~200 bytes span ~10.
  const std::string pad(150, 'p');
  for (int i = 0; i < 3000; i++) {
    ASSERT_TRUE(c->Put("key" + std::to_string(i), pad + std::to_string(i)).ok())
        << i;
  }
  auto d = Open();
  std::string got;
  for (int i = 0; i < 3000; i += 7) {
    ASSERT_TRUE(d->Get("key" + std::to_string(i), &got).ok()) << i;
    EXPECT_EQ(got, pad + std::to_string(i));
  }
  auto stats = c->Info(Client::InfoTopic::kStats);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_NE(stats->find("refills"), std::string::npos) << *stats;
}

TEST_F(ClientTest, BatchKeepsManyInFlightAndReportsEach) {
  auto c = Open();
  Batch b;
  for (int i = 0; i < 200; i++) {
    b.Put("b" + std::to_string(i), "value" + std::to_string(i));
  }
  b.Put(std::string(2000, 'x'), "bad key");  // its own error only
  ASSERT_TRUE(c->Execute(&b).ok());
  for (int i = 0; i < 200; i++) {
    EXPECT_TRUE(b.result(i).status.ok()) << i << b.result(i).status.ToString();
  }
  EXPECT_TRUE(b.result(200).status.IsInvalidArgument());
  Batch g;
  for (int i = 0; i < 200; i++) g.Get("b" + std::to_string(i));
  g.Get("absent");
  ASSERT_TRUE(c->Execute(&g).ok());
  for (int i = 0; i < 200; i++) {
    ASSERT_TRUE(g.result(i).status.ok()) << i;
    EXPECT_EQ(g.result(i).value, "value" + std::to_string(i));
  }
  EXPECT_TRUE(g.result(200).status.IsNotFound());
  Batch d;
  for (int i = 0; i < 200; i += 2) d.Delete("b" + std::to_string(i));
  ASSERT_TRUE(c->Execute(&d).ok());
  std::string got;
  EXPECT_TRUE(c->Get("b0", &got).IsNotFound());
  EXPECT_TRUE(c->Get("b1", &got).ok());
}

TEST_F(ClientTest, ConditionalWrites) {
  auto c = Open();
  KeyVersion v;
  ASSERT_TRUE(c->Put("cas", "a", {.if_absent = true, .version = &v}).ok());
  Status again = c->Put("cas", "b", {.if_absent = true});
  EXPECT_TRUE(again.IsConditionFailed()) << again.ToString();
  std::string got;
  ASSERT_TRUE(c->Get("cas", &got).ok());
  EXPECT_EQ(got, "a");
  KeyVersion v2;
  ASSERT_TRUE(
      c->Put("cas", "b", {.if_version = v.sequence, .version = &v2}).ok());
  EXPECT_TRUE(
      c->Put("cas", "stale", {.if_version = v.sequence}).IsConditionFailed());
  EXPECT_TRUE(c->Delete("cas", {.if_version = v.sequence}).IsConditionFailed());
  ASSERT_TRUE(c->Get("cas", &got).ok());
  EXPECT_EQ(got, "b");
  ASSERT_TRUE(c->Delete("cas", {.if_version = v2.sequence}).ok());
  EXPECT_TRUE(c->Get("cas", &got).IsNotFound());
}

TEST_F(ClientTest, ScanFindsLiveKeysByPrefix) {
  auto c = Open();
  for (int i = 0; i < 50; i++)
    ASSERT_TRUE(c->Put("s/" + std::to_string(i), "v").ok());
  ASSERT_TRUE(c->Put("other", "v").ok());
  ASSERT_TRUE(c->Delete("s/7").ok());
  std::map<std::string, std::string> seen;
  ASSERT_TRUE(c->Scan("s/", 0, [&](std::string_view k, std::string_view v) {
                 seen[std::string(k)] = std::string(v);
                 return true;
               }).ok());
  EXPECT_EQ(seen.size(), 49u);
  EXPECT_EQ(seen.count("s/7"), 0u);
  EXPECT_EQ(seen.count("other"), 0u);
  size_t n = 0;
  ASSERT_TRUE(c->Scan("", 10, [&](std::string_view, std::string_view) {
                 n++;
                 return true;
               }).ok());
  EXPECT_EQ(n, 10u);
}

TEST_F(ClientTest, ConnectErrorsSayWhatToDo) {
  ClientOptions o;
  o.server = "127.0.0.1:" + std::to_string(PickFreePort());
  auto none = Client::Connect(o);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("is kvserver running?"),
            std::string::npos)
      << none.status().ToString();

  o = Options();
  o.keyspace = "nope";
  auto unknown = Client::Connect(o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(unknown.status().IsNotFound()) << unknown.status().ToString();
  EXPECT_NE(unknown.status().message().find("nope"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("--create"), std::string::npos);

  o.create_if_missing = true;
  auto created = Client::Connect(o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE((*created)->Put("k", "in nope").ok());
  // A long name (over the 40 bytes that fit the private data) goes
  // through HELLO.
  o.keyspace = std::string(63, 'L');
  auto long_name = Client::Connect(o);
  ASSERT_TRUE(long_name.ok()) << long_name.status().ToString();
  std::string got;
  EXPECT_TRUE((*long_name)->Get("k", &got).IsNotFound());  // other keyspace

  o = Options();
  o.provider = "infiniband-please";
  EXPECT_TRUE(Client::Connect(o).status().IsInvalidArgument());
  o.provider = "tcp";
  EXPECT_NE(Open(o), nullptr);
  o.keyspace = "bad name!";
  EXPECT_TRUE(Client::Connect(o).status().IsInvalidArgument());
  o = Options();
  o.server = "no-port";
  EXPECT_TRUE(Client::Connect(o).status().IsInvalidArgument());
}

TEST_F(ClientTest, InfoAndPing) {
  auto c = Open();
  auto ks = c->Info(Client::InfoTopic::kKeyspaces);
  ASSERT_TRUE(ks.ok()) << ks.status().ToString();
  EXPECT_NE(ks->find("default"), std::string::npos);
  auto server = c->Info(Client::InfoTopic::kServer);
  ASSERT_TRUE(server.ok());
  EXPECT_FALSE(server->empty());
  auto rtt = c->Ping();
  ASSERT_TRUE(rtt.ok());
  EXPECT_GT(rtt->count(), 0);
}

TEST_F(ClientTest, ServerGoneIsUnavailableNotAHang) {
  auto c = Open();
  ASSERT_TRUE(c->Put("k", "v").ok());
  server_.Kill9();
  std::string got;
  Status st = c->Put("k", "w");
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(st.code() == StatusCode::kUnavailable ||
              st.code() == StatusCode::kTimedOut)
      << st.ToString();
  // Restart: the acknowledged put is there.
  ASSERT_TRUE(server_.Restart().ok());
  auto d = Open();
  ASSERT_TRUE(d->Get("k", &got).ok());
  EXPECT_TRUE(got == "v" || got == "w") << got;
}

}  // namespace
}  // namespace kv::e2e
