// struct rpma_conn_req: a connection request, outgoing (active side, made
// by rpma_conn_req_new) or incoming (passive side, from
// rpma_ep_next_conn_req). Its CQs and queue pair exist already, so
// receives can be posted before connecting; rpma_conn_req_connect() moves
// them into the rpma_conn.
#ifndef RPMA_CONN_REQ_H_
#define RPMA_CONN_REQ_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "conn_cfg.h"
#include "conn_group.h"
#include "cq.h"
#include "peer.h"

struct rpma_conn_req {
  explicit rpma_conn_req(rpma_peer* p) : peer(p) {}
  // rpma_conn_req_set_peer: the peer the request came from (its tcp
  // engine still serves the connection), kept counted after `peer` moved
  // to the new one. Null when never moved. Released after everything.
  std::unique_ptr<rpma::PeerRef> origin_peer;
  rpma::PeerRef peer;  // the QP's protection domain; released after the rest
  bool passive = false;
  bool uses_srq = false;     // made with a conn_cfg that has an SRQ
  bool recv_posted = false;  // rpma_conn_req_recv succeeded once
  // Members in destruction-safe order (reverse of declaration): the CmId
  // (and its QP) goes before the CQs, the CQs before the shared channel.
  std::unique_ptr<rpma::prov::CompletionChannel> shared_channel;
  std::unique_ptr<rpma_cq> cq;
  std::unique_ptr<rpma_cq> rcq;  // null: receives go to the SRQ's RCQ or cq
  // Incoming requests: the endpoint's channel, which the id is on until
  // rpma_conn_req_connect() migrates it (outlives the id: declared first).
  std::shared_ptr<rpma::prov::CmChannel> origin_channel;
  std::unique_ptr<rpma::prov::CmId> id;
  std::vector<uint8_t> private_data;  // incoming requests only
  // What BuildReq made the CQs and QP with (rpma_conn_req_set_group
  // recreates them on the group's channel).
  uint32_t cq_entries = 0;
  uint32_t rcq_entries = 0;
  rpma::prov::QpInit qp_init;
  // rpma_conn_req_set_group; last: counted until everything else is gone.
  std::unique_ptr<rpma::GroupMembership> group;
};

namespace rpma {

// Builds a request around `id` with cfg's CQs, optional shared channel,
// SRQ wiring (librpma's rpma_conn_req_new_from_id) and queue pair.
// `origin`: the channel an incoming request's id is on (null for an
// outgoing one, whose id has no channel yet); the request is passive iff
// it is set, and keeps it alive.
int ConnReqFromId(rpma_peer* peer, std::unique_ptr<prov::CmId> id,
                  const rpma_conn_cfg& cfg,
                  std::shared_ptr<prov::CmChannel> origin,
                  std::unique_ptr<rpma_conn_req>* out);

}  // namespace rpma

#endif  // RPMA_CONN_REQ_H_
