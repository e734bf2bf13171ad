// Pure translations between the provider interface (provider.h) and
// rdma-core values, kept free of side effects so they are unit-testable on
// hosts without an RDMA device. The verbs provider's objects call only these
// to decide flags, opcodes and event types.
//
// Thread-safety: all functions are pure (no shared state).
#ifndef RPMA_VERBS_VERBS_MAPPING_H_
#define RPMA_VERBS_VERBS_MAPPING_H_

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstdint>

#include "provider/provider.h"

namespace rpma::prov::verbs {

// IB_UVERBS_DEVICE_ATOMIC_WRITE from the kernel uapi (<rdma/ib_user_verbs.h>
// since Linux 6.2). rdma-core 44's copy of that header predates it, while its
// libibverbs already has IBV_WR_ATOMIC_WRITE / ibv_wr_atomic_write(), so the
// bit is spelled out here. ibv_query_device_ex() reports it in
// device_cap_flags_ex exactly as the kernel sets it.
inline constexpr uint64_t kDeviceCapAtomicWrite = 1ULL << 40;

// RPMA_HAVE_IBV_ATOMIC_WRITE (set by rpma/CMakeLists.txt from a compile
// check): libibverbs has IBV_QP_EX_WITH_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE
// and ibv_wr_atomic_write() (rdma-core >= 44). Without them (Ubuntu 22.04,
// RHEL 8) native atomic write is never used and none of them is named.
#ifndef RPMA_HAVE_IBV_ATOMIC_WRITE
#define RPMA_HAVE_IBV_ATOMIC_WRITE 0
#endif
inline constexpr bool kHaveIbvAtomicWrite = RPMA_HAVE_IBV_ATOMIC_WRITE != 0;

// The QP's inline-data limit, as librpma (RPMA_MAX_INLINE_DATA).
inline constexpr uint32_t kMaxInlineData = 8;

// kAccess* -> IBV_ACCESS_*. Flush rights become REMOTE_READ: rdma-core 44
// has no IBV_ACCESS_FLUSH_*, and the emulated flush (librpma's APM) is an
// 8-byte RDMA READ of the flushed range. REMOTE_WRITE implies LOCAL_WRITE
// because ibv_reg_mr() rejects the former without the latter (IB spec
// o10-37.2.3); librpma's WRITE_DST already asks for both.
int AccessToIbv(int access);

// Device capabilities from an ibv_query_device_ex() answer and the
// device's transport. odp requires general ODP support plus RC ODP for
// both WRITE and READ (librpma's rpma_utils_ibv_context_is_odp_capable).
// native_flush is always false on rdma-core 44 (no ibv_wr_flush).
// native_atomic_write needs the device bit AND allow_native_atomic_write:
// the requester's bit says nothing about the responder, and an ATOMIC
// WRITE to a responder without it fails with IBV_WC_REM_INV_REQ_ERR and
// kills the connection, so it is opt-in (RPMA_VERBS_NATIVE_ATOMIC_WRITE=1,
// see docs/verbs_provider.md). iwarp = IBV_TRANSPORT_IWARP.
DeviceCaps CapsFromAttr(const struct ibv_device_attr_ex& attr,
                        enum ibv_transport_type transport,
                        bool allow_native_atomic_write);

// True when RPMA_VERBS_NATIVE_ATOMIC_WRITE=1 (read at device discovery).
bool NativeAtomicWriteAllowed();

// IBV_SEND_* flags of a work request.
unsigned SendFlags(const SendWr& wr);

// Fills *sge from `in`; returns the number of SGEs to post (0 or 1). A
// zero-length element is posted as no SGE at all: some RNICs read a
// byte_count of 0 as 2 GiB.
int ToIbvSge(const Sge& in, struct ibv_sge* sge);

// Builds the legacy ibv_post_send() work request for wr (single WR, next
// null). *sge must outlive *out until ibv_post_send() returns.
// -EOPNOTSUPP for kAtomicWrite (posted through ibv_qp_ex instead) and kFlush
// (no native flush on rdma-core 44); -EINVAL for an unknown opcode.
int BuildSendWr(const SendWr& wr, struct ibv_sge* sge, struct ibv_send_wr* out);

// Builds the ibv_post_recv()/ibv_post_srq_recv() work request.
void BuildRecvWr(const RecvWr& wr, struct ibv_sge* sge,
                 struct ibv_recv_wr* out);

// rdma_cm event type -> provider event type (see provider.h CmEventType).
CmEventType MapCmEvent(enum rdma_cm_event_type type);

// Makes a completion follow provider.h's opcode table: a native atomic write
// completes as IBV_WC_ATOMIC_WRITE on the NIC but is reported as
// IBV_WC_RDMA_WRITE, as librpma's emulation (and the tcp provider) does.
void NormalizeWc(struct ibv_wc* wc);

// Converts a verbs return value to a negative errno: ibv_post_*() return a
// positive errno, librdmacm returns -1 and sets errno. Never returns 0 for
// a failure (an unset errno becomes -EIO).
int NegErrno(int rc, int saved_errno);

// True for 127.0.0.0/8, ::1 and v4-mapped loopback. rdma_cm binds loopback
// to an arbitrary RDMA device, which never carries a connection (librpma
// issue #1934), so the verbs provider declines such addresses.
bool IsLoopback(const struct sockaddr* sa);

}  // namespace rpma::prov::verbs

#endif  // RPMA_VERBS_VERBS_MAPPING_H_
