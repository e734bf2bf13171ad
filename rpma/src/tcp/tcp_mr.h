// Memory registrations of a tcp Pd and the rkey table the engine checks
// every remote access against.
//
// Synchronisation with deregistration: the engine holds the table's
// shared lock for the whole time it touches registered memory (one batch
// of one connection); ~TcpMr takes the exclusive lock to remove the entry
// and mark it dead, so once it returns the engine never touches the
// memory again. A payload that spans batches keeps its entry and checks
// `dead` (under the shared lock) before each further byte is placed.
//
// The remote floor (rpma_mr_advance) follows the same argument:
// RaiseFloor() writes `floor` under the exclusive lock, so no batch is
// placing bytes while it runs; every later batch checks the new floor
// before it places anything (TcpTarget::CheckDestination for a payload
// in flight, FindLocked for a new request). Hence once RaiseFloor()
// returns no remote write lands below the floor. A READ accepted before
// may still be sent from below it (reads change nothing).
//
// rkeys: 32 bits from getrandom(2) each (no counter, no per-table salt),
// never 0, unique within the table.
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
  // rpma_conn_mr_reg: the only QP (TcpQp::serial()) that may access the
  // region remotely; 0 = any QP of the Pd.
  uint64_t owner_qp = 0;
  size_t floor = 0;   // guarded by MrTable::mu(): remote access below fails
  bool dead = false;  // guarded by MrTable::mu()
  // How a persistent flush of this region is made durable (set when the
  // access has kAccessFlushPersistent; null = msync).
  std::shared_ptr<const PmemPersist> persist;
};

class MrTable {
 public:
  std::shared_mutex& mu() { return mu_; }

  // Adds a registration; returns its key (random, non-zero, unique).
  uint32_t Add(std::shared_ptr<MrEntry> e);
  // Removes it (exclusive lock) and marks it dead.
  void Remove(uint32_t key);
  // Raises the entry's floor (exclusive lock). -EINVAL: offset > length,
  // below the current floor, or no such key.
  int RaiseFloor(uint32_t key, size_t offset);

  // Caller holds mu() shared. Returns the entry when [addr, addr+len)
  // lies inside the registration `rkey` at or above its floor, all bits
  // of `need` are granted and the entry is not owned by another QP than
  // `qp_serial`; null otherwise. A zero length checks nothing (as verbs).
  std::shared_ptr<MrEntry> FindLocked(uint32_t rkey, uint64_t addr,
                                      uint64_t len, int need,
                                      uint64_t qp_serial) const;

 private:
  std::shared_mutex mu_;
  std::unordered_map<uint32_t, std::shared_ptr<MrEntry>> map_;
};

// 32 random bits from getrandom(2) (a CSPRNG); aborts if the kernel
// cannot supply them (never happens after boot on Linux >= 3.17).
uint32_t RandomKey();

class TcpMr : public Mr {
 public:
  // owner_qp: see MrEntry (0 = every QP of the Pd).
  TcpMr(MrTable* table, void* addr, size_t length, int access,
        uint64_t owner_qp = 0);
  ~TcpMr() override;

  int RaiseRemoteFloor(size_t offset) override;

  // The persistent flush method chosen at registration (tests, logs).
  PmemPersist::Method persist_method() const { return method_; }

 private:
  MrTable* table_;
  PmemPersist::Method method_ = PmemPersist::Method::kMsync;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_MR_H_
