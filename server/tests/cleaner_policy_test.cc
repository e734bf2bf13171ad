// CleanerPolicy's idle back-off: a pass says whether any keyspace moved
// since the previous one (cleaner_policy.h), so that an idle server's
// cleaner thread waits longer and longer between passes.
#include "cleaner_policy.h"

#include <gtest/gtest.h>
#include <librpma.h>

#include <memory>

#include "keyspace_table.h"
#include "kv/store/mapping.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "stats.h"

namespace kv::server {
namespace {

class CleanerPolicyPassTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = store::Pool::CreateOn(
        store::MemoryMapping::Zeroed(8 << 20, nullptr), store::PoolOptions{});
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(pool).value();
    store::KeyspaceOptions o;
    o.segment_size = 64 << 10;
    o.index_capacity = 1024;
    o.log_size = 1 << 20;
    o.max_value_size = 1024;
    auto ks = pool_->CreateKeyspace("ks", o);
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    ks_ = std::move(ks).value();
    ASSERT_EQ(rpma_utils_get_ibv_context("127.0.0.1",
                                         RPMA_UTIL_IBV_CONTEXT_LOCAL, &device_),
              0);
    table_ =
        std::make_unique<KeyspaceTable>(pool_.get(), device_, CreateOptions{});
    ASSERT_TRUE(table_->Get("ks", false, nullptr).ok());
  }
  void TearDown() override {
    table_.reset();
    ks_.reset();
    pool_.reset();
  }

  std::unique_ptr<store::Pool> pool_;
  std::shared_ptr<store::Keyspace> ks_;
  ibv_context* device_ = nullptr;
  std::unique_ptr<KeyspaceTable> table_;
  Stats stats_;
};

TEST_F(CleanerPolicyPassTest, APassSaysWhetherAnyKeyspaceMovedSinceTheLast) {
  CleanerPolicy cleaner(table_.get(), &stats_, 0.5,
                        std::chrono::milliseconds(200));
  EXPECT_TRUE(cleaner.RunOnce());   // the keyspace, seen for the first time
  EXPECT_FALSE(cleaner.RunOnce());  // nothing since: the thread backs off
  {
    store::Writer w(ks_);
    ASSERT_TRUE(w.Put("k", "v1").ok());
  }
  EXPECT_TRUE(cleaner.RunOnce());  // a put: back to the short period
  EXPECT_FALSE(cleaner.RunOnce());
  {
    store::Writer w(ks_);
    ASSERT_TRUE(w.Put("k", "v2").ok());  // an update: same key count
  }
  EXPECT_TRUE(cleaner.RunOnce());
  {
    store::Writer w(ks_);
    ASSERT_TRUE(w.Delete("k").ok());
  }
  EXPECT_TRUE(cleaner.RunOnce());
  EXPECT_FALSE(cleaner.RunOnce());
}

}  // namespace
}  // namespace kv::server
