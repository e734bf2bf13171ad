// PeerLink against a real (in-process) kvserver acting as a move's
// target (peer_test_fixture.h). Records come from the source keyspace,
// read the way the move's copier reads them (Keyspace::WithCurrentRecord).
#include "peer_link.h"

#include "peer_test_fixture.h"

namespace kv::server {
namespace {

namespace rf = kv::record_format;
using PeerLinkTest = testing::PeerTest;
using testing::kEpoch;
using testing::kPeerKey;

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

// Submit does not wait: records pipeline (a window in flight, across
// several grants), tickets count up in order, and WaitFor of the last
// one means every record is committed on the target. A put and the
// delete that follows it, submitted in that order, arrive in that order.
TEST_F(PeerLinkTest, SubmittedRecordsPipelineInOrderAcrossGrants) {
  store::Writer w(source_);
  const std::string big(3000, 'p');
  std::vector<std::string> records;
  for (int i = 0; i < 400; i++) {
    const std::string key = "p" + std::to_string(i);
    ASSERT_TRUE(w.Put(key, big + std::to_string(i)).ok());
    records.push_back(CurrentRecord(key));
  }
  // A delete of p7, sealed as the source would, after its put.
  store::Version v;
  std::string got;
  ASSERT_TRUE(source_->Get("p7", &got, &v).ok());
  std::string tomb(rf::RecordSize(2, 0), '\0');
  rf::EncodeRecord(tomb.data(), kShardId, v.sequence + 1000, true, "p7", "");
  records.push_back(tomb);
  auto link = PeerLink::Open(LinkOptions());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  uint64_t last = 0;
  for (const std::string& r : records) {
    auto t =
        (*link)->Submit(reinterpret_cast<const uint8_t*>(r.data()), r.size());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(*t, last + 1);
    last = *t;
  }
  EXPECT_EQ((*link)->WaitFor(last + 1).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*link)->WaitFor(last).ok());
  EXPECT_EQ((*link)->records(), records.size());
  EXPECT_TRUE((*link)->WaitFor(1).ok());  // long done
  for (int i : {0, 199, 399}) {
    const std::string key = "p" + std::to_string(i);
    EXPECT_EQ(TargetValue(key), big + std::to_string(i)) << key;
  }
  EXPECT_EQ(TargetValue("p7"), "<not_found>");
}

// A staging ring of 16 KiB: a larger record waits for the window to
// drain, grows the ring and goes; small ones pipeline around it.
TEST_F(PeerLinkTest, ARecordLargerThanTheRingGrowsIt) {
  store::Writer w(source_);
  const std::string big(40 << 10, 'B');
  ASSERT_TRUE(w.Put("small0", "s0").ok());
  ASSERT_TRUE(w.Put("big", big).ok());
  ASSERT_TRUE(w.Put("small1", "s1").ok());
  PeerLink::Options o = LinkOptions();
  o.ring_bytes = 16 << 10;
  auto link = PeerLink::Open(o);
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  uint64_t last = 0;
  for (const char* key : {"small0", "big", "small1"}) {
    const std::string rec = CurrentRecord(key);
    auto t = (*link)->Submit(reinterpret_cast<const uint8_t*>(rec.data()),
                             rec.size());
    ASSERT_TRUE(t.ok()) << key << ": " << t.status().ToString();
    last = *t;
  }
  ASSERT_TRUE((*link)->WaitFor(last).ok());
  EXPECT_EQ(TargetValue("big"), big);
  EXPECT_EQ(TargetValue("small0"), "s0");
  EXPECT_EQ(TargetValue("small1"), "s1");
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
