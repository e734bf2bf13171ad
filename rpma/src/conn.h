// struct rpma_conn: an initiated or established connection. It owns its
// CM id (moved to a CM event channel of its own, so it outlives the
// endpoint), its CQs and, for the read-after-write flush, an 8-byte
// registered landing buffer.
#ifndef RPMA_CONN_H_
#define RPMA_CONN_H_

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "conn_group.h"
#include "conn_req.h"
#include "cq.h"
#include "peer.h"

namespace rpma {
struct Munmap {
  size_t length = 0;
  void operator()(void* p) const { munmap(p, length); }
};
}  // namespace rpma

struct rpma_conn {
  explicit rpma_conn(rpma_peer* p) : peer(p) {}
  // See rpma_conn_req::origin_peer (moved here by ConnNew).
  std::unique_ptr<rpma::PeerRef> origin_peer;
  rpma::PeerRef peer;  // the QP's protection domain; released after the rest
  // Destruction (reverse order): id (and QP), flush MR, flush page, CQs,
  // shared channel, event channel — QP before what it uses.
  std::unique_ptr<rpma::prov::CmChannel> evch;
  std::unique_ptr<rpma::prov::CompletionChannel> shared_channel;
  std::unique_ptr<rpma_cq> cq;
  std::unique_ptr<rpma_cq> rcq;
  std::unique_ptr<void, rpma::Munmap> flush_page;
  std::unique_ptr<rpma::prov::Mr> flush_mr;  // APM only
  // The endpoint's channel while an accepted id is still on it (until
  // ConnSetup migrates the id; outlives the id: declared first).
  std::shared_ptr<rpma::prov::CmChannel> origin_channel;
  std::unique_ptr<rpma::prov::CmId> id;

  bool native_flush = false;
  bool native_atomic_write = false;
  std::atomic<bool> direct_write_to_pmem{false};

  mutable std::mutex pdata_mu;
  std::vector<uint8_t> private_data;  // the peer's

  // A member of a connection group (rpma_conn_req_set_group): evch is
  // null, the id is on the group's CM channel, and the events the group
  // took for this connection wait here for rpma_conn_next_event().
  std::mutex events_mu;
  std::deque<rpma::prov::CmEvent> group_events;
  // Last: unmaps the connection from its group before the rest goes.
  std::unique_ptr<rpma::GroupMembership> group;
};

namespace rpma {

// Creates the connection object from a request (consumed): a new CM event
// channel the id migrates to, and the flush object. RPMA_E_* on failure.
int ConnNew(std::unique_ptr<rpma_conn_req> req,
            std::unique_ptr<rpma_conn>* out);

}  // namespace rpma

#endif  // RPMA_CONN_H_
