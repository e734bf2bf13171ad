// A fixture for crash tests of rare states: a keyspace on a TrackedPool
// (tracked bytes that outlive the Pool), and helpers to read keys from a
// reopened crash image, check it, write records as a remote writer does
// and get a given segment granted again.
#ifndef KV_STORE_TESTS_RARE_STATE_FIXTURE_H_
#define KV_STORE_TESTS_RARE_STATE_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "crash_util.h"
#include "kv/index_format.h"
#include "kv/record_format.h"
#include "kv/store/pool.h"

namespace kv::store::testing {

inline constexpr size_t kTrackedPoolSize = 1 << 20;
inline constexpr int kRandomImages = 24;
inline constexpr const char* kAbsent = "<absent>";

inline std::string Read(Keyspace* ks, const std::string& key) {
  std::string v;
  Status st = ks->Get(key, &v);
  if (st.IsNotFound()) return kAbsent;
  if (!st.ok()) return "<" + st.ToString() + ">";
  return v;
}

inline std::string Read(Pool* pool, const std::string& key) {
  auto ks = pool->GetKeyspace("ks");
  if (!ks.ok()) return "<no keyspace>";
  return Read(ks->get(), key);
}

inline uint64_t CountKeys(Pool* pool) {
  uint64_t n = 0;
  Status st = pool->GetKeyspace("ks").value()->ForEach(
      [&](const record_format::RecordView&) { return ++n > 0; });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return n;
}

// Check() clean and iteration shows exactly `keys` keys.
inline void ExpectConsistent(Pool* pool, const CrashPoint& at, uint64_t keys) {
  CheckReport r = pool->Check();
  EXPECT_TRUE(r.ok()) << at.ToString() << ": " << r.problems[0];
  EXPECT_EQ(CountKeys(pool), keys) << at.ToString();
}

// Expects `key` to read as one of `allowed` (kAbsent for none).
inline void ExpectOneOf(Pool* pool, const CrashPoint& at,
                        const std::string& key,
                        const std::set<std::string>& allowed) {
  const std::string got = Read(pool, key);
  EXPECT_TRUE(allowed.count(got)) << at.ToString() << ": '" << key
                                  << "' reads '" << got.substr(0, 24) << "'";
}

// Writes a record into a grant at `*tail`, as a remote writer does (with
// sequence 0, unless it forges one); `flush` makes it durable first (a
// client's persistent flush). Returns the commit request for it.
inline CommitRequest WriteRemote(Keyspace* ks, const SegmentGrant& g,
                                 uint64_t* tail, const std::string& key,
                                 const std::string& value, bool flush,
                                 uint64_t sequence = 0) {
  uint8_t* dst = ks->log_base() + g.log_offset + *tail;
  const size_t n =
      record_format::EncodeRecord(dst, ks->id(), sequence, false, key, value);
  if (flush) ks->persister()->Persist(dst, n);
  CommitRequest r;
  r.segment = g.segment;
  r.grant_id = g.grant_id;
  r.offset = *tail;
  r.length = static_cast<uint32_t>(n);
  r.key_hash = index_format::HashKey(key);
  *tail += n;
  return r;
}

class TrackedKeyspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = tp_.Create();
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    auto ks = pool_->CreateKeyspace("ks", Options());
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    ks_ = *ks;
  }
  // The keyspace's options (a subclass may test a format 3 keyspace).
  virtual KeyspaceOptions Options() const { return TinyKeyspace(); }

  // Index position of the slot holding `key`'s current version.
  int64_t SlotIndexOf(const std::string& key) {
    Version v;
    std::string got;
    if (!ks_->Get(key, &got, &v).ok()) return -1;
    const Keyspace::Region r = ks_->region();
    const auto* slots =
        reinterpret_cast<const uint64_t*>(r.base + r.index_offset);
    for (uint64_t i = 0; i < r.index_size / 8; i++) {
      if (slots[i] != 0 &&
          index_format::SlotLogOffset(slots[i]) == v.log_offset) {
        return static_cast<int64_t>(i);
      }
    }
    return -1;
  }

  // Grants until `segment` comes back from the free list (segments that
  // come first are returned unused, or held when they were returned with
  // a tail, as those are always granted first).
  SegmentGrant RegrantSegment(uint32_t segment) {
    for (int i = 0; i < 32; i++) {
      ks_->PreferSegmentForTesting(segment);  // else the highest comes
      auto g = ks_->GrantSegment();
      EXPECT_TRUE(g.ok()) << g.status().ToString();
      if (!g.ok()) break;
      if (g->segment == segment) return *g;
      if (g->start > 0) {
        held_.push_back(*g);
      } else {
        EXPECT_TRUE(ks_->ReturnSegment(*g).ok());
      }
    }
    ADD_FAILURE() << "segment " << segment << " was not granted again";
    return {};
  }

  TrackedPool tp_{kTrackedPoolSize};
  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
  std::vector<SegmentGrant> held_;
};

}  // namespace kv::store::testing

#endif  // KV_STORE_TESTS_RARE_STATE_FIXTURE_H_
