#include "keyspace_sizing.h"

#include <algorithm>
#include <ostream>

#include "commands.h"
#include "kv/index_format.h"
#include "kv/store/pool_format.h"

namespace kv::kvadmin {

uint64_t DefaultLogSize(uint64_t largest_free, uint32_t segment_size) {
  const uint64_t quarter = largest_free / 4 / segment_size * segment_size;
  return std::max<uint64_t>(quarter, 2ull * segment_size);
}

void PrintRoomForKeyspaces(const store::PoolInfo& info, std::ostream& out) {
  const store::KeyspaceOptions d;  // the defaults of keyspace create
  uint64_t buckets = 1;
  while (buckets * 4 < d.index_capacity) buckets <<= 1;
  // As the store sizes an index: probe overflow buckets, region-aligned.
  const uint64_t raw =
      index_format::PhysicalBuckets(buckets) * index_format::kBucketSize;
  const uint64_t align = store::pool_format::kRegionAlign;
  const uint64_t index = (raw + align - 1) / align * align;
  const uint64_t fits =
      info.largest_free > index
          ? (info.largest_free - index) / d.segment_size * d.segment_size
          : 0;
  out << "new keyspace:   ";
  if (fits < 2ull * d.segment_size) {
    out << "no room (needs " << HumanBytes(index + 2ull * d.segment_size)
        << " with the default index and segment size)\n";
    return;
  }
  out << "room for a log of up to " << HumanBytes(fits)
      << "; keyspace create without --log_size gives "
      << HumanBytes(
             std::min(fits, DefaultLogSize(info.largest_free, d.segment_size)))
      << "\n";
}

}  // namespace kv::kvadmin
