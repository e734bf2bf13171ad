#include "verbs/verbs_mapping.h"

#include <netinet/in.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace rpma::prov::verbs {

int AccessToIbv(int access) {
  int ibv = 0;
  if (access & kAccessLocalWrite) ibv |= IBV_ACCESS_LOCAL_WRITE;
  if (access & kAccessRemoteWrite)
    ibv |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  if (access & kAccessRemoteRead) ibv |= IBV_ACCESS_REMOTE_READ;
  if (access & (kAccessFlushVisibility | kAccessFlushPersistent))
    ibv |= IBV_ACCESS_REMOTE_READ;
  return ibv;
}

DeviceCaps CapsFromAttr(const struct ibv_device_attr_ex& attr,
                        enum ibv_transport_type transport,
                        bool allow_native_atomic_write) {
  DeviceCaps caps;
  const uint32_t rc_rw = IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ;
  caps.odp = (attr.odp_caps.general_caps & IBV_ODP_SUPPORT) != 0 &&
             (attr.odp_caps.per_transport_caps.rc_odp_caps & rc_rw) == rc_rw;
  caps.native_atomic_write =
      kHaveIbvAtomicWrite && allow_native_atomic_write &&
      (attr.device_cap_flags_ex & kDeviceCapAtomicWrite) != 0;
  caps.native_flush = false;
  caps.iwarp = transport == IBV_TRANSPORT_IWARP;
  return caps;
}

bool NativeAtomicWriteAllowed() {
  const char* env = std::getenv("RPMA_VERBS_NATIVE_ATOMIC_WRITE");
  return env != nullptr && std::strcmp(env, "1") == 0;
}

unsigned SendFlags(const SendWr& wr) {
  unsigned flags = 0;
  if (wr.signaled) flags |= IBV_SEND_SIGNALED;
  if (wr.fence) flags |= IBV_SEND_FENCE;
  if (wr.inline_data) flags |= IBV_SEND_INLINE;
  return flags;
}

int ToIbvSge(const Sge& in, struct ibv_sge* sge) {
  *sge = {};
  if (in.length == 0) return 0;
  sge->addr = reinterpret_cast<uintptr_t>(in.addr);
  sge->length = in.length;
  sge->lkey = in.lkey;
  return 1;
}

int BuildSendWr(const SendWr& wr, struct ibv_sge* sge,
                struct ibv_send_wr* out) {
  ibv_send_wr w = {};
  w.wr_id = wr.wr_id;
  w.send_flags = SendFlags(wr);
  switch (wr.opcode) {
    case Opcode::kRead:
      w.opcode = IBV_WR_RDMA_READ;
      break;
    case Opcode::kWrite:
      w.opcode = IBV_WR_RDMA_WRITE;
      break;
    case Opcode::kWriteWithImm:
      w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      w.imm_data = wr.imm_data;  // already in network order
      break;
    case Opcode::kSend:
      w.opcode = IBV_WR_SEND;
      break;
    case Opcode::kSendWithImm:
      w.opcode = IBV_WR_SEND_WITH_IMM;
      w.imm_data = wr.imm_data;
      break;
    case Opcode::kAtomicWrite:
    case Opcode::kFlush:
      return -EOPNOTSUPP;
    default:
      return -EINVAL;
  }
  if (w.opcode == IBV_WR_RDMA_READ || w.opcode == IBV_WR_RDMA_WRITE ||
      w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
    w.wr.rdma.remote_addr = wr.remote_addr;
    w.wr.rdma.rkey = wr.rkey;
  }
  w.num_sge = ToIbvSge(wr.sge, sge);
  w.sg_list = w.num_sge > 0 ? sge : nullptr;
  *out = w;
  return 0;
}

void BuildRecvWr(const RecvWr& wr, struct ibv_sge* sge,
                 struct ibv_recv_wr* out) {
  ibv_recv_wr w = {};
  w.wr_id = wr.wr_id;
  w.num_sge = ToIbvSge(wr.sge, sge);
  w.sg_list = w.num_sge > 0 ? sge : nullptr;
  *out = w;
}

CmEventType MapCmEvent(enum rdma_cm_event_type type) {
  switch (type) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
      return CmEventType::kConnectRequest;
    case RDMA_CM_EVENT_ESTABLISHED:
      return CmEventType::kEstablished;
    case RDMA_CM_EVENT_REJECTED:
      return CmEventType::kRejected;
    case RDMA_CM_EVENT_UNREACHABLE:
      return CmEventType::kUnreachable;
    // ADDR_ERROR / ROUTE_ERROR fall to kOther (RPMA_E_UNKNOWN), as in
    // librpma; resolution is synchronous (CreateActiveId), so they never
    // reach a connection's channel.
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return CmEventType::kConnectError;
    case RDMA_CM_EVENT_DISCONNECTED:
      return CmEventType::kDisconnected;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      return CmEventType::kTimewaitExit;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return CmEventType::kDeviceRemoval;
    default:
      return CmEventType::kOther;
  }
}

void NormalizeWc(struct ibv_wc* wc) {
#if RPMA_HAVE_IBV_ATOMIC_WRITE
  if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_ATOMIC_WRITE)
    wc->opcode = IBV_WC_RDMA_WRITE;
#else
  (void)wc;
#endif
}

int NegErrno(int rc, int saved_errno) {
  if (rc > 0) return -rc;
  if (rc == -1 || rc == 0) return saved_errno > 0 ? -saved_errno : -EIO;
  return rc;  // some providers already return -errno
}

bool IsLoopback(const struct sockaddr* sa) {
  if (sa == nullptr) return false;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
           in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace rpma::prov::verbs
