// libFuzzer target: mutate a small valid pool image (records with and
// without an expiry), then open (recover), check, read, iterate, sweep
// expired keys and write it. Any outcome but a crash, a sanitizer
// report or a hang is fine; errors must be Status values.
//
// Input: byte 0 picks a truncation (0 = none, else the image is cut to
// byte0 * 8 KiB); then 4-byte patches {u16 position, u8 area, u8 value}:
// `area` chooses superblock / catalog / index / log / commit log ring, or
// the ring with the patched entry's CRC made right again (docs/format.md
// "Commit log": so that entries naming hostile slots, sequences, lsns
// and flags reach the replay, not only the CRC check), so mutations land
// where the parsers look; `position` is the offset within it.
#include <cstdint>
#include <cstring>
#include <vector>

#include "kv/crc32c.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"

namespace {

using namespace kv::store;

constexpr size_t kPoolSize = 1 << 20;

struct Base {
  std::vector<uint8_t> image;
  KeyspaceInfo info;
};

const Base& BaseImage() {
  static const Base base = [] {
    Base b;
    auto mapping = MemoryMapping::Zeroed(kPoolSize, nullptr);
    uint8_t* bytes = mapping->base();
    auto pool = Pool::CreateOn(std::move(mapping), {});
    if (!pool.ok()) abort();
    KeyspaceOptions o;
    o.index_capacity = 32;
    o.segment_size = 8192;
    o.log_size = 64 * 1024;
    o.max_value_size = 1024;
    auto ks = (*pool)->CreateKeyspace("fuzz", o);
    if (!ks.ok()) abort();
    b.info = (*ks)->info();
    {
      Writer w(*ks);
      for (int i = 0; i < 24; i++) {
        if (!w.Put("key" + std::to_string(i), std::string(i * 9, 'v')).ok())
          abort();
      }
      if (!w.Delete("key3").ok()) abort();
      // Records with an expiry (format 3): one for a day, one expired by
      // the time the image is opened, so mutations hit expiry bytes and
      // the expiry sweep runs over both.
      if (!w.PutExpiring("ttl-day", "d", 86'400'000).ok()) abort();
      if (!w.PutExpiring("ttl-gone", "g", 1).ok()) abort();
      if (!w.PutExpiring("key7", "seven", 86'400'000).ok()) abort();
    }
    b.image.assign(bytes, bytes + kPoolSize);
    return b;
  }();
  return base;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Base& base = BaseImage();
  std::vector<uint8_t> image = base.image;
  if (size == 0) return 0;
  if (data[0] != 0)
    image.resize(std::min<size_t>(image.size(), data[0] * 8192u));
  const uint64_t area_start[6] = {0,
                                  pool_format::kCatalogOffset,
                                  base.info.region_offset,
                                  base.info.log_offset,
                                  base.info.commit_log_offset,
                                  base.info.commit_log_offset};
  for (size_t i = 1; i + 4 <= size; i += 4) {
    uint16_t pos;
    std::memcpy(&pos, data + i, 2);
    const int area = data[i + 2] % 6;
    const uint64_t off = area_start[area] + pos;
    if (off >= image.size()) continue;
    image[off] = data[i + 3];
    if (area == 5) {
      // The entry's CRC over its 28 bytes, extended with the keyspace id.
      const uint64_t entry = off - (off - area_start[5]) % 32;
      if (entry + 32 > image.size()) continue;
      const uint32_t id = base.info.id;
      const uint32_t crc = kv::Crc32cExtend(
          kv::Crc32c(image.data() + entry, 28), &id, sizeof(id));
      std::memcpy(image.data() + entry + 28, &crc, 4);
    }
  }
  PoolOptions po;
  po.grace_period = std::chrono::milliseconds(0);
  auto pool = Pool::OpenOn(MemoryMapping::FromImage(image, nullptr), po);
  if (!pool.ok()) return 0;
  (void)(*pool)->Check();
  (void)(*pool)->Info();
  for (const KeyspaceInfo& ki : (*pool)->ListKeyspaces()) {
    auto ks = (*pool)->GetKeyspace(ki.name);
    if (!ks.ok()) continue;
    std::string v;
    for (int i = 0; i < 24; i++)
      (void)(*ks)->Get("key" + std::to_string(i), &v);
    (void)(*ks)->Get("ttl-day", &v);
    (void)(*ks)->Get("ttl-gone", &v);
    (void)(*ks)->ReclaimExpired();
    (void)(*ks)->ForEach(
        [](const kv::record_format::RecordView&) { return true; });
    (void)(*ks)->Stats();
    {
      Writer w(*ks);
      for (int i = 0; i < 4; i++) (void)w.Put("key" + std::to_string(i), "new");
      (void)w.PutExpiring("ttl-day", "again", 1000);
      (void)w.Delete("key5");
    }
    (void)(*ks)->Clean(0.9, 8);
    (void)(*pool)->Check();
  }
  return 0;
}
