// EntryScan — reads a snapshot's entries column family in key order
// (keyspace id, then key), decoding each entry and checking, at the end,
// that the count and the entries checksum match the snapshot's meta. A
// consumer must not act on what it read before Finish() says ok.
// Thread-safety: one thread.
#ifndef KV_TOOLS_KVADMIN_SNAPSHOT_ENTRIES_H_
#define KV_TOOLS_KVADMIN_SNAPSHOT_ENTRIES_H_

#include <memory>
#include <string_view>

#include "kv/status.h"
#include "snapshot_db.h"
#include "snapshot_format.h"

namespace kv::kvadmin {

class EntryScan {
 public:
  explicit EntryScan(SnapshotDb* db);
  // There is a current entry (false at the end or after an error).
  bool valid() const { return valid_; }
  uint32_t id() const { return id_; }
  std::string_view key() const { return key_; }
  const snapshot::EntryValue& entry() const { return entry_; }
  void Next();
  // Skips every entry of keyspace `id` (calls fn on each).
  template <typename Fn>
  void ForEachOf(uint32_t id, Fn fn) {
    while (valid_ && id_ == id) {
      fn();
      Next();
    }
  }
  // Reads what is left, then: ok when every entry decoded and count and
  // checksum match the meta; corruption (naming the mismatch) otherwise.
  Status Finish();
  uint64_t count() const { return count_; }

 private:
  void Load();
  SnapshotDb* db_;
  std::unique_ptr<rocksdb::Iterator> it_;
  bool valid_ = false;
  Status status_;
  uint32_t id_ = 0;
  std::string_view key_;
  snapshot::EntryValue entry_;
  uint64_t count_ = 0;
  uint32_t crc_ = 0;
};

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_SNAPSHOT_ENTRIES_H_
