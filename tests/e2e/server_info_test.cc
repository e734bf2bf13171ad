// INFO replies that do not fit one message: cut at a line boundary and
// said so, never cut silently (before: INFO stats stopped mid-line at
// ~4 KiB, about 16 keyspaces, with nothing to tell).
#include "kv/store/pool.h"
#include "server_test_util.h"

namespace kv::e2e {
namespace {

class ServerInfoTest : public ServerTest {
 protected:
  // A pool with `n` small keyspaces besides `default`.
  void MakePool(int n) {
    auto pool = store::Pool::Create(pool_, 64 << 20);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    store::KeyspaceOptions o;
    o.index_capacity = 64;
    o.segment_size = 64 << 10;
    o.log_size = 3 * (64 << 10);
    o.max_value_size = 1024;
    ASSERT_TRUE((*pool)->CreateKeyspace("default", o).ok());
    for (int i = 0; i < n; i++) {
      std::string name = "tenant_with_a_rather_long_name_" + std::to_string(i);
      ASSERT_TRUE((*pool)->CreateKeyspace(name, o).ok()) << name;
    }
  }
};

TEST_F(ServerInfoTest, StatsOfManyKeyspacesAreCutAtALineAndSaySo) {
  MakePool(40);
  StartServer({"--info_all_keyspaces"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a, 0, /*take_grant=*/false);
  const std::string text = Info(&c, protocol::InfoTopic::kStats);
  ASSERT_FALSE(text.empty());
  EXPECT_LE(text.size(), protocol::kMaxMessage - protocol::kHeaderSize - 1);
  ASSERT_EQ(text.back(), '\n');
  const size_t last = text.rfind('\n', text.size() - 2);
  const std::string note = text.substr(last + 1);
  EXPECT_EQ(note.rfind("(truncated: ", 0), 0u) << note;
  // Every line before the note is whole: "name value".
  size_t at = 0;
  int lines = 0;
  while (at < last) {
    const size_t nl = text.find('\n', at);
    const std::string line = text.substr(at, nl - at);
    EXPECT_NE(line.find(' '), std::string::npos) << line;
    EXPECT_TRUE(isdigit(static_cast<unsigned char>(line.back()))) << line;
    at = nl + 1;
    lines++;
  }
  EXPECT_GT(lines, 20);
  // The note counts what was left out.
  EXPECT_NE(note.find(" lines not shown"), std::string::npos) << note;
  // A list that fits is not cut: 41 names.
  const std::string names = Info(&c, protocol::InfoTopic::kKeyspaces);
  EXPECT_EQ(names.find("(truncated"), std::string::npos);
  EXPECT_NE(names.find("tenant_with_a_rather_long_name_39\n"),
            std::string::npos);
}

TEST_F(ServerInfoTest, WithoutTheFlagOnlyTheOwnKeyspaceIsShown) {
  MakePool(3);
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a, 0, /*take_grant=*/false);
  EXPECT_EQ(Info(&c, protocol::InfoTopic::kKeyspaces), "default\n");
  const std::string stats = Info(&c, protocol::InfoTopic::kStats);
  EXPECT_NE(stats.find("keyspace.default.keys "), std::string::npos) << stats;
  EXPECT_EQ(stats.find("tenant"), std::string::npos) << stats;
}

// The capacity figures of issue 22: the log's bytes used/total and the
// index's slots used/total, per keyspace.
TEST_F(ServerInfoTest, StatsShowEachKeyspacesCapacity) {
  MakePool(0);
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a, 0, /*take_grant=*/false);
  const std::string stats = Info(&c, protocol::InfoTopic::kStats);
  auto value = [&](const std::string& name) -> long long {
    const std::string key = "\nkeyspace.default." + name + " ";
    const size_t at = stats.find(key);
    if (at == std::string::npos) return -1;
    return std::stoll(stats.substr(at + key.size()));
  };
  EXPECT_EQ(value("log_bytes"), 3 * (64 << 10)) << stats;
  EXPECT_GE(value("log_bytes_used"), 0) << stats;
  EXPECT_LE(value("log_bytes_used"), value("log_bytes")) << stats;
  // 64 keys of capacity: at least 64 slots (8 a bucket, plus the spare
  // bucket at the end), none used.
  EXPECT_GE(value("index_slots"), 64) << stats;
  EXPECT_EQ(value("index_slots") % 8, 0) << stats;
  EXPECT_EQ(value("index_slots_used"), 0) << stats;
}

}  // namespace
}  // namespace kv::e2e
