// Who holds a pool's lock: for the message a refused open prints (private).
#ifndef KV_STORE_SRC_POOL_LOCK_HOLDERS_H_
#define KV_STORE_SRC_POOL_LOCK_HOLDERS_H_

#include <string>

namespace kv::store {

// "held for writing by kvserver (pid 1234)" for the processes whose flock
// on the file `fd` refers to conflicts with ours, read from /proc/locks and
// /proc/PID/comm; "open by another process" when they cannot be found
// (e.g. /proc not mounted, or the holder runs in another pid namespace).
std::string PoolLockHolders(int fd);

}  // namespace kv::store

#endif  // KV_STORE_SRC_POOL_LOCK_HOLDERS_H_
