// Penalty for remote access errors; see access_penalty.h.
#include "tcp/access_penalty.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>

namespace rpma::prov::tcp {

AccessPenalty& AccessPenalty::Global() {
  static AccessPenalty* p = new AccessPenalty();  // never destroyed
  return *p;
}

int64_t AccessPenalty::Penalty(uint32_t errors) {
  if (errors == 0) return 0;
  int64_t p = PenaltyPolicy::kBaseMs;
  for (uint32_t i = 1; i < errors && p < PenaltyPolicy::kCapMs; ++i) p *= 2;
  return std::min(p, PenaltyPolicy::kCapMs);
}

void AccessPenalty::ExpireLocked(int64_t now_ms) {
  for (auto it = map_.begin(); it != map_.end();) {
    bool quiet = now_ms - it->second.last_error_ms >= PenaltyPolicy::kQuietMs &&
                 now_ms >= it->second.next_delivery_ms;
    it = quiet ? map_.erase(it) : std::next(it);
  }
}

AccessPenalty::Entry* AccessPenalty::FindLocked(const std::string& ip,
                                                int64_t now_ms) {
  auto it = map_.find(ip);
  if (it == map_.end()) return nullptr;
  if (now_ms - it->second.last_error_ms >= PenaltyPolicy::kQuietMs &&
      now_ms >= it->second.next_delivery_ms) {
    map_.erase(it);  // forgiven
    return nullptr;
  }
  return &it->second;
}

void AccessPenalty::RecordError(const std::string& ip, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindLocked(ip, now_ms);
  if (e == nullptr) {
    if (map_.size() >= PenaltyPolicy::kMaxAddresses) ExpireLocked(now_ms);
    // Still full: the address with the oldest error makes room.
    if (map_.size() >= PenaltyPolicy::kMaxAddresses) {
      auto oldest = std::min_element(
          map_.begin(), map_.end(), [](const auto& a, const auto& b) {
            return a.second.last_error_ms < b.second.last_error_ms;
          });
      map_.erase(oldest);
    }
    e = &map_[ip];
  }
  if (e->errors < UINT32_MAX) ++e->errors;
  e->last_error_ms = now_ms;
}

int64_t AccessPenalty::PenaltyMs(const std::string& ip, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindLocked(ip, now_ms);
  return e == nullptr ? 0 : Penalty(e->errors);
}

int64_t AccessPenalty::DeliveryTime(const std::string& ip, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindLocked(ip, now_ms);
  if (e == nullptr) return now_ms;
  int64_t at = std::max(now_ms, e->next_delivery_ms) + Penalty(e->errors);
  if (at - now_ms > PenaltyPolicy::kMaxHoldMs) return -1;
  e->next_delivery_ms = at;
  return at;
}

uint32_t AccessPenalty::errors(const std::string& ip) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(ip);
  return it == map_.end() ? 0 : it->second.errors;
}

void AccessPenalty::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  map_.clear();
}

std::string PeerIp(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  char buf[INET6_ADDRSTRLEN] = {};
  const void* a = nullptr;
  if (ss.ss_family == AF_INET) {
    a = &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr;
  } else if (ss.ss_family == AF_INET6) {
    a = &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr;
  } else {
    return "";
  }
  if (inet_ntop(ss.ss_family, a, buf, sizeof(buf)) == nullptr) return "";
  return buf;
}

}  // namespace rpma::prov::tcp
