// Data path of a tcp connection: posting (initiator), execution of the
// peer's requests against registered memory (target), and responses.
// See tcp_conn.h for the threading and ordering rules.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "log_internal.h"
#include "tcp/tcp_conn.h"
#include "tcp/tcp_cq.h"
#include "tcp/tcp_mr.h"
#include "tcp/tcp_qp.h"
#include "tcp/tcp_srq.h"

namespace rpma::prov::tcp {
namespace {

constexpr uint32_t kMaxInline = 64;
// With more requests than this on the wire, a post only queues its frame:
// the engine sends it with the next batch it writes after reading the
// responses that are surely coming (one sendmsg for many posts), or at the
// next tick at worst. Below it, the poster writes itself: no delay on the
// latency path (QD 1-4, e.g. write + flush). Never while a SEND or
// WRITE_IMM is pending: its response waits for the peer's receive (RNR),
// which the peer may post only after seeing what we would hold back.
constexpr size_t kDeferAbove = 4;

bool TwoSided(Opcode op) {
  return op == Opcode::kSend || op == Opcode::kSendWithImm ||
         op == Opcode::kWriteWithImm;
}

enum ibv_wc_status WcStatus(uint64_t resp) {
  switch (resp) {
    case kRespOk:
      return IBV_WC_SUCCESS;
    case kRespRemoteAccess:
      return IBV_WC_REM_ACCESS_ERR;
    case kRespRemoteInvalid:
      return IBV_WC_REM_INV_REQ_ERR;
    default:
      return IBV_WC_REM_OP_ERR;
  }
}

uint8_t* Ptr(uint64_t addr) {
  return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(addr));
}

}  // namespace

// ---------------------------------------------------------------------------
// Initiator
// ---------------------------------------------------------------------------

int TcpConn::PostSend(TcpQp* qp, const SendWr& wr) {
  std::lock_guard<std::mutex> lock(mu_);
  if (qp != qp_) return -EINVAL;
  if (!qp->error_ && state_ != State::kEstablished) {
    // A QP that never reached RTS refuses sends (as ibv_post_send).
    return -EINVAL;
  }
  if (qp->error_) {
    // RC in error: the WR is accepted and flushed.
    struct ibv_wc wc;
    std::memset(&wc, 0, sizeof(wc));
    wc.wr_id = wr.wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = WcOpcode(wr.opcode);
    wc.qp_num = qp->qp_num();
    qp->send_cq_->Push(wc);
    return 0;
  }
  if (qp->SlotsUsed() >= qp->sq_size_) return -ENOMEM;

  FrameHeader h;
  h.addr = wr.remote_addr;
  h.rkey = wr.rkey;
  PendingWr p;
  p.wr_id = wr.wr_id;
  p.opcode = wr.opcode;
  p.signaled = wr.signaled;
  const void* payload = nullptr;
  uint32_t len = 0;
  switch (wr.opcode) {
    case Opcode::kRead:
      if (wr.sge.length > kMaxIoLength) return -EINVAL;
      if (wr.sge.length > 0 && wr.sge.addr == nullptr) return -EINVAL;
      h.type = kFrameRead;
      h.value = wr.sge.length;
      p.read_dst = static_cast<uint8_t*>(wr.sge.addr);
      p.length = wr.sge.length;
      break;
    case Opcode::kWrite:
    case Opcode::kWriteWithImm:
    case Opcode::kSend:
    case Opcode::kSendWithImm:
      h.type = wr.opcode == Opcode::kWrite          ? kFrameWrite
               : wr.opcode == Opcode::kWriteWithImm ? kFrameWriteImm
               : wr.opcode == Opcode::kSend         ? kFrameSend
                                                    : kFrameSendImm;
      if (wr.opcode == Opcode::kWriteWithImm ||
          wr.opcode == Opcode::kSendWithImm) {
        h.imm = wr.imm_data;
      }
      payload = wr.sge.addr;
      len = wr.sge.length;
      if (len > kMaxIoLength || (len > 0 && payload == nullptr)) return -EINVAL;
      break;
    case Opcode::kAtomicWrite:
      h.type = kFrameAtomicWrite;
      // Byte-wise little-endian so the target stores the very same bytes.
      for (int i = 7; i >= 0; --i) h.value = (h.value << 8) | wr.atomic_data[i];
      break;
    case Opcode::kFlush:
      h.type = kFrameFlush;
      h.value = wr.flush_length;
      if (wr.flush_type == FlushType::kVisibility) {
        h.flags = kFlagFlushVisibility;
      }
      break;
    default:
      return -EINVAL;
  }
  h.length = len;
  if (wr.inline_data && len > 0) {
    if (len > kMaxInline) return -EINVAL;
    QueueOwned(h, payload, len);
  } else {
    // Zero copy: the sge stays the provider's until the completion.
    Queue(h, payload, len);
  }
  out_.back().request = true;
  ++out_requests_;
  size_t on_wire = qp->pending_.size() - (out_requests_ - 1);
  qp->pending_.push_back(p);
  if (TwoSided(p.opcode)) ++qp->two_sided_;
  if (on_wire <= kDeferAbove || qp->two_sided_ > 0) FlushOut();
  return 0;
}

int TcpConn::PostRecv(TcpQp* qp, const RecvWr& wr) {
  std::lock_guard<std::mutex> lock(mu_);
  if (qp != qp_) return -EINVAL;
  if (qp->srq_ != nullptr) return -EINVAL;  // receives come from the SRQ
  if (wr.sge.length > 0 && wr.sge.addr == nullptr) return -EINVAL;
  if (qp->error_) {
    qp->FlushOne(wr.wr_id, true);
    return 0;
  }
  if (qp->rq_.size() >= qp->rq_size_) return -ENOMEM;
  qp->rq_.push_back(wr);
  if (rnr_blocked_) engine_->KickAll();
  return 0;
}

bool TcpConn::HandleResp(const FrameHeader& h) {
  if (state_ != State::kEstablished && state_ != State::kDisconnecting) {
    ProtocolError("response outside an established connection");
    return true;
  }
  if (qp_ == nullptr || qp_->error_) {
    ignore_cur_ = true;  // its WR was flushed already
    ExpectPayload(nullptr, h.length);
    return true;
  }
  if (qp_->pending_.empty()) {
    ProtocolError("response without a request");
    return true;
  }
  const PendingWr& p = qp_->pending_.front();
  uint32_t want =
      (h.value == kRespOk && p.opcode == Opcode::kRead) ? p.length : 0;
  if (h.length != want) {
    ProtocolError("response length does not match the request");
    return true;
  }
  // Read data lands directly in the posted sge.
  ExpectPayload(want > 0 ? p.read_dst : nullptr, h.length);
  return true;
}

void TcpConn::FinishResp() {
  // An RNR wait may have been held up by this payload; Process() goes on
  // with the spliced input.
  if (rnr_blocked_) TryUnblock();
  if (ignore_cur_ || qp_ == nullptr || qp_->pending_.empty()) return;
  if (cur_.value == kRespOk) {
    qp_->CompleteFront(IBV_WC_SUCCESS);
    return;
  }
  // RC: the failing WR reports the error, everything after it flushes.
  qp_->CompleteFront(WcStatus(cur_.value));
  QpError();
}

// ---------------------------------------------------------------------------
// Target
// ---------------------------------------------------------------------------

bool TcpConn::TakeRecvOrWait(RecvWr* out) {
  auto take = [&]() -> bool {
    if (qp_->srq_ != nullptr) return qp_->srq_->Take(out);
    if (qp_->rq_.empty()) return false;
    *out = qp_->rq_.front();
    qp_->rq_.pop_front();
    return true;
  };
  if (take()) return true;
  // Register as waiting before the second look so a concurrent SRQ poster
  // either is seen here or sees us (and kicks).
  engine_->AddRnrWaiter(1);
  if (take()) {
    engine_->AddRnrWaiter(-1);
    return true;
  }
  return false;  // RNR: stays counted until the connection is unblocked
}

void TcpConn::Respond(uint64_t status, const void* payload, size_t len,
                      std::shared_ptr<MrEntry> mr) {
  FrameHeader r;
  r.type = kFrameResp;
  r.value = status;
  r.length = static_cast<uint32_t>(len);
  Queue(r, payload, len, std::move(mr));
}

void TcpConn::TargetError(uint64_t status) {
  RPMA_LOG_WARNING("tcp: remote access violation by %s (status %llu)",
                   peer_name_.c_str(), static_cast<unsigned long long>(status));
  Respond(status);
  // The responder QP fails too: requests after this one are dropped
  // unexecuted (the initiator flushes them), posted receives flush.
  target_error_ = true;
  QpError();
}

uint64_t TcpConn::ExecuteFlush(const FrameHeader& h) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if ((h.flags & kFlagFlushVisibility) || h.value == 0) return kRespOk;
  // Persistent: msync of the page-aligned range. On a DAX file mapping the
  // kernel also flushes CPU caches; on anonymous memory it is harmless.
  uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t start = static_cast<uintptr_t>(h.addr) & ~(page - 1);
  uintptr_t end = static_cast<uintptr_t>(h.addr + h.value);
  if (msync(reinterpret_cast<void*>(start), end - start, MS_SYNC) != 0) {
    RPMA_LOG_ERROR("tcp: msync of a flushed range failed: %s",
                   std::strerror(errno));
    return kRespRemoteOp;
  }
  return kRespOk;
}

bool TcpConn::HandleRequest(const FrameHeader& h) {
  cur_status_ = kRespOk;
  have_recv_ = false;
  dst_mr_.reset();
  if (state_ != State::kEstablished && state_ != State::kDisconnecting) {
    ProtocolError("request outside an established connection");
    return true;
  }
  if (state_ != State::kEstablished || target_error_ || qp_ == nullptr) {
    ignore_cur_ = true;
    ExpectPayload(nullptr, h.length);
    return true;
  }
  // Zero-length accesses check no key (as verbs).
  auto check = [&](uint64_t len, int need) -> std::shared_ptr<MrEntry> {
    if (len == 0) return std::make_shared<MrEntry>();
    return mrs_->FindLocked(h.rkey, h.addr, len, need);
  };
  switch (h.type) {
    case kFrameWrite:
    case kFrameWriteImm: {
      std::shared_ptr<MrEntry> e = check(h.length, kAccessRemoteWrite);
      if (e == nullptr) {
        cur_status_ = kRespRemoteAccess;  // payload discarded, memory intact
        ExpectPayload(nullptr, h.length);
        return true;
      }
      if (h.type == kFrameWriteImm) {
        if (!TakeRecvOrWait(&cur_recv_)) return false;
        have_recv_ = true;
      }
      if (h.length > 0) dst_mr_ = std::move(e);
      ExpectPayload(h.length > 0 ? Ptr(h.addr) : nullptr, h.length);
      return true;
    }
    case kFrameRead: {
      std::shared_ptr<MrEntry> e = check(h.value, kAccessRemoteRead);
      if (e == nullptr) {
        TargetError(kRespRemoteAccess);
        return true;
      }
      // Sent straight from registered memory by the batched sendmsg.
      if (h.value == 0) {
        Respond(kRespOk);
      } else {
        Respond(kRespOk, Ptr(h.addr), h.value, std::move(e));
      }
      return true;
    }
    case kFrameAtomicWrite: {
      if (h.addr % 8 != 0) {
        TargetError(kRespRemoteInvalid);
        return true;
      }
      if (check(8, kAccessRemoteWrite) == nullptr) {
        TargetError(kRespRemoteAccess);
        return true;
      }
      uint8_t bytes[8];
      for (int i = 0; i < 8; ++i)
        bytes[i] = static_cast<uint8_t>(h.value >> (8 * i));
      uint64_t v;
      std::memcpy(&v, bytes, sizeof(v));
      __atomic_store_n(reinterpret_cast<uint64_t*>(Ptr(h.addr)), v,
                       __ATOMIC_SEQ_CST);
      Respond(kRespOk);
      return true;
    }
    case kFrameFlush: {
      int need = (h.flags & kFlagFlushVisibility) ? kAccessFlushVisibility
                                                  : kAccessFlushPersistent;
      if (check(h.value, need) == nullptr) {
        TargetError(kRespRemoteAccess);
        return true;
      }
      uint64_t st = ExecuteFlush(h);
      if (st != kRespOk) {
        TargetError(st);
      } else {
        Respond(kRespOk);
      }
      return true;
    }
    case kFrameSend:
    case kFrameSendImm: {
      if (!TakeRecvOrWait(&cur_recv_)) return false;
      have_recv_ = true;
      if (h.length > cur_recv_.sge.length) {
        cur_status_ = kRespRemoteInvalid;
        ExpectPayload(nullptr, h.length);
      } else {
        ExpectPayload(static_cast<uint8_t*>(cur_recv_.sge.addr), h.length);
      }
      return true;
    }
    default:
      ProtocolError("unknown request");
      return true;
  }
}

void TcpConn::FinishRequest() {
  dst_mr_.reset();
  if (ignore_cur_) return;
  bool recv = have_recv_;
  have_recv_ = false;
  struct ibv_wc wc;
  std::memset(&wc, 0, sizeof(wc));
  wc.wr_id = cur_recv_.wr_id;
  wc.qp_num = qp_ != nullptr ? qp_->qp_num() : 0;
  if (cur_status_ != kRespOk) {
    if (recv && qp_ != nullptr) {
      wc.status = cur_.type == kFrameWriteImm ? IBV_WC_WR_FLUSH_ERR
                                              : IBV_WC_LOC_LEN_ERR;
      wc.opcode = IBV_WC_RECV;
      qp_->PushRecvCompletion(wc);
    }
    TargetError(cur_status_);
    return;
  }
  if (recv && qp_ != nullptr) {
    wc.status = IBV_WC_SUCCESS;
    if (cur_.type == kFrameWriteImm) {
      wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
    } else {
      wc.opcode = IBV_WC_RECV;
      wc.byte_len = cur_.length;
    }
    if (cur_.type == kFrameWriteImm || cur_.type == kFrameSendImm) {
      wc.wc_flags = IBV_WC_WITH_IMM;
      wc.imm_data = cur_.imm;
    }
    qp_->PushRecvCompletion(wc);
  }
  Respond(kRespOk);
}

}  // namespace rpma::prov::tcp
