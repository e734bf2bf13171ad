// How big `kvadmin keyspace create` makes a keyspace's log when no
// --log_size is given (store/keyspace_sizing.h: half of the largest free
// extent less the index, as kvserver), and how much room `kvadmin info`
// reports for new keyspaces.
#ifndef KV_TOOLS_KVADMIN_KEYSPACE_SIZING_H_
#define KV_TOOLS_KVADMIN_KEYSPACE_SIZING_H_

#include <cstdint>
#include <iosfwd>

#include "kv/store/pool.h"

namespace kv::kvadmin {

// store::DefaultLogSize, but at least two segments (the smallest log a
// keyspace can have; the store refuses with no_space when even that does
// not fit, which names the free space).
uint64_t CreateLogSize(uint64_t largest_free, const store::KeyspaceOptions& o);

// Prints the "new keyspace:" line of `kvadmin info`: the largest log a new
// keyspace with the default index and segment size could have, and the
// log the default --log_size would give it now.
void PrintRoomForKeyspaces(const store::PoolInfo& info, std::ostream& out);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_KEYSPACE_SIZING_H_
