// Keyspace::WithCurrentRecord — a key's current record, handed out under
// the key's stripe: what a shard move's copier queues for the target
// (docs/cluster.md, "Moving a shard: the protocol", step 3).
#include <string>

#include "index.h"
#include "kv/index_format.h"
#include "kv/store/keyspace.h"

namespace kv::store {

Status Keyspace::WithCurrentRecord(
    std::string_view key,
    const std::function<void(const uint8_t* record, size_t length)>& fn) const {
  if (key.size() < record_format::kMinKeySize ||
      key.size() > record_format::kMaxKeySize) {
    return Status::InvalidArgument("key must be 1..1024 bytes, got " +
                                   std::to_string(key.size()));
  }
  const uint64_t hash = index_format::HashKey(key);
  // The pipeline's order: the index's resize lock (shared), then the
  // stripe. Held, no commit of the key (nor a cleaner move of its
  // record) runs until fn returns.
  Index::Reading reading(*index_);
  std::lock_guard<std::mutex> lock(StripeFor(hash));
  Found found;
  if (!FindSlot(key, hash, &found) || found.view.tombstone() ||
      record_format::Expired(found.view, NowMs())) {
    return Status::NotFound("key not found");
  }
  fn(log_ + index_format::SlotLogOffset(found.value),
     record_format::RecordSizeOf(found.view));
  return Status::Ok();
}

}  // namespace kv::store
