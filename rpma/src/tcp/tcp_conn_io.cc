// Frame I/O of a tcp connection: engine events, the read loop around the
// FrameReader, frame dispatch, and writing the OutQueue; see tcp_conn.h.
#include <sys/epoll.h>

#include <algorithm>
#include <cstring>
#include <shared_mutex>

#include "log_internal.h"
#include "tcp/limits.h"
#include "tcp/tcp_conn.h"
#include "tcp/tcp_cq.h"
#include "tcp/tcp_mr.h"
#include "tcp/tcp_qp.h"

namespace rpma::prov::tcp {

void TcpConn::OnEvent(uint32_t events) {
  std::lock_guard<std::mutex> lock(mu_);
  HandleEvents(events);
}

void TcpConn::OnAppEvent(uint32_t events) {
  std::lock_guard<std::mutex> lock(mu_);
  ++app_reads_;
  if (!delegated_ && state_ == State::kEstablished && fd_ >= 0 && hid_ != 0) {
    Delegate();
  }
  app_thread_ = true;
  HandleEvents(events);
  app_thread_ = false;
}

void TcpConn::HandleEvents(uint32_t events) {
  // The completions of everything read now wake the application once
  // (fired before the lock is released, where Push fired them).
  NotifyBatch batch;
  if (fd_ < 0) return;
  if (state_ == State::kConnecting) {
    FinishConnect();
    return;
  }
  if (events & EPOLLOUT) FlushOut();
  if (fd_ < 0) return;
  if (!InputAllowed()) {
    // Not reading (RNR or output backlog): only a hang-up is of interest
    // (level-triggered, so it must be handled, not left pending).
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      OnPeerGone(false, "peer closed while its requests were stalled");
      return;
    }
    UpdateInterest();  // no EPOLLIN any more: no waiter spins on it
    return;
  }
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || reader_.buffered()) {
    ReadInput();
  }
}

size_t TcpConn::Held() const {
  return out_.response_bytes() + reader_.stash_bytes();
}

int64_t TcpConn::PeerTotal() const {
  return engine_->held() - held_ + static_cast<int64_t>(Held());
}

void TcpConn::AccountHeld() {
  int64_t now = static_cast<int64_t>(Held());
  if (now != held_) engine_->AddHeld(now - held_);
  held_ = now;
}

// A peer flooding requests without reading responses, or behind an RNR
// wait, stops being read at the bounds of tcp/limits.h (the kernel's
// socket buffers then push back on it, as an RNIC's wire would).
bool TcpConn::InputAllowed() const {
  const Limits& l = GetLimits();
  if (reader_.stash_full()) return false;
  if (out_.responses() >= l.max_out_responses) return false;
  return Held() == 0 || PeerTotal() < static_cast<int64_t>(l.peer_hold_bytes);
}

size_t TcpConn::StashRoom() {
  const Limits& l = GetLimits();
  size_t stash = reader_.stash_bytes();
  size_t own = stash < l.max_stash_bytes ? l.max_stash_bytes - stash : 0;
  int64_t total = PeerTotal();
  int64_t limit = static_cast<int64_t>(l.peer_hold_bytes);
  size_t peer = total < limit ? static_cast<size_t>(limit - total) : 0;
  return std::min(own, peer);
}

void TcpConn::FailRnr() {
  RPMA_LOG_WARNING(
      "tcp: %s: a request waited for a receive beyond the RNR retry budget "
      "(%zu bytes kept behind it); failing it with RNR_RETRY_EXC_ERR",
      peer_name_.c_str(), reader_.stash_bytes());
  engine_->AddRnrWaiter(-1);
  reader_.DropStash();
  target_.FailRnr();
  QpError();
  ReadInput();
}

void TcpConn::CheckLimits(int64_t now_ms) {
  const Limits& l = GetLimits();
  if (reader_.blocked()) {
    if (rnr_since_ms_ == 0) rnr_since_ms_ = now_ms;
    // Behind a bound (its own stash or the Pd's total) the peer is not
    // read any more: the wait ends as RC's retries do.
    if (!InputAllowed() && now_ms - rnr_since_ms_ >= l.rnr_retry_ms) {
      FailRnr();
      if (fd_ < 0) return;
    }
  } else {
    rnr_since_ms_ = 0;
  }
  if (out_.empty() || out_.bytes_written() != out_seen_) {
    out_seen_ = out_.bytes_written();
    out_since_ms_ = now_ms;
  } else if (now_ms - out_since_ms_ >= l.stall_ms) {
    OnPeerGone(true, "the peer stopped reading (output stalled)");
    return;
  }
  // Room may have come back through other connections of the Pd.
  if (reader_.stash_full() && StashRoom() > 0) {
    reader_.ClearStashFull();
    ReadInput();
    return;
  }
  UpdateInterest();
}

bool TcpConn::Parsing() { return fd_ >= 0 && InputAllowed(); }

bool TcpConn::TryUnblock() {
  if (!reader_.blocked() || fd_ < 0 || qp_ == nullptr || !qp_->HasRecv()) {
    return false;
  }
  if (!reader_.Unblock()) return false;
  engine_->AddRnrWaiter(-1);
  return true;
}

void TcpConn::UpdateInterest() {
  AccountHeld();
  if (fd_ < 0 || state_ == State::kConnecting) return;
  uint32_t want = InputAllowed() ? EPOLLIN : EPOLLRDHUP;
  // Delayed acknowledgements wait for the reply or the engine's timer,
  // not for room in the socket.
  if (!out_.empty() && !ack_deferred_) want |= EPOLLOUT;
  if (want != interest_) {
    engine_->Modify(fd_, hid_, want);  // watched or delegated
    for (GroupEntry& g : groups_) {
      if (g.group != nullptr) g.group->Modify(fd_, g.key, want);
    }
    interest_ = want;
  }
}

void TcpConn::ReadInput() {
  // Target memory is touched only under the rkey table's shared lock.
  std::shared_lock<std::shared_mutex> mr_lock(mrs_->mu());
  mr_lock_held_ = true;
  target_.CheckDestination();
  reader_.Process();
  for (int i = 0; i < kMaxReadsPerEvent && fd_ >= 0 && InputAllowed(); ++i) {
    int err = 0;
    FrameReader::Io r = reader_.ReadOnce(fd_, &err);
    if (r == FrameReader::Io::kEof) {
      OnPeerGone(false, "connection closed by peer");
      break;
    }
    if (r == FrameReader::Io::kError) {
      OnPeerGone(false, std::strerror(err));
      break;
    }
    if (r == FrameReader::Io::kDrained) break;
  }
  // One batched write of every response produced above.
  FlushOut();
  mr_lock_held_ = false;
}

bool TcpConn::OnHeader(const FrameHeader& h) {
  cur_ = h;
  if (h.type == kFrameResp) return HandleResp(h);
  if (h.type < kFrameWrite) return HandleCm(h);
  return HandleRequest(h);
}

void TcpConn::OnPayload() {
  switch (cur_.type) {
    case kFrameHello:
      OnHello();
      break;
    case kFrameAccept:
      state_ = State::kEstablished;
      deadline_ms_ = 0;
      Emit(CmEventType::kEstablished, pdata_in_);
      break;
    case kFrameResp:
      FinishResp();
      break;
    default:
      OnVerdict(target_.Finish());
  }
}

void TcpConn::QpError() {
  if (qp_ == nullptr) return;
  qp_->EnterError();
  // A payload being placed into an application buffer (a READ response
  // into the WR's sge, a SEND into a receive) stops there: that WR is
  // flushed now and its buffer may be reused as soon as it is polled.
  if (reader_.in_payload() && cur_.type == kFrameResp) {
    reader_.StopPlacing();
    resp_ignore_ = true;
  }
  target_.OnQpError();
  out_.WithdrawRequests();
}

bool TcpConn::AcksOnly() const {
  constexpr size_t kMaxDelayed = 16;
  return out_.acks_only() && out_.size() <= kMaxDelayed;
}

void TcpConn::FlushOut() {
  if (fd_ < 0) {
    out_.Clear();
    return;
  }
  if (app_thread_ && AcksOnly()) {
    if (!ack_deferred_) {
      ack_deferred_ = true;
      engine_->DeferFlush(hid_);
    }
    UpdateInterest();
    return;
  }
  if (ack_deferred_) {  // they go now, with whatever came after them
    ack_deferred_ = false;
    engine_->CancelDeferred(hid_);
  }
  OutQueue::Result r;
  if (out_.has_target_memory() && !mr_lock_held_) {
    std::shared_lock<std::shared_mutex> mr_lock(mrs_->mu());
    r = out_.Write(fd_);
  } else {
    r = out_.Write(fd_);
  }
  if (r == OutQueue::Result::kDeadRegion) {
    // Deregistered while its READ response was still queued: the response
    // cannot be completed, so the connection fails.
    OnPeerGone(true, "region deregistered during a remote read");
    return;
  }
  UpdateInterest();
}

}  // namespace rpma::prov::tcp
