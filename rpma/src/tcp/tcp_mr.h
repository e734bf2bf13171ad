// Memory registrations of a tcp Pd and the rkey table the engine checks
// every remote access against.
//
// Synchronisation with deregistration: the engine holds the table's
// shared lock for the whole time it touches registered memory (one batch
// of one connection); ~TcpMr takes the exclusive lock to remove the entry
// and mark it dead, so once it returns the engine never touches the
// memory again. A payload that spans batches keeps its entry and checks
// `dead` (under the shared lock) before each further byte is placed.
#ifndef RPMA_TCP_TCP_MR_H_
#define RPMA_TCP_TCP_MR_H_

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>

#include "provider/provider.h"
#include "tcp/pmem_persist.h"

namespace rpma::prov::tcp {

struct MrEntry {
  uint8_t* addr = nullptr;
  size_t length = 0;
  int access = 0;
  bool dead = false;  // guarded by MrTable::mu()
  // How a persistent flush of this region is made durable (set when the
  // access has kAccessFlushPersistent; null = msync).
  std::shared_ptr<const PmemPersist> persist;
};

class MrTable {
 public:
  std::shared_mutex& mu() { return mu_; }

  // Adds a registration; returns its key.
  uint32_t Add(std::shared_ptr<MrEntry> e);
  // Removes it (exclusive lock) and marks it dead.
  void Remove(uint32_t key);

  // Caller holds mu() shared. Returns the entry when [addr, addr+len)
  // lies inside the registration `rkey` and all bits of `need` are
  // granted; null otherwise. A zero length checks nothing (as verbs).
  std::shared_ptr<MrEntry> FindLocked(uint32_t rkey, uint64_t addr,
                                      uint64_t len, int need) const;

 private:
  std::shared_mutex mu_;
  std::unordered_map<uint32_t, std::shared_ptr<MrEntry>> map_;
  uint32_t counter_ = 0;
};

class TcpMr : public Mr {
 public:
  TcpMr(MrTable* table, void* addr, size_t length, int access);
  ~TcpMr() override;

  // The persistent flush method chosen at registration (tests, logs).
  PmemPersist::Method persist_method() const { return method_; }

 private:
  MrTable* table_;
  PmemPersist::Method method_ = PmemPersist::Method::kMsync;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_MR_H_
