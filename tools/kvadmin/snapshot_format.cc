#include "snapshot_format.h"

#include <cstring>

#include "kv/crc32c.h"

namespace kv::kvadmin::snapshot {
namespace {

constexpr size_t kCatalogFixed = 4 + 8 * 5 + 4 * 2 + 8 * 2 + 1;  // 69

void PutBe32(std::string* s, uint32_t v) {
  for (int i = 3; i >= 0; i--) s->push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t GetBe32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
template <typename T>
void Put(std::string* s, T v) {  // little-endian (x86-64 and the format)
  s->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
template <typename T>
T Get(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  p += sizeof(v);
  return v;
}
template <typename T>
void Store(char*& p, T v) {
  std::memcpy(p, &v, sizeof(v));
  p += sizeof(v);
}

}  // namespace

std::string IdKey(uint32_t id) {
  std::string s;
  PutBe32(&s, id);
  return s;
}

std::string SegmentKey(uint32_t id, uint32_t segment) {
  std::string s;
  PutBe32(&s, id);
  PutBe32(&s, segment);
  return s;
}

std::string EntryKey(uint32_t id, std::string_view key) {
  std::string s;
  s.reserve(4 + key.size());
  PutBe32(&s, id);
  s.append(key);
  return s;
}

Status ParseIdKey(std::string_view k, uint32_t* id) {
  if (k.size() != 4) {
    return Status::Corruption("catalog key of " + std::to_string(k.size()) +
                              " bytes (expected 4)");
  }
  *id = GetBe32(k.data());
  return Status::Ok();
}

Status ParseEntryKey(std::string_view k, uint32_t* id, std::string_view* key) {
  if (k.size() < 5) return Status::Corruption("entry key shorter than 5 bytes");
  *id = GetBe32(k.data());
  *key = k.substr(4);
  return Status::Ok();
}

std::string EncodeCatalog(const CatalogValue& v) {
  std::string s;
  Put(&s, v.id);
  Put(&s, v.region_offset);
  Put(&s, v.region_size);
  Put(&s, v.bucket_count);
  Put(&s, v.log_offset);
  Put(&s, v.log_size);
  Put(&s, v.segment_size);
  Put(&s, v.max_value_size);
  Put(&s, v.keys);
  Put(&s, v.live_bytes);
  Put(&s, static_cast<uint8_t>(v.name.size()));
  s += v.name;
  return s;
}

Status DecodeCatalog(std::string_view b, CatalogValue* v) {
  if (b.size() < kCatalogFixed) {
    return Status::Corruption("catalog value of " + std::to_string(b.size()) +
                              " bytes is too short");
  }
  const char* p = b.data();
  v->id = Get<uint32_t>(p);
  v->region_offset = Get<uint64_t>(p);
  v->region_size = Get<uint64_t>(p);
  v->bucket_count = Get<uint64_t>(p);
  v->log_offset = Get<uint64_t>(p);
  v->log_size = Get<uint64_t>(p);
  v->segment_size = Get<uint32_t>(p);
  v->max_value_size = Get<uint32_t>(p);
  v->keys = Get<uint64_t>(p);
  v->live_bytes = Get<uint64_t>(p);
  const auto n = Get<uint8_t>(p);
  if (b.size() != kCatalogFixed + n || n == 0 || n > 63) {
    return Status::Corruption("catalog value: bad name length");
  }
  v->name.assign(p, n);
  return Status::Ok();
}

std::string EncodeSegment(const SegmentValue& v) {
  std::string s;
  Put(&s, v.state);
  Put(&s, v.live_bytes);
  Put(&s, v.live_records);
  return s;
}

Status DecodeSegment(std::string_view b, SegmentValue* v) {
  if (b.size() != 17) return Status::Corruption("segment value not 17 bytes");
  const char* p = b.data();
  v->state = Get<uint8_t>(p);
  v->live_bytes = Get<uint64_t>(p);
  v->live_records = Get<uint64_t>(p);
  return Status::Ok();
}

void EncodeEntry(const EntryValue& v, char out[kEntryValueSize]) {
  char* p = out;
  Store(p, v.slot);
  Store(p, v.log_offset);
  Store(p, v.length);
  Store(p, v.sequence);
  Store(p, v.crc);
  Store(p, v.value_len);
  Store(p, v.flags);
}

Status DecodeEntry(std::string_view b, EntryValue* v) {
  if (b.size() != kEntryValueSize) {
    return Status::Corruption("entry value of " + std::to_string(b.size()) +
                              " bytes (expected 38)");
  }
  const char* p = b.data();
  v->slot = Get<uint64_t>(p);
  v->log_offset = Get<uint64_t>(p);
  v->length = Get<uint32_t>(p);
  v->sequence = Get<uint64_t>(p);
  v->crc = Get<uint32_t>(p);
  v->value_len = Get<uint32_t>(p);
  v->flags = Get<uint16_t>(p);
  return Status::Ok();
}

uint32_t ExtendEntriesCrc(uint32_t crc, std::string_view key,
                          std::string_view value) {
  const auto n = static_cast<uint32_t>(key.size());
  crc = Crc32cExtend(crc, &n, 4);
  crc = Crc32cExtend(crc, key.data(), key.size());
  return Crc32cExtend(crc, value.data(), value.size());
}

}  // namespace kv::kvadmin::snapshot
