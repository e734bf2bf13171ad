// The client's get path when its reads see a keyspace mid-change: a
// neighbourhood torn across an update (never a wrong not_found), a first
// record that is bad and then good on the retry, slots outside the log,
// two versions of a key, a stale cached slot; and the bounds on retries.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "get_path_fixture.h"

namespace kv::client_test {
namespace {

using State = Op::State;

// Counts of a get's completed read rounds, by state.
struct Rounds {
  int neigh = 0, records = 0, confirm = 0;
  void Count(const Op& op) {
    if (op.state == State::kNeighbourhood) neigh++;
    if (op.state == State::kRecords) records++;
    if (op.state == State::kConfirm) confirm++;
  }
};

TEST_F(GetPathTest, ATornEmptyNeighbourhoodIsConfirmedNotTakenForAbsence) {
  auto w = Open();
  ASSERT_TRUE(w->Put("k", "v").ok());
  auto r = Cold();
  Rounds n;
  // The first copy misses the key's slot (an update cleared the old slot,
  // the new one was not yet visible to this read); the re-read sees it.
  OnReads("k", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.state == State::kNeighbourhood && op.attempts == 0) {
      std::memset(arena + op.neigh_off, 0, il::kNeighbourhoodBytes);
    }
  });
  std::string got;
  Status st = r->Get("k", &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, "v");
  EXPECT_EQ(n.confirm, 1);
  EXPECT_EQ(n.neigh, 2);
  EXPECT_EQ(r->stats().get_retries, 1u);
}

TEST_F(GetPathTest, ATornCopyMissingANewSlotInTheProbeBucketIsRetried) {
  auto w = Open();
  ASSERT_TRUE(w->Put("k", "v").ok());
  auto r = Cold();
  Rounds n;
  OnReads("k", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.attempts != 0) return;
    uint64_t neigh[il::kNeighbourhoodSlots];
    LoadNeigh(op, arena, neigh);
    const int pos = KeyPos(neigh, "k");
    if (op.state == State::kNeighbourhood) {
      neigh[pos] = 0;  // the old slot cleared, the new one not yet seen
    } else if (op.state == State::kConfirm) {
      // The re-read sees the new slot, placed in the probe bucket: the
      // home buckets of both copies are the same.
      const uint64_t slot = neigh[pos];
      neigh[pos] = 0;
      neigh[il::kNeighbourhoodSlots - 1] = slot;
    }
    StoreNeigh(op, arena, neigh);
  });
  std::string got;
  Status st = r->Get("k", &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, "v");
  EXPECT_EQ(n.confirm, 1);
  EXPECT_EQ(n.neigh, 2);
}

TEST_F(GetPathTest, AMovedSlotWhoseOldPlaceHoldsAnotherKeyIsRetried) {
  auto w = Open();
  ASSERT_TRUE(w->Put("k", "v").ok());
  auto r = Cold();
  Rounds n;
  OnReads("k", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.attempts != 0) return;
    if (op.state == State::kRecords) {
      // The slot's place was reused: another key's valid record there.
      const int pos = KeyPos(op.neigh, "k");
      uint8_t* rec = arena + op.record_off[pos];
      const rf::RecordHeader h = HeaderAt(rec);
      rf::EncodeRecord(rec, h.keyspace_id, h.sequence, false, "x", "y");
    }
    if (op.state == State::kConfirm) {
      // ... because the slot moved: the re-read differs.
      uint64_t neigh[il::kNeighbourhoodSlots];
      LoadNeigh(op, arena, neigh);
      neigh[KeyPos(neigh, "k")] ^= 1;  // another log offset
      StoreNeigh(op, arena, neigh);
    }
  });
  std::string got;
  Status st = r->Get("k", &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, "v");
  EXPECT_EQ(n.confirm, 1);
  EXPECT_EQ(n.neigh, 2);
}

TEST_F(GetPathTest, AnAbsentKeyIsNotFoundAfterOneConfirmingRead) {
  auto r = Cold();
  Rounds n;
  OnReads("absent", [&](const Op& op, uint8_t*) { n.Count(op); });
  std::string got;
  Status st = r->Get("absent", &got);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(n.neigh, 1);
  EXPECT_EQ(n.confirm, 1);
  EXPECT_EQ(r->stats().get_retries, 0u);
}

TEST_F(GetPathTest, ANeighbourhoodThatKeepsChangingIsBusyAfterBoundedAttempts) {
  auto r = Cold();
  Rounds n;
  OnReads("absent", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.state == State::kConfirm) arena[op.neigh_off + 5] ^= 0x40;
  });
  std::string got;
  Status st = r->Get("absent", &got);
  EXPECT_EQ(st.code(), StatusCode::kBusy) << st.ToString();
  EXPECT_EQ(n.neigh, kMaxAttempts);
  EXPECT_EQ(n.confirm, kMaxAttempts);
}

// One way a record read can be bad (its slot unchanged); each must be
// retried, never returned and never taken for absence.
struct Damage {
  const char* name;
  void (*apply)(uint8_t* rec, size_t len, std::string_view key);
};

const Damage kDamages[] = {
    {"CrcMismatch",
     [](uint8_t* rec, size_t, std::string_view key) {
       rec[rf::kHeaderSize + key.size()] ^= 1;  // the value's first byte
     }},
    {"OtherKeyspace",
     [](uint8_t* rec, size_t, std::string_view key) {
       const rf::RecordHeader h = HeaderAt(rec);
       rf::EncodeRecord(rec, h.keyspace_id + 1, h.sequence, false, key,
                        "value-1");
     }},
    {"Tombstone",
     [](uint8_t* rec, size_t, std::string_view key) {
       const rf::RecordHeader h = HeaderAt(rec);
       rf::EncodeRecord(rec, h.keyspace_id, h.sequence, true, key, {});
     }},
    {"SequenceZero",
     [](uint8_t* rec, size_t, std::string_view key) {
       const rf::RecordHeader h = HeaderAt(rec);
       rf::EncodeRecord(rec, h.keyspace_id, 0, false, key, "value-1");
     }},
    {"Reclaimed", [](uint8_t* rec, size_t len,
                     std::string_view) { std::memset(rec, 0, len); }},
    {"LongerThanItsSlot",
     [](uint8_t* rec, size_t len, std::string_view key) {
       // A valid record of the key that runs past the slot's extent (the
       // arena has room after it): its length must be checked against the
       // slot's, not trusted.
       const rf::RecordHeader h = HeaderAt(rec);
       rf::EncodeRecord(rec, h.keyspace_id, h.sequence, false, key,
                        std::string(len, 'L'));
     }},
};

class BadFirstRecordTest : public GetPathTest,
                           public ::testing::WithParamInterface<Damage> {};

TEST_P(BadFirstRecordTest, IsRetriedAndTheRetryReturnsTheValue) {
  auto w = Open();
  ASSERT_TRUE(w->Put("key-1", "value-1").ok());
  auto r = Cold();
  Rounds n;
  OnReads("key-1", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.state != State::kRecords || op.attempts != 0) return;
    const int pos = KeyPos(op.neigh, "key-1");
    GetParam().apply(arena + op.record_off[pos],
                     ix::SlotRecordBytes(op.neigh[pos]), "key-1");
  });
  std::string got;
  Status st = r->Get("key-1", &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, "value-1");
  EXPECT_EQ(n.neigh, 2);
  EXPECT_EQ(n.records, 2);
  EXPECT_EQ(n.confirm, 0);
  EXPECT_EQ(r->stats().get_retries, 1u);
}

INSTANTIATE_TEST_SUITE_P(Damages, BadFirstRecordTest,
                         ::testing::ValuesIn(kDamages),
                         [](const auto& info) { return info.param.name; });

TEST_F(GetPathTest, ARecordThatStaysBadIsCorruptionAfterBoundedAttempts) {
  auto w = Open();
  ASSERT_TRUE(w->Put("k", "value").ok());
  auto r = Cold();
  Rounds n;
  OnReads("k", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.state == State::kRecords) {
      arena[op.record_off[KeyPos(op.neigh, "k")] + rf::kHeaderSize + 1] ^= 1;
    }
  });
  std::string got;
  Status st = r->Get("k", &got);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("CRC"), std::string::npos) << st.message();
  EXPECT_EQ(n.records, kMaxAttempts);
  EXPECT_EQ(n.confirm, 0);
}

// The key's slot replaced, in the first neighbourhood copy, by one with
// the key's fingerprint that points outside the log (or across a segment
// of the fixture's 64 KiB ones): never read, retried.
void RunOutOfBoundsSlot(GetPathTest* t, std::unique_ptr<Client> r,
                        uint32_t offset_units, uint16_t units, bool always) {
  Rounds n;
  t->OnReads("k", [&](const Op& op, uint8_t* arena) {
    n.Count(op);
    if (op.state != State::kNeighbourhood || (!always && op.attempts != 0)) {
      return;
    }
    uint64_t neigh[il::kNeighbourhoodSlots];
    LoadNeigh(op, arena, neigh);
    neigh[KeyPos(neigh, "k")] =
        ix::PackSlot({ix::Fingerprint(ix::HashKey("k")), units, offset_units});
    StoreNeigh(op, arena, neigh);
  });
  std::string got;
  Status st = r->Get("k", &got);
  if (always) {
    EXPECT_TRUE(st.IsCorruption()) << st.ToString();
    EXPECT_NE(st.message().find("outside the log"), std::string::npos)
        << st.message();
    EXPECT_EQ(n.neigh, kMaxAttempts);
    EXPECT_EQ(n.records, 0);
  } else {
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(got, "v");
    EXPECT_EQ(n.neigh, 2);
  }
  EXPECT_EQ(n.confirm, 0);
}

TEST_F(GetPathTest, ASlotOutsideTheLogIsNotReadAndIsRetried) {
  auto w = Open();
  ASSERT_TRUE(w->Put("k", "v").ok());
  RunOutOfBoundsSlot(this, Cold(), 0xffffffffu, 1, false);
  RunOutOfBoundsSlot(this, Cold(), 0xffffffffu, 1, true);
}

TEST_F(GetPathTest, ASlotAcrossASegmentEndIsNotReadAndIsRetried) {
  auto w = Open();
  ASSERT_TRUE(w->Put("k", "v").ok());
  const uint32_t last_unit = (64 * 1024 - 64) / 64;  // of segment 0
  RunOutOfBoundsSlot(this, Cold(), last_unit, 2, false);
  RunOutOfBoundsSlot(this, Cold(), last_unit, 2, true);
}

TEST_F(GetPathTest, TheNewerOfTwoVersionsInANeighbourhoodWins) {
  auto w = Open();
  ASSERT_TRUE(w->Put("k", "old").ok());
  auto r = Cold();
  uint64_t old_slot = 0;
  OnReads("k", [&](const Op& op, uint8_t*) {
    if (op.state == State::kRecords) old_slot = op.neigh[KeyPos(op.neigh, "k")];
  });
  std::string got;
  ASSERT_TRUE(r->Get("k", &got).ok());
  ASSERT_NE(old_slot, 0u);
  KeyVersion v;
  ASSERT_TRUE(w->Put("k", "new", {.version = &v}).ok());
  // Both slots in the copy (as while an update is in flight), in either
  // order: the old record is still valid in the log.
  for (bool old_first : {true, false}) {
    OnReads("k", [&](const Op& op, uint8_t* arena) {
      if (op.state != State::kNeighbourhood) return;
      uint64_t neigh[il::kNeighbourhoodSlots];
      LoadNeigh(op, arena, neigh);
      const uint64_t new_slot = neigh[KeyPos(neigh, "k")];
      uint64_t two[il::kNeighbourhoodSlots] = {};
      two[old_first ? 0 : 1] = old_slot;
      two[old_first ? 1 : 0] = new_slot;
      StoreNeigh(op, arena, two);
    });
    KeyVersion seen;
    ASSERT_TRUE(r->Get("k", &got, &seen).ok());
    EXPECT_EQ(got, "new") << "old first: " << old_first;
    EXPECT_EQ(seen.sequence, v.sequence);
  }
}

TEST_F(GetPathTest, AWarmGetVerifiesTheCachedRecord) {
  auto c = Open();
  ASSERT_TRUE(c->Put("k", "cached").ok());  // caches the slot
  OnReads("k", [&](const Op& op, uint8_t* arena) {
    if (op.state == State::kNeighbourhood && op.warm) {
      arena[op.warm_off + rf::kHeaderSize + 1] ^= 1;
    }
  });
  std::string got;
  ASSERT_TRUE(c->Get("k", &got).ok());
  EXPECT_EQ(got, "cached");
  EXPECT_EQ(c->stats().gets_one_round_trip, 0u);
  EXPECT_EQ(c->stats().gets_cold, 1u);
}

TEST_F(GetPathTest, AWarmGetSeesAnotherClientsNewerVersionAndDelete) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a->Put("k", "from-a").ok());  // a caches the slot
  ASSERT_TRUE(b->Put("k", "from-b").ok());
  std::string got;
  ASSERT_TRUE(a->Get("k", &got).ok());
  EXPECT_EQ(got, "from-b");
  ASSERT_TRUE(a->Put("k", "from-a-again").ok());
  ASSERT_TRUE(b->Delete("k").ok());
  EXPECT_TRUE(a->Get("k", &got).IsNotFound());
}

TEST_F(GetPathTest, KeysOutsideOneTo1024BytesAreInvalidAndNothingIsRead) {
  auto c = Cold();
  int reads = 0;
  engine_hooks_for_testing.reads_done = [&](const Op&, uint8_t*) { reads++; };
  std::string got;
  EXPECT_TRUE(c->Get("", &got).IsInvalidArgument());
  EXPECT_TRUE(c->Get(std::string(1025, 'k'), &got).IsInvalidArgument());
  EXPECT_EQ(reads, 0);
  EXPECT_TRUE(c->Get(std::string(1024, 'k'), &got).IsNotFound());
  EXPECT_EQ(reads, 2);  // neighbourhood, confirm
}

}  // namespace
}  // namespace kv::client_test
