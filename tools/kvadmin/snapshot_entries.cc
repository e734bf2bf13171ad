#include "snapshot_entries.h"

#include <cstdio>

namespace kv::kvadmin {

namespace sf = snapshot;

EntryScan::EntryScan(SnapshotDb* db)
    : db_(db), it_(db->Scan(SnapshotDb::kEntries)) {
  it_->SeekToFirst();
  Load();
}

void EntryScan::Load() {
  valid_ = false;
  if (!it_->Valid()) {
    status_ = FromRocks(it_->status(), "reading snapshot " + db_->dir());
    return;
  }
  const std::string_view k = it_->key().ToStringView();
  const std::string_view v = it_->value().ToStringView();
  status_ = sf::ParseEntryKey(k, &id_, &key_);
  if (status_.ok()) status_ = sf::DecodeEntry(v, &entry_);
  if (!status_.ok()) {
    status_ =
        Status::Corruption("snapshot " + db_->dir() + ": " + status_.message());
    return;
  }
  crc_ = sf::ExtendEntriesCrc(crc_, k, v);
  count_++;
  valid_ = true;
}

void EntryScan::Next() {
  if (!valid_) return;
  it_->Next();
  Load();
}

Status EntryScan::Finish() {
  while (valid_) Next();
  KV_RETURN_IF_ERROR(status_);
  Result<uint64_t> n = db_->MetaNumber(sf::meta::kEntries);
  if (!n.ok()) return n.status();
  Result<std::string> crc = db_->Meta(sf::meta::kEntriesCrc);
  if (!crc.ok()) return Status::Corruption("snapshot: no entries checksum");
  char have[16];
  snprintf(have, sizeof(have), "%08x", crc_);
  if (*n != count_ || *crc != have) {
    return Status::Corruption("snapshot " + db_->dir() +
                              " is damaged: its entries (" +
                              std::to_string(count_) + ", crc32c " + have +
                              ") do not match its meta (" + std::to_string(*n) +
                              ", crc32c " + *crc + ")");
  }
  return Status::Ok();
}

}  // namespace kv::kvadmin
