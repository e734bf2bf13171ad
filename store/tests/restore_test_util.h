// What the PoolRestore tests share: an in-memory restore journal, a
// mapping borrowed by several Pool lifetimes, and a "snapshot" taken in
// process (the entries kvadmin snapshot would store).
#ifndef KV_STORE_TESTS_RESTORE_TEST_UTIL_H_
#define KV_STORE_TESTS_RESTORE_TEST_UTIL_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kv/store/pool.h"
#include "kv/store/pool_restore.h"
#include "kv/store/restore_journal.h"

namespace kv::store::testing {

// A journal in memory; `state` is shared so a test can look at (or copy)
// what a crash at any moment would find.
class MemoryJournal : public RestoreJournal {
 public:
  using State = std::shared_ptr<std::optional<std::string>>;
  explicit MemoryJournal(State state) : state_(std::move(state)) {}
  Result<std::string> Read() override {
    if (!state_->has_value()) return Status::NotFound("no journal");
    return **state_;
  }
  Status Write(std::string_view b) override {
    *state_ = std::string(b);
    return Status::Ok();
  }
  Status Remove() override {
    state_->reset();
    return Status::Ok();
  }
  std::string name() const override { return "memory journal"; }

 private:
  State state_;
};

// Forwards to a mapping it does not own (pools come and go, bytes stay).
class BorrowedMapping : public Mapping {
 public:
  explicit BorrowedMapping(Mapping* m) : m_(m) {}
  uint8_t* base() override { return m_->base(); }
  size_t size() const override { return m_->size(); }
  Persister* persister() override { return m_->persister(); }
  std::string granularity() const override { return "memory"; }

 private:
  Mapping* m_;
};

// A snapshot taken in process: catalog and verified index entries.
struct TestSnapshot {
  struct Entry {
    uint32_t id;
    std::string key;
    RestoreEntry e;  // e.key is set from `key` when used
  };
  std::vector<RestoreKeyspace> keyspaces;
  std::vector<Entry> entries;

  void Take(Pool* pool) {
    for (const KeyspaceInfo& k : pool->ListKeyspaces()) {
      keyspaces.push_back({k.name, k.id, k.region_offset, k.region_size,
                           k.bucket_count, k.log_offset, k.log_size,
                           k.segment_size, k.max_value_size});
      pool->GetKeyspace(k.name).value()->ForEachSlot(
          [&](const Keyspace::SlotEntry& s) {
            if (!s.problem.empty()) return true;
            RestoreEntry e;
            e.slot = s.slot;
            e.log_offset = s.log_offset;
            e.length = s.length;
            e.sequence = s.record.header.sequence;
            e.crc = s.record.header.crc;
            entries.push_back({k.id, std::string(s.record.key), e});
            return true;
          });
    }
  }
  // Plans and re-links everything; returns how many entries failed.
  size_t Apply(PoolRestore* r) const {
    EXPECT_TRUE(r->PlanCatalog(keyspaces).ok());
    size_t failed = 0;
    for (const Entry& x : entries) {
      RestoreEntry e = x.e;
      e.key = x.key;
      failed += !r->Relink(x.id, e).empty();
    }
    return failed;
  }
};

}  // namespace kv::store::testing

#endif  // KV_STORE_TESTS_RESTORE_TEST_UTIL_H_
