// What a peer can make the tcp provider's target hold, and for how long.
//
// A real RC QP buffers nothing for its peer: it answers RNR and the sender
// retries, and a responder that cannot send stops reading. The tcp
// provider keeps a little (so that the other direction of a connection
// keeps flowing while one request waits), within the bounds below; when
// a bound is hit it behaves as RC does: reading stops (the "retry"), and
// an RNR wait that does not end within rnr_retry_ms fails the request
// with IBV_WC_RNR_RETRY_EXC_ERR at the initiator (both QPs fail).
//
// Thread-safety: read by engine threads without synchronisation (each
// field is read once per check); only tests change them.
#ifndef RPMA_TCP_LIMITS_H_
#define RPMA_TCP_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace rpma::prov::tcp {

struct Limits {
  // Requests (with payloads) kept behind a SEND / WRITE_IMM that waits for
  // a receive, per connection.
  size_t max_stash_bytes = 256u << 10;
  // Responses queued for a peer that does not read them, per connection;
  // beyond it the connection stops reading requests. Counted in frames
  // (each costs ~100 bytes; READ data is sent from registered memory,
  // never copied), responses only: our own requests are bounded by our
  // send queue and never stop our reading.
  size_t max_out_responses = 1024;
  // Everything the connections of one Pd (one engine) hold for their
  // peers together: stashes plus queued responses. A connection that holds
  // something stops reading requests while the total is at the bound.
  size_t peer_hold_bytes = 32u << 20;
  // An RNR wait that hits a bound above ends after this long with
  // IBV_WC_RNR_RETRY_EXC_ERR (rnr_retry 7 x the longest RNR timer of
  // 491 ms, rounded).
  int64_t rnr_retry_ms = 3500;
  // A connection whose output made no progress for this long (the peer
  // stopped reading: zero window) is closed.
  int64_t stall_ms = 10000;
};

const Limits& GetLimits();
// Tests only: change the limits before creating connections.
Limits* MutableLimitsForTest();

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_LIMITS_H_
