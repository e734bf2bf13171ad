// kvserver on a full keyspace: puts get no_space, deletes still go through
// (the reserve segment), nothing committed is lost.
#include "kv/store/pool.h"
#include "server_test_util.h"

namespace kv::e2e {
namespace {

class ServerSpaceTest : public InMemoryServerTest {};

TEST_F(ServerSpaceTest, FullKeyspaceRefusesPutsAndTakesDeletes) {
  StartServer({"--pool_size=16M", "--segment_size=64K"});
  RawClient c;
  Putter p{&c, {}, {}, 0};
  ConnectOk(&c, "default", &p.a);
  p.g = p.a.grant;
  p.tail = p.g.start;
  const std::string big(30000, 'b');
  const int stored = FillKeyspace(&p, big);
  ASSERT_FALSE(HasFailure());
  ASSERT_GT(stored, 10);
  // Still full for puts, on this connection and on a new one (admitted
  // without a grant: readers need none).
  EXPECT_EQ(p.Put("another", big, 90000).code(), StatusCode::kNoSpace);
  {
    RawClient reader;
    protocol::Accept ra;
    ConnectOk(&reader, "default", &ra);
    EXPECT_EQ(ra.grant.size, 0u);
    std::string bucket;
    EXPECT_TRUE(reader.Read(ra.read_desc, ra.index_offset, 64, &bucket).ok());
  }
  // A REFILL for a delete gets the reserve segment, deletes only.
  protocol::RefillAck rack;
  ASSERT_TRUE(RefillRetrying(&c, p.a, &rack, protocol::kRefillForDelete).ok());
  ASSERT_EQ(rack.status, StatusCode::kOk) << rack.message;
  EXPECT_EQ(rack.grant.flags & protocol::kGrantDeletesOnly,
            protocol::kGrantDeletesOnly);
  protocol::CommitAck ack;
  // A put there is refused (nothing applied; its range is consumed, as
  // any refused COMMIT's), a delete after it goes through.
  ASSERT_TRUE(
      PutRaw(&c, p.a, rack.grant, rack.grant.start, "k1", "x", &ack, false, 3)
          .ok());
  EXPECT_EQ(ack.status, StatusCode::kNoSpace) << ack.message;
  ASSERT_TRUE(PutRaw(&c, p.a, rack.grant,
                     rack.grant.start + record_format::RecordSize(2, 1), "k0",
                     "", &ack, true, 4)
                  .ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_TRUE(ack.flags & protocol::kAckHadPrevious);
  c.Disconnect();
  EXPECT_EQ(server_.Stop(), 0);
  store::PoolOptions ro;
  ro.read_only = true;
  auto pool = store::Pool::Open(pool_, ro);
  ASSERT_TRUE(pool.ok());
  auto ks = (*pool)->GetKeyspace("default");
  ASSERT_TRUE(ks.ok());
  std::string v;
  EXPECT_TRUE((*ks)->Get("k0", &v).IsNotFound());
  for (int i = 1; i < stored; i++) {
    ASSERT_TRUE((*ks)->Get("k" + std::to_string(i), &v).ok()) << i;
    EXPECT_EQ(v, big);
  }
  store::CheckReport report = (*pool)->Check();
  EXPECT_TRUE(report.ok()) << report.problems.front();
}

}  // namespace
}  // namespace kv::e2e
