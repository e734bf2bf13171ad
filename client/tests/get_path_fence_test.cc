// The readers' fence on the get path (kv/index_format.h, "the index
// header and the readers' fence"): a get concludes not_found only after
// the index header, read after the confirming neighbourhood read, shows
// the bucket count the get's reads used. Real growths (a kvserver whose
// keyspace starts with 16 buckets, another client adding keys between
// the reader's rounds) and scripted headers (torn, naming an index that
// cannot be).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "get_path_fixture.h"

namespace kv::client_test {
namespace {

using State = Op::State;

struct Rounds {
  int neigh = 0, records = 0, confirm = 0;
  void Count(const Op& op) {
    if (op.state == State::kNeighbourhood) neigh++;
    if (op.state == State::kRecords) records++;
    if (op.state == State::kConfirm) confirm++;
  }
};

// Keyspaces start with 16 buckets (--index_capacity=64) and grow as keys
// arrive.
class GetPathFenceTest : public GetPathTest {
 protected:
  static constexpr uint64_t kInitialBuckets = 16;
  std::vector<std::string> ServerFlags() override {
    std::vector<std::string> f = GetPathTest::ServerFlags();
    f.push_back("--index_capacity=64");
    return f;
  }
  // Puts `n` keys "fill<i>": enough to double 16 buckets several times.
  static void Fill(Client* w, int n) {
    Batch b;
    for (int i = 0; i < n; i++) b.Put("fill" + std::to_string(i), "v");
    ASSERT_TRUE(w->Execute(&b).ok());
    for (size_t i = 0; i < b.size(); i++) {
      ASSERT_TRUE(b.result(i).status.ok()) << b.result(i).status.ToString();
    }
  }
  // Keys whose home bucket differs under every bucket count of 32 or
  // more from their home under 16 (bit 4 of the home is set): growth
  // moves them out of the neighbourhood a 16-bucket reader reads.
  static std::vector<std::string> MovingKeys(size_t n) {
    std::vector<std::string> keys;
    for (int i = 0; keys.size() < n; i++) {
      const std::string k = "moving" + std::to_string(i);
      if (ix::HomeBucket(ix::HashKey(k), 32) >= kInitialBuckets) {
        keys.push_back(k);
      }
    }
    return keys;
  }
  static std::string MovingKey() { return MovingKeys(1)[0]; }
  // The header bytes a kConfirm round read.
  static ix::IndexHeader HeaderOf(const Op& op, const uint8_t* arena) {
    ix::IndexHeader h;
    EXPECT_TRUE(ix::DecodeIndexHeader(arena + op.header_off, &h));
    return h;
  }
};

// The reader holds 16 buckets; the index grew and moved the key: its old
// neighbourhood holds nothing of it, twice, but the header says the index
// is bigger now, so the get starts over there and finds the key.
TEST_F(GetPathFenceTest, AKeyMovedByAGrowthIsFoundNotTakenForAbsent) {
  auto r = Cold();
  auto w = Open();
  const std::string k = MovingKey();
  ASSERT_TRUE(w->Put(k, "moved-value").ok());
  Fill(w.get(), 400);
  Rounds n;
  uint64_t seen_buckets = 0;
  OnReads(k, [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.state == State::kConfirm) {
      EXPECT_EQ(op.bucket_count, kInitialBuckets);
      seen_buckets = HeaderOf(op, arena).bucket_count;
    }
  });
  std::string got;
  Status st = r->Get(k, &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, "moved-value");
  EXPECT_EQ(n.confirm, 1);
  EXPECT_EQ(n.neigh, 2);
  EXPECT_GE(seen_buckets, kInitialBuckets * 4);
  EXPECT_EQ(r->stats().index_refreshes, 1u);
  EXPECT_EQ(r->stats().get_retries, 0u);
  // The geometry stays adopted: the next get of the key is one round.
  n = {};
  ASSERT_TRUE(r->Get(k, &got).ok());
  EXPECT_EQ(n.neigh, 1);
  EXPECT_EQ(n.confirm, 0);
  EXPECT_EQ(r->stats().index_refreshes, 1u);
}

// A batch from a reader holding 16 buckets, many gets in flight: the
// first confirm adopts the grown geometry while the others' reads were
// made with the old one; each of those must still start over (its reads
// used 16 buckets, whatever the connection knows by then), so every moved
// key is found.
TEST_F(GetPathFenceTest, AStaleBatchFindsEveryMovedKey) {
  auto r = Cold();
  auto w = Open();
  const std::vector<std::string> keys = MovingKeys(100);
  for (const std::string& k : keys) ASSERT_TRUE(w->Put(k, "v-" + k).ok());
  Fill(w.get(), 300);
  Batch b;
  for (const std::string& k : keys) b.Get(k);
  for (int i = 0; i < 50; i++) b.Get("absent" + std::to_string(i));
  ASSERT_TRUE(r->Execute(&b).ok());
  for (size_t i = 0; i < keys.size(); i++) {
    ASSERT_TRUE(b.result(i).status.ok())
        << keys[i] << ": " << b.result(i).status.ToString();
    EXPECT_EQ(b.result(i).value, "v-" + keys[i]);
  }
  for (size_t i = keys.size(); i < b.size(); i++) {
    EXPECT_TRUE(b.result(i).status.IsNotFound())
        << b.result(i).status.ToString();
  }
  EXPECT_EQ(r->stats().index_refreshes, 1u);
}

// A growth lands between a get's first read and its confirming reads:
// the confirm's header shows another bucket count, so the first read
// proves nothing — the get reads again at the new geometry, then says
// not_found.
TEST_F(GetPathFenceTest, AGrowthBetweenTheReadsRestartsTheGet) {
  auto r = Cold();
  auto w = Open();
  Rounds n;
  bool grown = false;
  OnReads("absent", [&](const Op& op, uint8_t*) {
    n.Count(op);
    if (op.state == State::kNeighbourhood && !grown) {
      grown = true;
      Fill(w.get(), 400);  // another client, while this get is mid-way
    }
  });
  std::string got;
  Status st = r->Get("absent", &got);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(n.neigh, 2);
  EXPECT_EQ(n.confirm, 2);
  EXPECT_EQ(r->stats().index_refreshes, 1u);
}

// A warm get whose cached slot moved with a growth: the old neighbourhood
// no longer holds it, the get falls back to the cold path, the fence
// adopts the new geometry, and the value is found.
TEST_F(GetPathFenceTest, AWarmGetOfAMovedKeyFindsItAfterTheRefresh) {
  auto r = Open();
  auto w = Open();
  const std::string k = MovingKey();
  ASSERT_TRUE(r->Put(k, "cached").ok());  // caches the slot
  Fill(w.get(), 400);
  std::string got;
  Status st = r->Get(k, &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, "cached");
  EXPECT_EQ(r->stats().gets_one_round_trip, 0u);
  EXPECT_EQ(r->stats().index_refreshes, 1u);
  // Cached again, now at the new geometry: one round trip.
  ASSERT_TRUE(r->Get(k, &got).ok());
  EXPECT_EQ(r->stats().gets_one_round_trip, 1u);
}

// A header torn across a growth's update (its check word disagrees) is
// read again; the get then ends as it would have.
TEST_F(GetPathFenceTest, ATornHeaderIsReadAgain) {
  auto r = Cold();
  Rounds n;
  OnReads("absent", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.state == State::kConfirm && op.attempts == 0) {
      arena[op.header_off + 9] ^= 0x10;  // the check word
    }
  });
  std::string got;
  Status st = r->Get("absent", &got);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(n.confirm, 2);
  EXPECT_EQ(r->stats().get_retries, 1u);
  EXPECT_EQ(r->stats().index_refreshes, 0u);
}

// A header that never decodes is never taken for "no growth": bounded
// attempts, then corruption — and the connection still serves.
TEST_F(GetPathFenceTest, AHeaderThatNeverDecodesIsCorruptionAfterBoundedReads) {
  auto r = Cold();
  auto w = Open();
  ASSERT_TRUE(w->Put("k", "v").ok());
  Rounds n;
  OnReads("absent", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.state == State::kConfirm) {
      std::memset(arena + op.header_off, 0, ix::kIndexHeaderSize);
    }
  });
  std::string got;
  Status st = r->Get("absent", &got);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("index header"), std::string::npos)
      << st.ToString();
  EXPECT_EQ(n.confirm, kMaxAttempts);
  ASSERT_TRUE(r->Get("k", &got).ok());
  EXPECT_EQ(got, "v");
}

// A header naming an index that would not fit the read region is
// corruption; the reader's geometry is left as it was, so the next get
// still works.
TEST_F(GetPathFenceTest, AHeaderNamingAnIndexOutsideTheRegionIsCorruption) {
  auto r = Cold();
  auto w = Open();
  ASSERT_TRUE(w->Put("k", "v").ok());
  OnReads("absent", [&](const Op& op, uint8_t* arena) {
    if (op.state == State::kConfirm) {
      ix::EncodeIndexHeader({1000, uint64_t{1} << 40}, arena + op.header_off);
    }
  });
  std::string got;
  Status st = r->Get("absent", &got);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("do not fit"), std::string::npos)
      << st.ToString();
  engine_hooks_for_testing = {};
  EXPECT_EQ(r->stats().index_refreshes, 0u);
  EXPECT_TRUE(r->Get("absent", &got).IsNotFound());
  ASSERT_TRUE(r->Get("k", &got).ok());
  EXPECT_EQ(got, "v");
}

// A header behind the reader's geometry (read before a growth the accept
// data already carried was published) is never adopted and never taken
// for agreement: the get reads again; one that stays behind is busy after
// bounded rounds, and the geometry is unchanged.
TEST_F(GetPathFenceTest, AHeaderBehindTheReadersGeometryIsReadAgain) {
  auto r = Cold();
  Rounds n;
  int behind = 1;
  OnReads("absent", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.state == State::kConfirm && behind > 0) {
      behind--;
      ix::EncodeIndexHeader({1000, kInitialBuckets / 2}, arena + op.header_off);
    }
  });
  std::string got;
  Status st = r->Get("absent", &got);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(n.confirm, 2);
  EXPECT_EQ(r->stats().index_refreshes, 0u);
  n = {};
  behind = 1000;
  st = r->Get("absent", &got);
  EXPECT_EQ(st.code(), StatusCode::kBusy) << st.ToString();
  EXPECT_EQ(n.confirm, kMaxAttempts);
  engine_hooks_for_testing = {};
  EXPECT_TRUE(r->Get("absent", &got).IsNotFound());
  EXPECT_EQ(r->stats().index_refreshes, 0u);
}

}  // namespace
}  // namespace kv::client_test
