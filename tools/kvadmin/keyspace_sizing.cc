#include "keyspace_sizing.h"

#include <algorithm>
#include <ostream>

#include "commands.h"
#include "kv/index_format.h"
#include "kv/store/keyspace_sizing.h"
#include "kv/store/pool_format.h"

namespace kv::kvadmin {

uint64_t CreateLogSize(uint64_t largest_free, const store::KeyspaceOptions& o) {
  return std::max<uint64_t>(store::DefaultLogSize(largest_free, o),
                            store::kMinSegments * o.segment_size);
}

void PrintRoomForKeyspaces(const store::PoolInfo& info, std::ostream& out) {
  const store::KeyspaceOptions d;  // the defaults of keyspace create
  const uint64_t index = store::IndexRegionBytes(d.index_capacity);
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
      << HumanBytes(std::min(fits, CreateLogSize(info.largest_free, d)))
      << "\n";
}

}  // namespace kv::kvadmin
