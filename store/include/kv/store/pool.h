// kv::store::Pool — an rpkv pool: one file (or DAX device) holding a
// superblock, a keyspace catalog and the keyspaces' indexes and logs.
//
// Open() is recovery: it verifies both superblock copies (falling back to
// the good one and, when writable, rewriting the bad one), reads the
// catalog (a torn catalog update falls back to the previous copy), checks
// every keyspace's geometry, then rebuilds each keyspace's volatile state
// from its index (open segments are sealed). No replay, no repair step.
//
// Thread-safety: all methods are thread-safe. Keyspace handles must be
// released before the Pool is destroyed (destroying the Pool unmaps).
#ifndef KV_STORE_POOL_H_
#define KV_STORE_POOL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kv/status.h"
#include "kv/store/keyspace.h"
#include "kv/store/mapping.h"
#include "kv/store/options.h"
#include "kv/store/pool_format.h"

namespace kv::store {

struct PoolInfo {
  std::string uuid;
  uint64_t size = 0;
  uint32_t format_version = 0;
  uint64_t created_unix_seconds = 0;
  std::string granularity;  // "page", "cache line", "memory"
  uint32_t keyspaces = 0;
  uint64_t free_bytes = 0;    // data area not used by any keyspace
  uint64_t largest_free = 0;  // largest free extent
  std::vector<std::string> recovery_notes;  // e.g. a repaired superblock
  // Opened as a live view (PoolOptions::live_view) of a pool that this
  // names the holder of ("held for writing by kvserver (pid N)"); "" when
  // the pool was opened with its lock.
  std::string live_view_of;
  // Keyspaces this open found not closed cleanly (a crash, kill -9): a
  // writable open checked and repaired them (recovery_notes lists each
  // repair).
  std::vector<std::string> unclean_keyspaces;
};

class Pool {
 public:
  // Creates a new pool file of `size` bytes (sparse; 1 MiB .. 1 PiB).
  // Errors: invalid_argument (size, or the file exists), io_error,
  // permission_denied, no_space.
  static Result<std::unique_ptr<Pool>> Create(const std::string& path,
                                              uint64_t size,
                                              const PoolOptions& options = {});
  // Opens (recovers) an existing pool. Errors: not_found, permission_denied,
  // busy (open for writing elsewhere), io_error, corruption (naming what is
  // wrong: magic, version, checksum, size, catalog geometry).
  static Result<std::unique_ptr<Pool>> Open(const std::string& path,
                                            const PoolOptions& options = {});
  // The same over any Mapping (tests, the persistence tracker, the fuzzer).
  // CreateOn formats the mapping; its bytes must be zero.
  static Result<std::unique_ptr<Pool>> CreateOn(std::unique_ptr<Mapping> m,
                                                const PoolOptions& options);
  static Result<std::unique_ptr<Pool>> OpenOn(std::unique_ptr<Mapping> m,
                                              const PoolOptions& options);
  ~Pool();

  // Creates a keyspace. Errors: invalid_argument (name rules, options out
  // of range, name taken), no_space (no catalog slot or no extent large
  // enough), permission_denied (read-only).
  Result<std::shared_ptr<Keyspace>> CreateKeyspace(
      std::string_view name, const KeyspaceOptions& options);
  // Drops a keyspace: its region becomes free. not_found; busy when a
  // handle to it is still held.
  Status DropKeyspace(std::string_view name);
  // A handle to a keyspace. not_found.
  Result<std::shared_ptr<Keyspace>> GetKeyspace(std::string_view name);
  std::vector<KeyspaceInfo> ListKeyspaces();

  // Verifies superblocks, catalog and every keyspace (all records a slot
  // reaches). Never modifies the pool.
  CheckReport Check();
  PoolInfo Info();

 private:
  struct Slot {
    int copy = -1;  // current catalog copy (-1: slot never written)
    pool_format::CatalogEntry entry{};
  };
  Pool(std::unique_ptr<Mapping> m, const PoolOptions& options);
  Status Load();
  Status WriteEntry(uint32_t slot, pool_format::CatalogEntry entry);
  // Lets `ks` (catalog slot `slot`) persist a new open_epoch.
  void AttachEpochSink(Keyspace* ks, uint32_t slot);
  // First-fit extent of `size` bytes in the data area; 0 when none.
  uint64_t Allocate(uint64_t size, uint64_t* largest_free);

  std::unique_ptr<Mapping> mapping_;
  PoolOptions options_;
  pool_format::Superblock sb_{};
  std::vector<std::string> notes_;
  std::string live_view_of_;          // see PoolInfo::live_view_of
  std::vector<std::string> unclean_;  // see PoolInfo::unclean_keyspaces
  std::mutex mu_;
  std::vector<Slot> slots_;
  std::map<std::string, std::shared_ptr<Keyspace>, std::less<>> keyspaces_;
};

}  // namespace kv::store

#endif  // KV_STORE_POOL_H_
