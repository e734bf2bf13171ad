// struct rpma_peer: a device plus the protection domain everything of the
// application is created under.
#ifndef RPMA_PEER_H_
#define RPMA_PEER_H_

#include <atomic>
#include <memory>

#include "provider/provider.h"

struct rpma_peer {
  rpma::prov::Device* device = nullptr;  // lives until process exit
  rpma::prov::DeviceCaps caps;
  // Objects made from this peer (MRs, SRQs, endpoints, requests,
  // connections). rpma_peer_delete() with live objects behaves like a
  // failing ibv_dealloc_pd: RPMA_E_PROVIDER and the PD is leaked, never
  // destroyed under them.
  // Shared so that an object outliving its (wrongly deleted) peer can
  // still uncount itself.
  std::shared_ptr<std::atomic<int>> live_objects =
      std::make_shared<std::atomic<int>>(0);
  std::unique_ptr<rpma::prov::Pd> pd;
};

namespace rpma {

// Counts one object of a peer for its lifetime. Declare it as the FIRST
// member of an object so it is released after the provider objects.
class PeerRef {
 public:
  explicit PeerRef(rpma_peer* peer) : peer_(peer), count_(peer->live_objects) {
    ++*count_;
  }
  ~PeerRef() { --*count_; }
  // Counts the object for `peer` instead (rpma_conn_req_set_peer).
  void Rebind(rpma_peer* peer) {
    std::shared_ptr<std::atomic<int>> c = peer->live_objects;
    ++*c;
    --*count_;
    count_ = std::move(c);
    peer_ = peer;
  }
  PeerRef(const PeerRef&) = delete;
  PeerRef& operator=(const PeerRef&) = delete;
  rpma_peer* get() const { return peer_; }
  rpma_peer* operator->() const { return peer_; }

 private:
  rpma_peer* peer_;
  std::shared_ptr<std::atomic<int>> count_;
};

// librpma's usage -> access mapping (rpma_peer_usage2access): the flush
// usages need remote read for the read-after-write emulation, or the
// native flush rights when the device flushes natively.
int UsageToAccess(const rpma_peer* peer, int usage);

}  // namespace rpma

#endif  // RPMA_PEER_H_
