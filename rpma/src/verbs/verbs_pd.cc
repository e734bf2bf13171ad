#include "verbs/verbs_pd.h"

#include <netdb.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <new>

#include "log_internal.h"
#include "verbs/verbs_cm_channel.h"
#include "verbs/verbs_cm_id.h"
#include "verbs/verbs_cq.h"
#include "verbs/verbs_device.h"
#include "verbs/verbs_mapping.h"
#include "verbs/verbs_srq.h"

namespace rpma::prov::verbs {

VerbsMr::VerbsMr(ibv_mr* mr, int access) : mr_(mr) {
  addr_ = mr->addr;
  length_ = mr->length;
  lkey_ = mr->lkey;
  rkey_ = mr->rkey;
  access_ = access;
}

VerbsMr::~VerbsMr() {
  int rc = ibv_dereg_mr(mr_);
  if (rc != 0) RPMA_LOG_WARNING("ibv_dereg_mr failed: %d", rc);
}

VerbsPd::VerbsPd(VerbsDevice* device, ibv_pd* pd) : device_(device), pd_(pd) {}

VerbsPd::~VerbsPd() {
  int rc = ibv_dealloc_pd(pd_);
  if (rc != 0) RPMA_LOG_WARNING("ibv_dealloc_pd failed: %d", rc);
}

int VerbsPd::RegMr(void* addr, size_t length, int access,
                   std::unique_ptr<Mr>* out) {
  if (addr == nullptr || length == 0 || (access & ~kAccessAll) != 0)
    return -EINVAL;
  const int ibv_access = AccessToIbv(access);
  errno = 0;
  ibv_mr* mr = ibv_reg_mr(pd_, addr, length, ibv_access);
  if (mr == nullptr && errno == EOPNOTSUPP && device_->caps().odp) {
    errno = 0;
    mr = ibv_reg_mr(pd_, addr, length, ibv_access | IBV_ACCESS_ON_DEMAND);
  }
  if (mr == nullptr) return NegErrno(0, errno);
  auto* wrapper = new (std::nothrow) VerbsMr(mr, access);
  if (wrapper == nullptr) {
    ibv_dereg_mr(mr);
    return -ENOMEM;
  }
  out->reset(wrapper);
  return 0;
}

int VerbsPd::CreateCompletionChannel(std::unique_ptr<CompletionChannel>* out) {
  errno = 0;
  ibv_comp_channel* ch = ibv_create_comp_channel(pd_->context);
  if (ch == nullptr) return NegErrno(0, errno);
  auto* wrapper = new (std::nothrow) VerbsCompletionChannel(ch);
  if (wrapper == nullptr) {
    ibv_destroy_comp_channel(ch);
    return -ENOMEM;
  }
  out->reset(wrapper);
  return 0;
}

int VerbsPd::CreateCq(int cqe, CompletionChannel* channel,
                      std::unique_ptr<Cq>* out) {
  VerbsCompletionChannel* ch = nullptr;
  if (channel != nullptr) {
    ch = dynamic_cast<VerbsCompletionChannel*>(channel);
    if (ch == nullptr) return -EINVAL;
  }
  std::unique_ptr<VerbsCq> cq(new (std::nothrow) VerbsCq(ch));
  if (!cq) return -ENOMEM;
  int rc = cq->Init(pd_->context, cqe);
  if (rc != 0) return rc;
  *out = std::move(cq);
  return 0;
}

int VerbsPd::CreateSrq(uint32_t max_wr, std::unique_ptr<Srq>* out) {
  ibv_srq_init_attr attr = {};
  attr.attr.max_wr = max_wr;
  attr.attr.max_sge = 1;
  attr.attr.srq_limit = 0;
  errno = 0;
  ibv_srq* srq = ibv_create_srq(pd_, &attr);
  if (srq == nullptr) return NegErrno(0, errno);
  auto* wrapper = new (std::nothrow) VerbsSrq(srq);
  if (wrapper == nullptr) {
    ibv_destroy_srq(srq);
    return -ENOMEM;
  }
  out->reset(wrapper);
  return 0;
}

int VerbsPd::CreateCmChannel(std::unique_ptr<CmChannel>* out) {
  errno = 0;
  rdma_event_channel* ch = rdma_create_event_channel();
  if (ch == nullptr) return NegErrno(0, errno);
  auto* wrapper = new (std::nothrow) VerbsCmChannel(this, ch);
  if (wrapper == nullptr) {
    rdma_destroy_event_channel(ch);
    return -ENOMEM;
  }
  out->reset(wrapper);
  return 0;
}

int ResolveAddrInfo(const char* addr, const char* port, bool passive,
                    rdma_addrinfo** out) {
  if (addr == nullptr) return -EINVAL;
  rdma_addrinfo hints = {};
  hints.ai_flags = passive ? RAI_PASSIVE : 0;
  hints.ai_qp_type = IBV_QPT_RC;
  hints.ai_port_space = RDMA_PS_TCP;
  errno = 0;
  int rc = rdma_getaddrinfo(addr, port, &hints, out);
  if (rc == 0) return 0;
  // -1 + errno is librdmacm's own failure (e.g. ENODEV from ucma_init()
  // when no rdma_cm device exists; EAI_BADFLAGS, also -1, cannot happen with
  // these hints); other values are getaddrinfo()'s EAI_* codes.
  const int e = errno;
  if (rc == -1) return NegErrno(-1, e);
  if (rc == EAI_MEMORY) return -ENOMEM;
  return -EINVAL;
}

int VerbsPd::Listen(const char* addr, const char* port, CmChannel* channel,
                    std::unique_ptr<Listener>* out) {
  auto* ch = dynamic_cast<VerbsCmChannel*>(channel);
  if (ch == nullptr || port == nullptr) return -EINVAL;
  rdma_addrinfo* res = nullptr;
  int rc = ResolveAddrInfo(addr, port, /*passive=*/true, &res);
  if (rc != 0) return rc;
  rdma_cm_id* id = nullptr;
  // The listening id's context stays null: ids born from its connection
  // requests inherit it and get their own wrapper in GetEvent().
  if (rdma_create_id(ch->channel(), &id, nullptr, RDMA_PS_TCP) != 0) {
    rc = NegErrno(-1, errno);
    rdma_freeaddrinfo(res);
    return rc;
  }
  if (rdma_bind_addr(id, res->ai_src_addr) != 0 || rdma_listen(id, 0) != 0) {
    rc = NegErrno(-1, errno);
    rdma_destroy_id(id);
    rdma_freeaddrinfo(res);
    return rc;
  }
  rdma_freeaddrinfo(res);
  auto* wrapper = new (std::nothrow) VerbsListener(id);
  if (wrapper == nullptr) {
    rdma_destroy_id(id);
    return -ENOMEM;
  }
  out->reset(wrapper);
  return 0;
}

int VerbsPd::CreateActiveId(const char* addr, const char* port, int timeout_ms,
                            std::unique_ptr<CmId>* out) {
  if (port == nullptr || timeout_ms < 0) return -EINVAL;
  rdma_addrinfo* res = nullptr;
  int rc = ResolveAddrInfo(addr, port, /*passive=*/false, &res);
  if (rc != 0) return rc;
  // Synchronous (channel-less) id: resolution blocks here for at most
  // timeout_ms per step, and nothing goes on the wire until Connect().
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP) != 0) {
    rc = NegErrno(-1, errno);
    rdma_freeaddrinfo(res);
    return rc;
  }
  if (rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr, timeout_ms) !=
          0 ||
      rdma_resolve_route(id, timeout_ms) != 0) {
    rc = NegErrno(-1, errno);
    rdma_destroy_id(id);
    rdma_freeaddrinfo(res);
    return rc;
  }
  rdma_freeaddrinfo(res);
  std::unique_ptr<VerbsCmId> wrapper(new (std::nothrow)
                                         VerbsCmId(this, id, nullptr));
  if (!wrapper) {
    rdma_destroy_id(id);
    return -ENOMEM;
  }
  *out = std::move(wrapper);
  return 0;
}

}  // namespace rpma::prov::verbs
