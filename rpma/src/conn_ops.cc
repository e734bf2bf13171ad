// The data path: one-sided reads, writes, atomic writes and flushes, and
// two-sided sends/receives, with librpma's synchronous checks only (bounds
// and access rights are the NIC's business and come back as completions).
//
// Buffer ownership: local and remote regions named in a work request must
// stay registered until its completion (or a later signaled one of the
// same connection) has been reaped; atomic-write data is copied at post.

#include <arpa/inet.h>

#include <cstring>

#include "conn.h"
#include "export.h"
#include "log_internal.h"
#include "mr.h"
#include "rpma_ext.h"

namespace {

using rpma::prov::Opcode;
using rpma::prov::SendWr;

// Only RPMA_F_COMPLETION_ALWAYS's own bit asks for a completion on
// success; errors always complete.
void InitWr(SendWr* wr, Opcode op, int flags, const void* op_context) {
  wr->opcode = op;
  wr->wr_id = reinterpret_cast<uintptr_t>(op_context);
  wr->signaled =
      (flags & (RPMA_F_COMPLETION_ALWAYS & ~RPMA_F_COMPLETION_ON_ERROR)) != 0;
  wr->more = (flags & RPMA_EXT_F_MORE) != 0;
}

void SetLocal(SendWr* wr, const rpma_mr_local* mr, size_t offset, size_t len) {
  if (mr == nullptr) return;  // the zero-length form: no SGE
  wr->sge.addr = static_cast<char*>(mr->mr->addr()) + offset;
  wr->sge.length = static_cast<uint32_t>(len);
  wr->sge.lkey = mr->mr->lkey();
}

void SetRemote(SendWr* wr, const rpma_mr_remote* mr, size_t offset) {
  if (mr == nullptr) return;
  wr->remote_addr = mr->raddr + offset;
  wr->rkey = mr->rkey;
}

int Post(rpma_conn* conn, const SendWr& wr, const char* what) {
  int rc = conn->id->qp()->PostSend(wr);
  if (rc != 0) {
    // Including -ENOMEM for a full send queue: librpma reports every
    // ibv_post_send failure as a provider error.
    return RPMA_PROVIDER_FAILED(rc, "posting %s", what);
  }
  return 0;
}

// read/write share librpma's rule: either both regions or neither, and
// the "neither" form carries no offsets and no length.
bool BadPair(const void* a, const void* b, size_t off_a, size_t off_b,
             size_t len) {
  if (a != nullptr && b != nullptr) return false;
  return a != nullptr || b != nullptr || off_a != 0 || off_b != 0 || len != 0;
}

int WriteCommon(rpma_conn* conn, rpma_mr_remote* dst, size_t dst_offset,
                const rpma_mr_local* src, size_t src_offset, size_t len,
                int flags, Opcode op, uint32_t imm, const void* op_context) {
  if (conn == nullptr || flags == 0) return RPMA_E_INVAL;
  if (BadPair(dst, src, dst_offset, src_offset, len)) return RPMA_E_INVAL;
  SendWr wr;
  InitWr(&wr, op, flags, op_context);
  SetLocal(&wr, src, src_offset, len);
  SetRemote(&wr, dst, dst_offset);
  wr.imm_data = htonl(imm);
  return Post(conn, wr, "a write");
}

int SendCommon(rpma_conn* conn, const rpma_mr_local* src, size_t offset,
               size_t len, int flags, Opcode op, uint32_t imm,
               const void* op_context) {
  if (conn == nullptr || flags == 0) return RPMA_E_INVAL;
  if (src == nullptr && (offset != 0 || len != 0)) return RPMA_E_INVAL;
  SendWr wr;
  InitWr(&wr, op, flags, op_context);
  SetLocal(&wr, src, offset, len);
  wr.imm_data = htonl(imm);
  return Post(conn, wr, "a send");
}

}  // namespace

RPMA_EXPORT int rpma_read(struct rpma_conn* conn, struct rpma_mr_local* dst,
                          size_t dst_offset, const struct rpma_mr_remote* src,
                          size_t src_offset, size_t len, int flags,
                          const void* op_context) {
  if (conn == nullptr || flags == 0) return RPMA_E_INVAL;
  if (BadPair(dst, src, dst_offset, src_offset, len)) return RPMA_E_INVAL;
  SendWr wr;
  InitWr(&wr, Opcode::kRead, flags, op_context);
  SetLocal(&wr, dst, dst_offset, len);
  SetRemote(&wr, src, src_offset);
  return Post(conn, wr, "a read");
}

RPMA_EXPORT int rpma_write(struct rpma_conn* conn, struct rpma_mr_remote* dst,
                           size_t dst_offset, const struct rpma_mr_local* src,
                           size_t src_offset, size_t len, int flags,
                           const void* op_context) {
  return WriteCommon(conn, dst, dst_offset, src, src_offset, len, flags,
                     Opcode::kWrite, 0, op_context);
}

RPMA_EXPORT int rpma_write_with_imm(struct rpma_conn* conn,
                                    struct rpma_mr_remote* dst,
                                    size_t dst_offset,
                                    const struct rpma_mr_local* src,
                                    size_t src_offset, size_t len, int flags,
                                    uint32_t imm, const void* op_context) {
  return WriteCommon(conn, dst, dst_offset, src, src_offset, len, flags,
                     Opcode::kWriteWithImm, imm, op_context);
}

RPMA_EXPORT int rpma_atomic_write(struct rpma_conn* conn,
                                  struct rpma_mr_remote* dst, size_t dst_offset,
                                  const char src[8], int flags,
                                  const void* op_context) {
  if (conn == nullptr || dst == nullptr || src == nullptr || flags == 0)
    return RPMA_E_INVAL;
  if (dst_offset % RPMA_ATOMIC_WRITE_ALIGNMENT != 0) return RPMA_E_INVAL;
  SendWr wr;
  SetRemote(&wr, dst, dst_offset);
  if (conn->native_atomic_write) {
    InitWr(&wr, Opcode::kAtomicWrite, flags, op_context);
    std::memcpy(wr.atomic_data, src, 8);
  } else {
    // librpma's emulation: an aligned 8-byte write, inline (src needs no
    // registration) and fenced behind earlier reads (i.e. APM flushes).
    InitWr(&wr, Opcode::kWrite, flags, op_context);
    wr.sge.addr = const_cast<char*>(src);
    wr.sge.length = 8;
    wr.inline_data = true;
    wr.fence = true;
  }
  return Post(conn, wr, "an atomic write");
}

RPMA_EXPORT int rpma_flush(struct rpma_conn* conn, struct rpma_mr_remote* dst,
                           size_t dst_offset, size_t len,
                           enum rpma_flush_type type, int flags,
                           const void* op_context) {
  if (conn == nullptr || dst == nullptr || flags == 0) return RPMA_E_INVAL;
  const int t = rpma::EnumValue(&type);
  if (t == RPMA_FLUSH_TYPE_PERSISTENT && !conn->direct_write_to_pmem) {
    RPMA_LOG_ERROR(
        "the persistent flush needs the peer's direct write to PMem "
        "(rpma_conn_apply_remote_peer_cfg)");
    return RPMA_E_NOSUPP;
  }
  // As librpma, an unknown type passes both gates.
  if ((t == RPMA_FLUSH_TYPE_PERSISTENT &&
       !(dst->usage & RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT)) ||
      (t == RPMA_FLUSH_TYPE_VISIBILITY &&
       !(dst->usage & RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY))) {
    RPMA_LOG_ERROR("the remote region does not support this flush type");
    return RPMA_E_NOSUPP;
  }
  SendWr wr;
  SetRemote(&wr, dst, dst_offset);
  if (conn->native_flush) {
    InitWr(&wr, Opcode::kFlush, flags, op_context);
    wr.flush_type = t == RPMA_FLUSH_TYPE_VISIBILITY
                        ? rpma::prov::FlushType::kVisibility
                        : rpma::prov::FlushType::kPersistent;
    wr.flush_length = len;
  } else {
    // APM (read-after-write): an 8-byte read of the flushed range's start;
    // its completion means every earlier write has been placed. len and
    // type do not change what is posted.
    InitWr(&wr, Opcode::kRead, flags, op_context);
    wr.sge.addr = conn->flush_mr->addr();
    wr.sge.length = 8;
    wr.sge.lkey = conn->flush_mr->lkey();
  }
  return Post(conn, wr, "a flush");
}

RPMA_EXPORT int rpma_send(struct rpma_conn* conn,
                          const struct rpma_mr_local* src, size_t offset,
                          size_t len, int flags, const void* op_context) {
  return SendCommon(conn, src, offset, len, flags, Opcode::kSend, 0,
                    op_context);
}

RPMA_EXPORT int rpma_send_with_imm(struct rpma_conn* conn,
                                   const struct rpma_mr_local* src,
                                   size_t offset, size_t len, int flags,
                                   uint32_t imm, const void* op_context) {
  return SendCommon(conn, src, offset, len, flags, Opcode::kSendWithImm, imm,
                    op_context);
}

RPMA_EXPORT int rpma_recv(struct rpma_conn* conn, struct rpma_mr_local* dst,
                          size_t offset, size_t len, const void* op_context) {
  if (conn == nullptr) return RPMA_E_INVAL;
  if (dst == nullptr && (offset != 0 || len != 0)) return RPMA_E_INVAL;
  rpma::prov::RecvWr wr = rpma::MakeRecvWr(dst, offset, len, op_context);
  int rc = conn->id->qp()->PostRecv(wr);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "posting a receive");
  }
  return 0;
}
