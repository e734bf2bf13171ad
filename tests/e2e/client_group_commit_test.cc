// Group commit (kvserver --group_commit, server/README.md): many puts in
// flight are each acknowledged with its own result, in the order the
// client library expects, share persist points, and survive a restart;
// --group_commit=false gives one persist point per commit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

// A mixed batch: fresh keys, the same key several times (its puts must
// apply in order), deletes and conditional puts among the puts.
void RunMixedBatches(Client* c, std::map<std::string, std::string>* want) {
  for (int round = 0; round < 10; round++) {
    Batch b;
    std::vector<std::string> expect_ok;
    for (int i = 0; i < 40; i++) {
      const std::string key = "g" + std::to_string(i % 25);
      const std::string value =
          "r" + std::to_string(round) + "-" + std::to_string(i);
      if (i % 13 == 7) {
        b.Delete(key);
        (*want)[key] = "";
      } else {
        b.Put(key, value);
        (*want)[key] = value;
      }
    }
    b.Put("hot", "round" + std::to_string(round));
    (*want)["hot"] = "round" + std::to_string(round);
    ASSERT_TRUE(c->Execute(&b).ok());
    for (size_t i = 0; i < b.size(); i++) {
      ASSERT_TRUE(b.result(i).status.ok())
          << round << "/" << i << ": " << b.result(i).status.ToString();
    }
  }
  Batch cond;
  WriteOptions if_absent;
  if_absent.if_absent = true;
  cond.Put("hot", "never", if_absent);  // the key exists: condition_failed
  ASSERT_TRUE(c->Execute(&cond).ok());
  EXPECT_TRUE(cond.result(0).status.IsConditionFailed())
      << cond.result(0).status.ToString();
}

void ExpectValues(Client* c, const std::map<std::string, std::string>& want) {
  for (const auto& [key, value] : want) {
    std::string got;
    Status st = c->Get(key, &got);
    if (value.empty()) {
      EXPECT_TRUE(st.IsNotFound()) << key << ": " << st.ToString();
    } else {
      ASSERT_TRUE(st.ok()) << key << ": " << st.ToString();
      EXPECT_EQ(got, value) << key;
    }
  }
}

TEST_F(ClientTest, GroupCommitAcksEachPutAndSharesPersistPoints) {
  auto c = Open();
  std::map<std::string, std::string> want;
  RunMixedBatches(c.get(), &want);
  ExpectValues(c.get(), want);
  const uint64_t commits = StatsValue(c.get(), "commits");
  const uint64_t groups = StatsValue(c.get(), "commit_groups");
  EXPECT_GE(commits, 400u);
  EXPECT_GT(groups, 0u);
  EXPECT_LT(groups, commits);  // several puts per persist point
  c.reset();
  server_.Kill9();
  ASSERT_TRUE(server_.Restart().ok()) << server_.StderrText();
  auto again = Open();
  ExpectValues(again.get(), want);
}

class NoGroupCommitTest : public ClientTest {
 protected:
  std::vector<std::string> ServerFlags() override {
    auto f = ClientTest::ServerFlags();
    f.push_back("--group_commit=false");
    return f;
  }
};

TEST_F(NoGroupCommitTest, EveryCommitIsItsOwnPersistPoint) {
  auto c = Open();
  std::map<std::string, std::string> want;
  RunMixedBatches(c.get(), &want);
  ExpectValues(c.get(), want);
  EXPECT_GE(StatsValue(c.get(), "commits"), 400u);
  EXPECT_EQ(StatsValue(c.get(), "commit_groups"), 0u);
}

}  // namespace
}  // namespace kv::e2e
