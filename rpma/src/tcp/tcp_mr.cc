// Memory registrations and the rkey table; see tcp_mr.h.
#include "tcp/tcp_mr.h"

#include <mutex>
#include <random>

namespace rpma::prov::tcp {

uint32_t MrTable::Add(std::shared_ptr<MrEntry> e) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  // Keys are not sequential so a forged or stale key rarely hits a live
  // registration; the salt differs per table.
  static thread_local std::mt19937 rng{std::random_device{}()};
  uint32_t key;
  do {
    key = (++counter_ & 0xffffu) | (rng() & 0xffff0000u);
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

std::shared_ptr<MrEntry> MrTable::FindLocked(uint32_t rkey, uint64_t addr,
                                             uint64_t len, int need) const {
  auto it = map_.find(rkey);
  if (it == map_.end()) return nullptr;
  const MrEntry& e = *it->second;
  if ((e.access & need) != need) return nullptr;
  if (len == 0) return it->second;
  uint64_t base = reinterpret_cast<uintptr_t>(e.addr);
  // Overflow-safe: addr >= base && addr - base + len <= length.
  if (addr < base || addr - base > e.length || len > e.length - (addr - base)) {
    return nullptr;
  }
  return it->second;
}

TcpMr::TcpMr(MrTable* table, void* addr, size_t length, int access)
    : table_(table) {
  auto e = std::make_shared<MrEntry>();
  e->addr = static_cast<uint8_t*>(addr);
  e->length = length;
  e->access = access;
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

}  // namespace rpma::prov::tcp
