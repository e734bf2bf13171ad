// The verbs provider's protection domain (ibv_pd) and memory registration
// (ibv_mr), and the factory for everything created under a PD.
//
// Ownership: VerbsPd owns its ibv_pd; VerbsMr owns its ibv_mr. The semantic
// layer destroys every object made by a Pd before the Pd (provider.h), so
// ibv_dealloc_pd() finds no users; if it still fails (EBUSY) the PD is
// leaked with a warning rather than crashing.
//
// Thread-safety: creating and destroying objects of one Pd from several
// threads is safe (libibverbs serialises on the context).
#ifndef RPMA_VERBS_VERBS_PD_H_
#define RPMA_VERBS_VERBS_PD_H_

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

#include "provider/provider.h"

namespace rpma::prov::verbs {

class VerbsDevice;

class VerbsMr final : public Mr {
 public:
  // Takes ownership of mr; `access` is the provider's kAccess* mask.
  VerbsMr(struct ibv_mr* mr, int access);
  ~VerbsMr() override;

 private:
  struct ibv_mr* const mr_;
};

class VerbsPd final : public Pd {
 public:
  // Takes ownership of pd; device outlives everything (never freed).
  VerbsPd(VerbsDevice* device, struct ibv_pd* pd);
  ~VerbsPd() override;

  struct ibv_pd* pd() const {
    return pd_;
  }
  VerbsDevice* device() const { return device_; }

  // ibv_reg_mr() with AccessToIbv(access); on EOPNOTSUPP and an ODP-capable
  // device, retried with IBV_ACCESS_ON_DEMAND (FS-DAX mappings need it).
  // -EINVAL for a null addr or zero length; else ibv_reg_mr()'s -errno.
  int RegMr(void* addr, size_t length, int access,
            std::unique_ptr<Mr>* out) override;
  int CreateCompletionChannel(std::unique_ptr<CompletionChannel>* out) override;
  // -EINVAL if channel is not a verbs channel.
  int CreateCq(int cqe, CompletionChannel* channel,
               std::unique_ptr<Cq>* out) override;
  // ibv_create_srq(max_wr, max_sge 1, srq_limit 0).
  int CreateSrq(uint32_t max_wr, std::unique_ptr<Srq>* out) override;
  int CreateCmChannel(std::unique_ptr<CmChannel>* out) override;
  // rdma_getaddrinfo(passive) + rdma_create_id(channel) + rdma_bind_addr +
  // rdma_listen. -EINVAL for an unresolvable address or a non-verbs
  // channel; -EADDRINUSE / -EADDRNOTAVAIL from the bind.
  int Listen(const char* addr, const char* port, CmChannel* channel,
             std::unique_ptr<Listener>* out) override;
  // A synchronous CM id + rdma_resolve_addr + rdma_resolve_route, each
  // bounded by timeout_ms. The id has no channel: the caller must
  // Migrate() it before Connect(). -EINVAL for an unresolvable address;
  // the resolve calls' -errno (e.g. -ETIMEDOUT, -EHOSTUNREACH) otherwise.
  int CreateActiveId(const char* addr, const char* port, int timeout_ms,
                     std::unique_ptr<CmId>* out) override;

 private:
  VerbsDevice* const device_;
  struct ibv_pd* const pd_;
};

// rdma_getaddrinfo() with RC / RDMA_PS_TCP hints. -EINVAL when addr is null
// or does not resolve, -ENOMEM, or librdmacm's own -errno (-ENODEV when it
// finds no RDMA device). Shared by device lookup, Listen and CreateActiveId.
int ResolveAddrInfo(const char* addr, const char* port, bool passive,
                    struct rdma_addrinfo** out);

}  // namespace rpma::prov::verbs

#endif  // RPMA_VERBS_VERBS_PD_H_
