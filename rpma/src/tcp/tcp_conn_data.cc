// Data path of a tcp connection, initiator side: posting (with the pure
// encoding of wr_frame.h) and the peer's responses; the dispatch of the
// peer's requests to the target (tcp_target.cc). See tcp_conn.h for the
// threading and ordering rules.
#include <cerrno>
#include <cstring>

#include "log_internal.h"
#include "tcp/access_penalty.h"
#include "tcp/socket_util.h"
#include "tcp/tcp_conn.h"
#include "tcp/tcp_qp.h"
#include "tcp/wr_frame.h"

namespace rpma::prov::tcp {
namespace {

// With more requests than this on the wire, a post only queues its frame:
// the engine sends it with the next batch it writes after reading the
// responses that are surely coming (one sendmsg for many posts), or at the
// next tick at worst. Below it, the poster writes itself: no delay on the
// latency path (QD 1-4, e.g. write + flush). Never while a SEND or
// WRITE_IMM is pending: its response waits for the peer's receive (RNR),
// which the peer may post only after seeing what we would hold back.
constexpr size_t kDeferAbove = 4;

}  // namespace

// ---------------------------------------------------------------------------
// Initiator
// ---------------------------------------------------------------------------

int TcpConn::PostSend(TcpQp* qp, const SendWr& wr) {
  std::lock_guard<std::mutex> lock(mu_);
  if (qp != qp_) return -EINVAL;
  if (!qp->error() && state_ != State::kEstablished) {
    // A QP that never reached RTS refuses sends (as ibv_post_send).
    return -EINVAL;
  }
  if (qp->error()) {
    // RC in error: the WR is accepted and flushed.
    qp->FlushSend(wr.wr_id, wr.opcode);
    return 0;
  }
  if (qp->SqFull()) return -ENOMEM;
  RequestFrame r;
  int rc = BuildRequestFrame(wr, &r);
  if (rc != 0) return rc;
  if (r.copy) {
    out_.PushCopy(OutQueue::Kind::kRequest, r.header, r.payload,
                  r.header.length);
  } else {
    // Zero copy: the sge stays the provider's until the completion.
    out_.Push(OutQueue::Kind::kRequest, r.header, r.payload, r.header.length);
  }
  size_t on_wire = qp->pending() - (out_.requests() - 1);
  qp->AddPending(r.pending);
  // RPMA_EXT_F_MORE: the next post follows at once and sends both — also
  // behind a pending SEND (the rule below is for posts nobody promised to
  // follow: held behind responses that may wait for the peer's receive).
  if (wr.more) return 0;
  if (on_wire <= kDeferAbove || qp->two_sided_pending()) FlushOut();
  return 0;
}

int TcpConn::PostRecv(TcpQp* qp, const RecvWr& wr) {
  std::lock_guard<std::mutex> lock(mu_);
  if (qp != qp_) return -EINVAL;
  if (qp->has_srq()) return -EINVAL;  // receives come from the SRQ
  if (wr.sge.length > 0 && wr.sge.addr == nullptr) return -EINVAL;
  if (qp->error()) {
    qp->FlushRecv(wr.wr_id);
    return 0;
  }
  int rc = qp->AddRecv(wr);
  if (rc != 0) return rc;
  if (reader_.blocked()) engine_->KickAll();
  return 0;
}

bool TcpConn::HandleResp(const FrameHeader& h) {
  resp_ignore_ = false;
  if (state_ != State::kEstablished && state_ != State::kDisconnecting) {
    ProtocolError("response outside an established connection");
    return true;
  }
  if (qp_ == nullptr || qp_->error()) {
    resp_ignore_ = true;  // its WR was flushed already
    reader_.Expect(nullptr, h.length);
    return true;
  }
  if (qp_->pending() == 0) {
    ProtocolError("response without a request");
    return true;
  }
  const PendingWr& p = qp_->front();
  uint32_t want =
      (h.value == kRespOk && p.opcode == Opcode::kRead) ? p.length : 0;
  if (h.length != want) {
    ProtocolError("response length does not match the request");
    return true;
  }
  // Read data lands directly in the posted sge.
  reader_.Expect(want > 0 ? p.read_dst : nullptr, h.length);
  return true;
}

void TcpConn::FinishResp() {
  // An RNR wait may have been held up by this payload; Process() goes on
  // with the spliced input.
  TryUnblock();
  if (resp_ignore_ || qp_ == nullptr || qp_->pending() == 0) return;
  if (cur_.value == kRespOk) {
    qp_->CompleteFront(IBV_WC_SUCCESS);
    return;
  }
  // RC: the failing WR reports the error, everything after it flushes.
  qp_->CompleteFront(WcStatus(cur_.value));
  QpError();
}

// ---------------------------------------------------------------------------
// Target dispatch
// ---------------------------------------------------------------------------

bool TcpConn::HandleRequest(const FrameHeader& h) {
  if (state_ != State::kEstablished && state_ != State::kDisconnecting) {
    ProtocolError("request outside an established connection");
    return true;
  }
  if (state_ != State::kEstablished) {
    target_.Drop(h);
    return true;
  }
  return OnVerdict(target_.Begin(h));
}

bool TcpConn::OnVerdict(TcpTarget::Verdict v) {
  if (v == TcpTarget::Verdict::kRnr) return false;
  if (v == TcpTarget::Verdict::kFail) {
    RPMA_LOG_WARNING(
        "tcp: a request of %s failed at the target (status %llu); the "
        "queue pair is in error",
        peer_name_.c_str(), static_cast<unsigned long long>(target_.status()));
    if (target_.status() == kRespRemoteAccess && !peer_ip_.empty()) {
      AccessPenalty::Global().RecordError(peer_ip_, NowMs());
    }
    QpError();
  }
  return true;
}

}  // namespace rpma::prov::tcp
