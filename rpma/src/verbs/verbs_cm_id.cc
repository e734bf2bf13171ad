#include "verbs/verbs_cm_id.h"

#include <cerrno>
#include <new>

#include "log_internal.h"
#include "verbs/verbs_cm_channel.h"
#include "verbs/verbs_cq.h"
#include "verbs/verbs_device.h"
#include "verbs/verbs_mapping.h"
#include "verbs/verbs_pd.h"
#include "verbs/verbs_qp.h"
#include "verbs/verbs_srq.h"

namespace rpma::prov::verbs {

rdma_conn_param MakeConnParam(const void* pdata, uint8_t len) {
  rdma_conn_param p = {};
  p.private_data = len > 0 ? pdata : nullptr;
  p.private_data_len = pdata != nullptr ? len : 0;
  // rdma_cm clamps these to what the device supports.
  p.responder_resources = RDMA_MAX_RESP_RES;
  p.initiator_depth = RDMA_MAX_INIT_DEPTH;
  p.flow_control = 1;
  p.retry_count = 7;
  p.rnr_retry_count = 7;  // 7 = retry forever while the peer is RNR
  return p;
}

VerbsCmId::VerbsCmId(VerbsPd* pd, rdma_cm_id* id, VerbsCmChannel* channel)
    : pd_(pd), id_(id), channel_(channel) {
  id_->context = this;
}

VerbsCmId::~VerbsCmId() {
  if (qp_) {
    qp_.reset();
    rdma_destroy_qp(id_);
  }
  if (rdma_destroy_id(id_) != 0)
    RPMA_LOG_WARNING("rdma_destroy_id failed: errno %d", errno);
}

int VerbsCmId::CreateQp(const QpInit& init) {
  if (qp_) return -EINVAL;
  auto* send_cq = dynamic_cast<VerbsCq*>(init.send_cq);
  auto* recv_cq = dynamic_cast<VerbsCq*>(init.recv_cq);
  if (send_cq == nullptr || recv_cq == nullptr) return -EINVAL;
  VerbsSrq* srq = nullptr;
  if (init.srq != nullptr) {
    srq = dynamic_cast<VerbsSrq*>(init.srq);
    if (srq == nullptr) return -EINVAL;
  }
  const bool atomic_write = pd_->device()->caps().native_atomic_write;

  ibv_qp_init_attr_ex attr = {};
  attr.send_cq = send_cq->cq();
  attr.recv_cq = recv_cq->cq();
  attr.srq = srq != nullptr ? srq->srq() : nullptr;
  attr.cap.max_send_wr = init.sq_size;
  attr.cap.max_recv_wr = init.rq_size;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = kMaxInlineData;
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 0;
  attr.comp_mask = IBV_QP_INIT_ATTR_PD;
  attr.pd = pd_->pd();
#if RPMA_HAVE_IBV_ATOMIC_WRITE
  if (atomic_write) {
    // An extended QP must list every opcode it will post, including the
    // ones that still go through ibv_post_send().
    attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.send_ops_flags =
        IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
        IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
        IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_WRITE;
  }
#endif
  errno = 0;
  if (rdma_create_qp_ex(id_, &attr) != 0) return NegErrno(-1, errno);
  ibv_qp_ex* qpx = atomic_write ? ibv_qp_to_qp_ex(id_->qp) : nullptr;
  qp_.reset(new (std::nothrow) VerbsQp(id_->qp, qpx));
  if (!qp_) {
    rdma_destroy_qp(id_);
    return -ENOMEM;
  }
  init_ = init;
  return 0;
}

Qp* VerbsCmId::qp() const { return qp_.get(); }

int VerbsCmId::MoveQp(Pd* pd) {
  auto* vpd = dynamic_cast<VerbsPd*>(pd);
  if (vpd == nullptr || !qp_ || !passive_ || init_.srq != nullptr ||
      vpd->device() != pd_->device())
    return -EINVAL;
  if (vpd == pd_) return 0;
  VerbsPd* old = pd_;
  qp_.reset();
  rdma_destroy_qp(id_);
  pd_ = vpd;
  const QpInit init = init_;
  int rc = CreateQp(init);
  if (rc == 0) return 0;
  pd_ = old;
  if (CreateQp(init) == 0) return rc;
  RPMA_LOG_ERROR("recreating a queue pair in its old protection domain failed");
  return -EIO;
}

int VerbsCmId::ReplaceQp(const QpInit& init) {
  if (!qp_ || dynamic_cast<VerbsCq*>(init.send_cq) == nullptr ||
      dynamic_cast<VerbsCq*>(init.recv_cq) == nullptr ||
      (init.srq != nullptr && dynamic_cast<VerbsSrq*>(init.srq) == nullptr))
    return -EINVAL;
  const QpInit old = init_;
  qp_.reset();
  rdma_destroy_qp(id_);
  int rc = CreateQp(init);
  if (rc == 0) return 0;
  if (CreateQp(old) == 0) return rc;
  RPMA_LOG_ERROR("recreating a queue pair from its old CQs failed");
  return -EIO;
}

int VerbsCmId::Migrate(CmChannel* channel) {
  auto* ch = dynamic_cast<VerbsCmChannel*>(channel);
  if (ch == nullptr) return -EINVAL;
  errno = 0;
  if (rdma_migrate_id(id_, ch->channel()) != 0) return NegErrno(-1, errno);
  channel_ = ch;
  return 0;
}

int VerbsCmId::Connect(const void* pdata, uint8_t len) {
  if (channel_ == nullptr) return -EINVAL;
  rdma_conn_param p = MakeConnParam(pdata, len);
  errno = 0;
  return rdma_connect(id_, &p) == 0 ? 0 : NegErrno(-1, errno);
}

int VerbsCmId::Accept(const void* pdata, uint8_t len) {
  rdma_conn_param p = MakeConnParam(pdata, len);
  errno = 0;
  return rdma_accept(id_, &p) == 0 ? 0 : NegErrno(-1, errno);
}

int VerbsCmId::Reject() {
  errno = 0;
  return rdma_reject(id_, nullptr, 0) == 0 ? 0 : NegErrno(-1, errno);
}

int VerbsCmId::Disconnect() {
  errno = 0;
  return rdma_disconnect(id_) == 0 ? 0 : NegErrno(-1, errno);
}

}  // namespace rpma::prov::verbs
