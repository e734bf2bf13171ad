// kvserver's cleaner policy: overwrites make dead space; past the
// threshold the background cleaner compacts, and the data stays right.
#include <unistd.h>

#include "kv/store/pool.h"
#include "server_test_util.h"

namespace kv::e2e {
namespace {

class ServerCleanerTest : public InMemoryServerTest {};

TEST_F(ServerCleanerTest, OverwritesPastTheThresholdAreCompacted) {
  StartServer({"--segment_size=64K", "--cleaner_threshold=0.5"});
  RawClient c;
  Putter p{&c, {}, {}, 0};
  ConnectOk(&c, "default", &p.a);
  p.g = p.a.grant;
  p.tail = p.g.start;
  const std::string value(100, 'v');
  auto key = [](uint32_t k) { return "key" + std::to_string(k); };
  std::vector<std::string> latest(300);
  uint32_t id = 0;
  // 300 keys (about one segment), then 280 of them overwritten twice: the
  // first segments keep a few live records among many dead ones (a
  // segment with none left is freed without the cleaner).
  for (uint32_t round = 0; round < 3; round++) {
    for (uint32_t k = 0; k < (round == 0 ? 300u : 280u); k++) {
      latest[k] = value + std::to_string(id);
      Status st = p.Put(key(k), latest[k], id++);
      ASSERT_TRUE(st.ok()) << id << ": " << st.ToString();
    }
  }
  EXPECT_TRUE(server_.WaitForLog("segments cleaned", std::chrono::seconds(10)))
      << server_.StderrText();
  // Puts keep working after the cleaning.
  for (uint32_t k = 0; k < 4; k++) {
    latest[k] = "after" + std::to_string(k);
    ASSERT_TRUE(p.Put(key(k), latest[k], id++).ok());
  }
  c.Disconnect();
  EXPECT_EQ(server_.Stop(), 0);
  store::PoolOptions ro;
  ro.read_only = true;
  auto pool = store::Pool::Open(pool_, ro);
  ASSERT_TRUE(pool.ok());
  auto ks = (*pool)->GetKeyspace("default");
  ASSERT_TRUE(ks.ok());
  for (uint32_t k = 0; k < 300; k++) {
    std::string got;
    ASSERT_TRUE((*ks)->Get(key(k), &got).ok()) << k;
    EXPECT_EQ(got, latest[k]);
  }
}

}  // namespace
}  // namespace kv::e2e
