// The verbs provider's connection end (rdma_cm_id) and its QP.
//
// Ownership: VerbsCmId owns the rdma_cm_id and the QP on it. Its destructor
// destroys the QP, then the id; rdma_destroy_id() only waits for events of
// this id that were retrieved but not yet acknowledged, and
// VerbsCmChannel::GetEvent() acknowledges every event before returning, so
// destruction is bounded. The kernel tears down a still-connected id (the
// peer sees a disconnect).
//
// id->context points back at this wrapper so CM events can name it.
//
// Thread-safety: as provider.h; one CmId is driven by one thread at a time.
#ifndef RPMA_VERBS_VERBS_CM_ID_H_
#define RPMA_VERBS_VERBS_CM_ID_H_

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "provider/provider.h"

namespace rpma::prov::verbs {

class VerbsCmChannel;
class VerbsPd;
class VerbsQp;

class VerbsCmId final : public CmId {
 public:
  // Takes ownership of id. pd (the Pd whose QP this id will carry) and
  // channel (the id's current event channel; null for a synchronous,
  // not yet migrated active id) must outlive this object.
  VerbsCmId(VerbsPd* pd, struct rdma_cm_id* id, VerbsCmChannel* channel);
  ~VerbsCmId() override;

  struct rdma_cm_id* id() const {
    return id_;
  }

  // rdma_create_qp_ex(): RC, sq_sig_all 0, sq/rq sizes from init, one SGE,
  // 8 bytes inline; with IBV_QP_EX_WITH_ATOMIC_WRITE when the device has
  // native atomic write. -EINVAL for a second call, missing or non-verbs
  // CQs/SRQ; the vendor's -errno otherwise.
  int CreateQp(const QpInit& init) override;
  Qp* qp() const override;
  // rdma_destroy_qp() + rdma_create_qp_ex() with `pd` and the QpInit of
  // CreateQp() (CQs are the context's, so they stay). Passive ids only
  // (the caller guarantees: before rdma_accept()); no SRQ. On failure the
  // QP is recreated in the old Pd and the error returned; if that fails
  // too the id has no QP and -EIO is returned.
  int MoveQp(Pd* pd) override;
  // rdma_destroy_qp() + rdma_create_qp_ex() with `init` in the same Pd.
  // The caller guarantees the id is not connected yet. On failure the QP
  // is recreated from the old init and the error returned; if that fails
  // too the id has no QP and -EIO is returned.
  int ReplaceQp(const QpInit& init) override;
  // rdma_migrate_id(). -EINVAL for a non-verbs channel.
  int Migrate(CmChannel* channel) override;
  // rdma_connect() / rdma_accept() with librpma's conn_param (max
  // responder resources / initiator depth, flow control, retry 7, RNR
  // retry 7). Connect needs an event channel (Migrate() first): -EINVAL on
  // a synchronous id, whose rdma_connect() would block.
  int Connect(const void* pdata, uint8_t len) override;
  int Accept(const void* pdata, uint8_t len) override;
  int Reject() override;
  int Disconnect() override;

  // Passive side only: the private data of the connection request that
  // created this id. rdma_cm's ESTABLISHED event on the passive side
  // carries the RTU's (empty) private data, while provider.h promises the
  // peer's, so the channel reports this copy instead.
  bool passive() const { return passive_; }
  // Whether DISCONNECTED or TIMEWAIT_EXIT was already reported (channel).
  bool closed_reported() const { return closed_reported_; }
  void set_closed_reported() { closed_reported_ = true; }
  const std::vector<uint8_t>& request_pdata() const { return request_pdata_; }
  void set_request_pdata(std::vector<uint8_t> pdata) {
    passive_ = true;
    request_pdata_ = std::move(pdata);
  }

 private:
  VerbsPd* pd_;  // the QP's; changes only in MoveQp()
  struct rdma_cm_id* const id_;
  VerbsCmChannel* channel_;
  std::unique_ptr<VerbsQp> qp_;
  QpInit init_;  // of the QP (MoveQp recreates it)
  bool passive_ = false;
  bool closed_reported_ = false;
  std::vector<uint8_t> request_pdata_;
};

// The conn_param librpma passes to rdma_connect()/rdma_accept().
struct rdma_conn_param MakeConnParam(const void* pdata, uint8_t len);

}  // namespace rpma::prov::verbs

#endif  // RPMA_VERBS_VERBS_CM_ID_H_
