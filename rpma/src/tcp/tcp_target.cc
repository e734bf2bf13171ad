// Target side of a tcp connection; see tcp_target.h.
#include "tcp/tcp_target.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "log_internal.h"
#include "tcp/frame_reader.h"
#include "tcp/out_queue.h"
#include "tcp/progress_engine.h"
#include "tcp/tcp_mr.h"
#include "tcp/tcp_qp.h"

namespace rpma::prov::tcp {
namespace {

uint8_t* Ptr(uint64_t addr) {
  return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(addr));
}

}  // namespace

TcpTarget::TcpTarget(MrTable* mrs, ProgressEngine* engine, FrameReader* reader,
                     OutQueue* out, const DeviceCaps& caps)
    : mrs_(mrs), engine_(engine), reader_(reader), out_(out), caps_(caps) {}

void TcpTarget::Drop(const FrameHeader& h) {
  cur_ = h;
  status_ = kRespOk;
  have_recv_ = false;
  ignore_ = true;
  dst_mr_.reset();
  reader_->Expect(nullptr, h.length);
}

TcpTarget::Verdict TcpTarget::Begin(const FrameHeader& h) {
  if (failed_ || qp_ == nullptr) {
    Drop(h);
    return Verdict::kOk;
  }
  cur_ = h;
  status_ = kRespOk;
  have_recv_ = false;
  ignore_ = false;
  dst_mr_.reset();
  switch (h.type) {
    case kFrameWrite:
    case kFrameWriteImm:
      return Write(h);
    case kFrameRead:
      return Read(h);
    case kFrameAtomicWrite:
      return AtomicWrite(h);
    case kFrameFlush:
      return Flush(h);
    default:  // kFrameSend, kFrameSendImm (the parser admits no other)
      return Send(h);
  }
}

std::shared_ptr<MrEntry> TcpTarget::Check(const FrameHeader& h, uint64_t len,
                                          int need) {
  if (len == 0) return std::make_shared<MrEntry>();
  return mrs_->FindLocked(h.rkey, h.addr, len, need,
                          qp_ != nullptr ? qp_->serial() : 0);
}

TcpTarget::Verdict TcpTarget::Write(const FrameHeader& h) {
  std::shared_ptr<MrEntry> e = Check(h, h.length, kAccessRemoteWrite);
  if (e == nullptr) {
    status_ = kRespRemoteAccess;  // payload discarded, memory intact
    reader_->Expect(nullptr, h.length);
    return Verdict::kOk;
  }
  if (h.type == kFrameWriteImm) {
    if (!TakeRecvOrWait()) return Verdict::kRnr;
    have_recv_ = true;
  }
  if (h.length > 0) dst_mr_ = std::move(e);
  reader_->Expect(h.length > 0 ? Ptr(h.addr) : nullptr, h.length);
  return Verdict::kOk;
}

TcpTarget::Verdict TcpTarget::Read(const FrameHeader& h) {
  std::shared_ptr<MrEntry> e = Check(h, h.value, kAccessRemoteRead);
  if (e == nullptr) return Fail(kRespRemoteAccess);
  // Sent straight from registered memory by the batched sendmsg.
  if (h.value == 0) {
    Respond(kRespOk);
  } else {
    Respond(kRespOk, Ptr(h.addr), h.value, std::move(e));
  }
  return Verdict::kOk;
}

TcpTarget::Verdict TcpTarget::AtomicWrite(const FrameHeader& h) {
  if (!caps_.native_atomic_write) return Unsupported("native atomic write");
  if (h.addr % 8 != 0) return Fail(kRespRemoteInvalid);
  if (Check(h, 8, kAccessRemoteWrite) == nullptr) {
    return Fail(kRespRemoteAccess);
  }
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<uint8_t>(h.value >> (8 * i));
  uint64_t v;
  std::memcpy(&v, bytes, sizeof(v));
  __atomic_store_n(reinterpret_cast<uint64_t*>(Ptr(h.addr)), v,
                   __ATOMIC_SEQ_CST);
  Respond(kRespOk);
  return Verdict::kOk;
}

TcpTarget::Verdict TcpTarget::Flush(const FrameHeader& h) {
  if (!caps_.native_flush) return Unsupported("native flush");
  int need = (h.flags & kFlagFlushVisibility) ? kAccessFlushVisibility
                                              : kAccessFlushPersistent;
  std::shared_ptr<MrEntry> e = Check(h, h.value, need);
  if (e == nullptr) return Fail(kRespRemoteAccess);
  uint64_t st = ExecuteFlush(h, *e);
  if (st != kRespOk) return Fail(st);
  Respond(kRespOk);
  return Verdict::kOk;
}

TcpTarget::Verdict TcpTarget::Send(const FrameHeader& h) {
  if (!TakeRecvOrWait()) return Verdict::kRnr;
  have_recv_ = true;
  if (h.length > recv_.sge.length) {
    status_ = kRespRemoteInvalid;
    reader_->Expect(nullptr, h.length);
  } else {
    reader_->Expect(static_cast<uint8_t*>(recv_.sge.addr), h.length);
  }
  return Verdict::kOk;
}

uint64_t TcpTarget::ExecuteFlush(const FrameHeader& h, const MrEntry& e) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if ((h.flags & kFlagFlushVisibility) || h.value == 0) return kRespOk;
  // Persistent: CPU cache flush on PMem, msync elsewhere (pmem_persist.h).
  int err = e.persist != nullptr ? e.persist->Persist(Ptr(h.addr), h.value)
                                 : PmemPersist::Msync(Ptr(h.addr), h.value);
  if (err != 0) {
    RPMA_LOG_ERROR("tcp: persisting a flushed range failed: %s",
                   std::strerror(err));
    return kRespRemoteOp;
  }
  return kRespOk;
}

bool TcpTarget::TakeRecvOrWait() {
  if (qp_->TakeRecv(&recv_)) return true;
  // Register as waiting before the second look so a concurrent SRQ poster
  // either is seen here or sees us (and kicks).
  engine_->AddRnrWaiter(1);
  if (qp_->TakeRecv(&recv_)) {
    engine_->AddRnrWaiter(-1);
    return true;
  }
  return false;  // RNR: stays counted until the connection is unblocked
}

void TcpTarget::Respond(uint64_t status, const void* payload, size_t len,
                        std::shared_ptr<MrEntry> mr) {
  FrameHeader r;
  r.type = kFrameResp;
  r.value = status;
  r.length = static_cast<uint32_t>(len);
  out_->Push(OutQueue::Kind::kResponse, r, payload, len, std::move(mr));
}

TcpTarget::Verdict TcpTarget::Fail(uint64_t status) {
  status_ = status;
  Respond(status);
  // The responder QP fails too: requests after this one are dropped
  // unexecuted (the initiator flushes them), posted receives flush.
  failed_ = true;
  return Verdict::kFail;
}

TcpTarget::Verdict TcpTarget::Unsupported(const char* what) {
  // Checked before the rkey, as a NIC rejects an opcode it does not
  // implement before it looks at the memory. Neither request carries a
  // payload, so nothing is left to discard.
  RPMA_LOG_ERROR(
      "tcp: refusing a %s request: this device has none (RPMA_TCP_CAPS); "
      "the peer must emulate it as on a NIC without one",
      what);
  return Fail(kRespRemoteInvalid);
}

TcpTarget::Verdict TcpTarget::Finish() {
  dst_mr_.reset();
  if (ignore_) return Verdict::kOk;
  bool recv = have_recv_;
  have_recv_ = false;
  struct ibv_wc wc;
  std::memset(&wc, 0, sizeof(wc));
  wc.wr_id = recv_.wr_id;
  wc.qp_num = qp_ != nullptr ? qp_->qp_num() : 0;
  if (status_ != kRespOk) {
    if (recv && qp_ != nullptr) {
      wc.status = cur_.type == kFrameWriteImm ? IBV_WC_WR_FLUSH_ERR
                                              : IBV_WC_LOC_LEN_ERR;
      wc.opcode = IBV_WC_RECV;
      qp_->PushRecvCompletion(wc);
    }
    return Fail(status_);
  }
  if (recv && qp_ != nullptr) {
    wc.status = IBV_WC_SUCCESS;
    // byte_len: the bytes received, or for a write with immediate the
    // bytes written (as mlx5 and rxe report it).
    wc.opcode =
        cur_.type == kFrameWriteImm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
    wc.byte_len = cur_.length;
    if (cur_.type == kFrameWriteImm || cur_.type == kFrameSendImm) {
      wc.wc_flags = IBV_WC_WITH_IMM;
      wc.imm_data = cur_.imm;
    }
    qp_->PushRecvCompletion(wc);
  }
  // A write's or message's acknowledgement may ride with our next frame
  // (tcp_conn.h); a message's makes the reply likely.
  FrameHeader r;
  r.type = kFrameResp;
  r.value = kRespOk;
  out_->PushAck(r, recv);
  return Verdict::kOk;
}

void TcpTarget::OnQpError() {
  if (!have_recv_) return;
  // A SEND being placed into a receive stops there: the receive is
  // flushed now and its buffer may be reused as soon as it is polled.
  if (reader_->in_payload()) {
    reader_->StopPlacing();
    ignore_ = true;
  }
  if (qp_ != nullptr) qp_->FlushRecv(recv_.wr_id);
  have_recv_ = false;
}

void TcpTarget::CheckDestination() {
  // Deregistered mid-payload, or the floor was raised above the write
  // (the whole write fails: the bytes placed before stay, as a NIC's).
  if (dst_mr_ &&
      (dst_mr_->dead || cur_.addr - reinterpret_cast<uintptr_t>(dst_mr_->addr) <
                            dst_mr_->floor)) {
    reader_->StopPlacing();
    dst_mr_.reset();
    status_ = kRespRemoteAccess;
  }
}

void TcpTarget::Reset() {
  OnQpError();
  dst_mr_.reset();
}

}  // namespace rpma::prov::tcp
