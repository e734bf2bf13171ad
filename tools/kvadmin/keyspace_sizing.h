// How big `kvadmin keyspace create` makes a keyspace's log when no
// --log_size is given, and how much room `kvadmin info` reports for new
// keyspaces. A default that took the whole pool left nothing for a second
// keyspace (it then failed with no_space); a quarter of what is free
// leaves room and still grows with the pool.
#ifndef KV_TOOLS_KVADMIN_KEYSPACE_SIZING_H_
#define KV_TOOLS_KVADMIN_KEYSPACE_SIZING_H_

#include <cstdint>
#include <iosfwd>

#include "kv/store/pool.h"

namespace kv::kvadmin {

// A quarter of the largest free extent, in whole segments, but at least
// two segments (the smallest log a keyspace can have; the store refuses
// with no_space when even that does not fit).
uint64_t DefaultLogSize(uint64_t largest_free, uint32_t segment_size);

// Prints the "new keyspace:" line of `kvadmin info`: the largest log a new
// keyspace with the default index and segment size could have, and the
// log the default --log_size would give it now.
void PrintRoomForKeyspaces(const store::PoolInfo& info, std::ostream& out);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_KEYSPACE_SIZING_H_
