#include "tickets.h"

#include <sys/random.h>

#include <algorithm>
#include <cstring>

namespace kv::server {
namespace {

// Constant time over the ticket's bytes: a timing difference must not tell
// how much of a guess was right.
bool SameTicket(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); i++) {
    diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace

Status Tickets::Issue(OpenKeyspace* ks, uint8_t out[protocol::kTicketSize],
                      bool peer) {
  uint8_t bytes[protocol::kTicketSize];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable("getrandom failed: no ticket issued");
    }
    got += static_cast<size_t>(n);
  }
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked(now);
  if (entries_.size() >= kMax) entries_.pop_front();
  entries_.push_back(
      {std::string(reinterpret_cast<const char*>(bytes), sizeof(bytes)), ks,
       now + lifetime_, peer});
  std::memcpy(out, bytes, sizeof(bytes));
  return Status::Ok();
}

OpenKeyspace* Tickets::Redeem(std::string_view ticket, bool* peer) {
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked(Clock::now());
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return SameTicket(e.bytes, ticket);
  });
  if (it == entries_.end()) return nullptr;
  OpenKeyspace* ks = it->ks;
  if (peer != nullptr) *peer = it->peer;
  entries_.erase(it);
  return ks;
}

void Tickets::Forget(const OpenKeyspace* ks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = it->ks == ks ? entries_.erase(it) : std::next(it);
  }
}

void Tickets::DropExpiredLocked(Clock::time_point now) {
  while (!entries_.empty() && entries_.front().expires <= now) {
    entries_.pop_front();
  }
}

}  // namespace kv::server
