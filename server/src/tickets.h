// kv::server::Tickets — one-time admission tickets for HELLO-admitted
// clients.
//
// A connection that needs HELLO (a long keyspace name, an access key) is
// made before the server knows its keyspace, so its queue pair lives in
// the listener's empty protection domain, where no registration can be
// reached. Once HELLO is accepted the server issues a ticket instead of
// descriptors; the client connects again with the ticket in its private
// data and that connection is made in the keyspace's protection domain
// (kv/protocol.h, kConnectTicket / Admit::kReconnect).
//
// A ticket is 16 bytes from the kernel's CSPRNG (getrandom), good for one
// connect within its lifetime; at most kMax are outstanding (the oldest
// is dropped first), so a client that collects tickets pins no more than
// that.
// Thread-safety: thread-safe.
#ifndef KV_SERVER_TICKETS_H_
#define KV_SERVER_TICKETS_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "kv/protocol.h"
#include "kv/status.h"

namespace kv::server {

struct OpenKeyspace;

class Tickets {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMax = 1024;

  explicit Tickets(std::chrono::milliseconds lifetime) : lifetime_(lifetime) {}

  // A fresh ticket for `ks`, written to out; `peer`: issued to a peer
  // kvserver's HELLO (kHelloPeer). Errors: unavailable (no randomness).
  Status Issue(OpenKeyspace* ks, uint8_t out[protocol::kTicketSize],
               bool peer = false);
  // The keyspace a ticket was issued for, consuming it; nullptr when the
  // ticket is unknown, used or expired. *peer (may be null): whether it
  // was issued to a peer.
  OpenKeyspace* Redeem(std::string_view ticket, bool* peer = nullptr);
  // Drops every ticket issued for `ks` (a keyspace about to go).
  void Forget(const OpenKeyspace* ks);

 private:
  struct Entry {
    std::string bytes;
    OpenKeyspace* ks;
    Clock::time_point expires;
    bool peer;
  };
  void DropExpiredLocked(Clock::time_point now);

  const std::chrono::milliseconds lifetime_;
  std::mutex mu_;
  std::deque<Entry> entries_;  // in issue order
};

}  // namespace kv::server

#endif  // KV_SERVER_TICKETS_H_
