// Memory registrations and the rkey table; see tcp_mr.h.
#include "tcp/tcp_mr.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "log_internal.h"

namespace rpma::prov::tcp {

uint32_t RandomKey() {
  uint32_t key = 0;
  for (;;) {
    ssize_t n = getrandom(&key, sizeof(key), 0);
    if (n == static_cast<ssize_t>(sizeof(key))) return key;
    if (n < 0 && errno == EINTR) continue;
    RPMA_LOG_FATAL("tcp: getrandom failed (errno %d); no safe rkey", errno);
    std::abort();
  }
}

uint32_t MrTable::Add(std::shared_ptr<MrEntry> e) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  // Unpredictable keys: knowing one's own rkeys tells nothing about
  // anyone else's (the only structure is "non-zero, unique here").
  uint32_t key;
  do {
    key = RandomKey();
  } while (key == 0 || map_.count(key) != 0);
  map_[key] = std::move(e);
  return key;
}

void MrTable::Remove(uint32_t key) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return;
  it->second->dead = true;
  map_.erase(it);
}

int MrTable::RaiseFloor(uint32_t key, size_t offset) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return -EINVAL;
  MrEntry& e = *it->second;
  if (offset > e.length || offset < e.floor) return -EINVAL;
  e.floor = offset;
  return 0;
}

std::shared_ptr<MrEntry> MrTable::FindLocked(uint32_t rkey, uint64_t addr,
                                             uint64_t len, int need,
                                             uint64_t qp_serial) const {
  auto it = map_.find(rkey);
  if (it == map_.end()) return nullptr;
  const MrEntry& e = *it->second;
  if ((e.access & need) != need) return nullptr;
  if (e.owner_qp != 0 && e.owner_qp != qp_serial) return nullptr;
  if (len == 0) return it->second;
  uint64_t base = reinterpret_cast<uintptr_t>(e.addr);
  // Overflow-safe: addr >= base + floor && addr - base + len <= length.
  if (addr < base || addr - base > e.length || len > e.length - (addr - base)) {
    return nullptr;
  }
  if (addr - base < e.floor) return nullptr;
  return it->second;
}

TcpMr::TcpMr(MrTable* table, void* addr, size_t length, int access,
             uint64_t owner_qp)
    : table_(table) {
  auto e = std::make_shared<MrEntry>();
  e->addr = static_cast<uint8_t*>(addr);
  e->length = length;
  e->access = access;
  e->owner_qp = owner_qp;
  if (access & kAccessFlushPersistent) {
    e->persist = PmemPersist::Probe(addr, length);
    method_ = e->persist->method();
  }
  addr_ = addr;
  length_ = length;
  access_ = access;
  rkey_ = table_->Add(std::move(e));
  lkey_ = rkey_;
}

TcpMr::~TcpMr() { table_->Remove(rkey_); }

int TcpMr::RaiseRemoteFloor(size_t offset) {
  return table_->RaiseFloor(rkey_, offset);
}

}  // namespace rpma::prov::tcp
