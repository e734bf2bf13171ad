// Crash consistency of the expiry sweep (docs/format.md, "Expiring keys"):
// clearing the slot of a key's expired newest version must never let an
// older version of the key come back after a crash. The older version's
// slot was cleared by the update that replaced it, a clear made durable
// lazily; the sweep makes those clears durable before its own.
//
// Crash images at every persist point of the sweep and after it returns,
// reopened (writable: recovery repairs) and read.
#include <gtest/gtest.h>

#include "kv/server_clock.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "rare_state_fixture.h"

namespace kv::store {
namespace {

using testing::CrashEverywhere;
using testing::CrashPoint;
using testing::ExpectOneOf;
using testing::kAbsent;
using testing::KeysWithHome;
using testing::kRandomImages;
using testing::Read;

class ExpiryCrashTest : public testing::TrackedKeyspaceTest {};

TEST_F(ExpiryCrashTest, ASweptExpiredKeyNeverUncoversAnOlderVersion) {
  // Home bucket 3 full (seven other keys and k's first version), so that
  // k's second version lands in the probe bucket: another cache line,
  // which a crash may keep or lose independently of the home bucket.
  const std::vector<std::string> keys = KeysWithHome(3, 8, 16, "h");
  const std::string k = keys[0];
  int64_t offset_ms = 0;
  ks_->SetClockForTesting([&] { return UnixMillisNow() + offset_ms; });
  {
    Writer w(ks_);
    for (size_t i = 1; i < keys.size(); i++) {
      ASSERT_TRUE(w.Put(keys[i], "other").ok());
    }
    ASSERT_TRUE(w.Put(k, "v1 never expires").ok());
    // The update's clear of v1's slot is not persisted by it.
    ASSERT_TRUE(w.PutExpiring(k, "v2", 1000).ok());
    ASSERT_TRUE(w.Close().ok());
  }
  ASSERT_EQ(Read(ks_.get(), k), "v2");
  offset_ms = 60'000;  // v2 has expired
  ASSERT_EQ(Read(ks_.get(), k), kAbsent);
  const int points = CrashEverywhere(
      &tp_.tracker(), kRandomImages,
      [&](Pool* p, const CrashPoint& at) {
        // The reopened keyspace runs on the real clock: v2 may still be
        // live there (or already cleared by the sweep). Never v1.
        ExpectOneOf(p, at, k, {"v2", kAbsent});
        for (size_t i = 1; i < keys.size(); i++) {
          ExpectOneOf(p, at, keys[i], {"other"});
        }
        EXPECT_TRUE(p->Check().ok()) << at.ToString();
      },
      [&] {
        auto swept = ks_->ReclaimExpired();
        ASSERT_TRUE(swept.ok()) << swept.status().ToString();
        ASSERT_EQ(*swept, 1u);
      });
  EXPECT_GE(points, 2);  // the deferred clears first, then the sweep's
  EXPECT_EQ(Read(ks_.get(), k), kAbsent);
  EXPECT_EQ(ks_->Stats().keys, 7u);
}

}  // namespace
}  // namespace kv::store
