// End-to-end: a keyspace filled to the last segment answers no_space,
// keeps every acknowledged value intact and still takes deletes; the
// completion-wait modes all work.
#include <gtest/gtest.h>

#include <map>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

class ClientFullTest : public ClientTest {
 protected:
  std::vector<std::string> ServerFlags() override {
    return {"--pool=" + dir_ + "/pool", "--pool_size=16M",
            "--segment_size=64K"};
  }
};

TEST_F(ClientFullTest, FullKeyspaceIsNoSpaceNothingLostDeletesAccepted) {
  auto c = Open();
  const std::string value(4000, 'f');
  std::vector<std::string> stored;
  Status last;
  for (int i = 0; i < 100000; i++) {
    const std::string k = "full" + std::to_string(i);
    last = c->Put(k, value + std::to_string(i));
    if (!last.ok()) break;
    stored.push_back(k);
  }
  ASSERT_TRUE(last.IsNoSpace()) << last.ToString();
  ASSERT_GT(stored.size(), 100u);
  // The connection is still usable: every acknowledged value reads back.
  auto d = Open();
  std::string got;
  for (size_t i = 0; i < stored.size(); i++) {
    ASSERT_TRUE(d->Get(stored[i], &got).ok()) << stored[i];
    ASSERT_EQ(got, value + std::to_string(i));
  }
  // Further puts keep failing cleanly; deletes are accepted.
  EXPECT_TRUE(c->Put("one more", value).IsNoSpace());
  for (size_t i = 0; i < stored.size(); i += 2) {
    Status st = c->Delete(stored[i]);
    ASSERT_TRUE(st.ok()) << i << ": " << st.ToString();
  }
  for (size_t i = 0; i < stored.size(); i++) {
    Status st = d->Get(stored[i], &got);
    if (i % 2 == 0) {
      EXPECT_TRUE(st.IsNotFound()) << stored[i];
    } else {
      ASSERT_TRUE(st.ok()) << stored[i];
      EXPECT_EQ(got, value + std::to_string(i));
    }
  }
}

TEST_F(ClientFullTest, EveryWaitModeWorks) {
  for (auto mode : {ClientOptions::Wait::kPoll, ClientOptions::Wait::kBlock,
                    ClientOptions::Wait::kAdaptive}) {
    ClientOptions o = Options();
    o.wait = mode;
    auto c = Open(o);
    ASSERT_NE(c, nullptr);
    const std::string k = "wait" + std::to_string(static_cast<int>(mode));
    for (int i = 0; i < 20; i++) {
      ASSERT_TRUE(c->Put(k, std::to_string(i)).ok());
      std::string got;
      ASSERT_TRUE(c->Get(k, &got).ok());
      EXPECT_EQ(got, std::to_string(i));
    }
    Batch b;
    for (int i = 0; i < 64; i++) b.Put(k + "/" + std::to_string(i), "v");
    ASSERT_TRUE(c->Execute(&b).ok());
    for (size_t i = 0; i < b.size(); i++) EXPECT_TRUE(b.result(i).status.ok());
  }
}

// A batch deeper than the queues: the engine waits for send slots and
// queue room, which only send completions give back; each must wake it
// (it once slept to the timeout about one run in four in block mode).
TEST_F(ClientFullTest, DeepBatchesNeverStallOnSendCompletions) {
  ClientOptions o = Options();
  o.wait = ClientOptions::Wait::kBlock;
  o.max_inflight = 4;
  o.op_timeout = std::chrono::milliseconds(3000);
  auto c = Open(o);
  ASSERT_NE(c, nullptr);
  Batch put;
  for (int i = 0; i < 64; i++) put.Put("deep/" + std::to_string(i), "v");
  ASSERT_TRUE(c->Execute(&put).ok());
  for (int round = 0; round < 30; round++) {
    Batch again;
    for (int i = 0; i < 64; i++) again.Put("deep/" + std::to_string(i), "w");
    ASSERT_TRUE(c->Execute(&again).ok()) << round;
    Batch get;
    for (int i = 0; i < 64; i++) get.Get("deep/" + std::to_string(i));
    // A stall ends in the 3 s timeout: Execute fails.
    ASSERT_TRUE(c->Execute(&get).ok()) << round;
    for (size_t i = 0; i < get.size(); i++) {
      ASSERT_TRUE(get.result(i).status.ok()) << get.result(i).status.ToString();
    }
  }
}

}  // namespace
}  // namespace kv::e2e
