// Frame I/O of a tcp connection: the reader (parsing, payload placement,
// RNR stash) and the batched writer; see tcp_conn.h.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <shared_mutex>

#include "log_internal.h"
#include "tcp/tcp_conn.h"
#include "tcp/tcp_mr.h"
#include "tcp/tcp_qp.h"
#include "tcp/tcp_srq.h"

namespace rpma::prov::tcp {
namespace {
const uint8_t kZeros[64 * 1024] = {};

bool IsRequest(uint8_t type) {
  return type >= kFrameWrite && type < kFrameResp;
}
}  // namespace

void TcpConn::OnEvent(uint32_t events) {
  std::lock_guard<std::mutex> lock(mu_);
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
    }
    return;
  }
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || in_end_ > in_start_) {
    ReadInput();
  }
}

bool TcpConn::InputAllowed() const {
  return out_.size() < kMaxOutFrames && stash_.size() < kMaxStash;
}

bool TcpConn::HasRecv() const {
  if (qp_ == nullptr) return false;
  if (qp_->srq_ != nullptr) return qp_->srq_->HasAny();
  return !qp_->rq_.empty();
}

// RNR ends when a receive is there: the stashed requests (the blocked one
// first) are put back in front of the unread input, in order, and run
// through the normal path. Not while a response payload is being placed:
// the unread input then starts mid-payload (FinishResp retries). Returns
// true when input is to be processed again (the caller does it).
bool TcpConn::TryUnblock() {
  if (!rnr_blocked_ || fd_ < 0 || in_payload_ || !HasRecv()) return false;
  rnr_blocked_ = false;
  engine_->AddRnrWaiter(-1);
  std::vector<uint8_t> merged = std::move(stash_);
  stash_.clear();
  stash_payload_ = 0;
  merged.insert(merged.end(), in_.data() + in_start_, in_.data() + in_end_);
  size_t n = merged.size();
  if (merged.size() < kInBufSize) merged.resize(kInBufSize);
  in_ = std::move(merged);
  in_start_ = 0;
  in_end_ = n;
  return true;
}

void TcpConn::UpdateInterest() {
  if (fd_ < 0 || state_ == State::kConnecting) return;
  uint32_t want = InputAllowed() ? EPOLLIN : EPOLLRDHUP;
  if (!out_.empty()) want |= EPOLLOUT;
  if (want != interest_) {
    engine_->Modify(fd_, hid_, want);
    interest_ = want;
  }
}

void TcpConn::ReadInput() {
  // Target memory is touched only under the rkey table's shared lock.
  std::shared_lock<std::shared_mutex> mr_lock(mrs_->mu());
  mr_lock_held_ = true;
  if (dst_mr_ && dst_mr_->dead) {  // deregistered mid-payload
    dst_ = nullptr;
    dst_mr_.reset();
    cur_status_ = kRespRemoteAccess;
  }
  Process();
  for (int i = 0; i < kMaxReadsPerEvent && fd_ >= 0 && InputAllowed(); ++i) {
    ssize_t n;
    size_t asked;
    if (in_payload_ && dst_ != nullptr && remaining_ >= kDirectMin &&
        in_start_ == in_end_) {
      // Scatter: the rest of the payload lands in place, whatever follows
      // it lands in in_.
      in_start_ = in_end_ = 0;
      iovec iov[2] = {{dst_, remaining_}, {in_.data(), in_.size()}};
      asked = remaining_ + in_.size();
      n = readv(fd_, iov, 2);
      if (n > 0) {
        size_t d = std::min(static_cast<size_t>(n), remaining_);
        dst_ += d;
        remaining_ -= d;
        in_end_ = static_cast<size_t>(n) - d;
        if (remaining_ == 0) FinishPayload();
      }
    } else {
      if (in_start_ == in_end_) {
        in_start_ = in_end_ = 0;
        if (in_.size() > kInBufSize) {  // grown by an unstash
          in_.resize(kInBufSize);
          in_.shrink_to_fit();
        }
      } else if (in_start_ > 0 || in_end_ == in_.size()) {
        std::memmove(in_.data(), in_.data() + in_start_, in_end_ - in_start_);
        in_end_ -= in_start_;
        in_start_ = 0;
      }
      asked = in_.size() - in_end_;
      if (asked == 0) break;
      n = recv(fd_, in_.data() + in_end_, asked, 0);
      if (n > 0) in_end_ += static_cast<size_t>(n);
    }
    if (n == 0) {
      OnPeerGone(false, "connection closed by peer");
      break;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      OnPeerGone(false, std::strerror(errno));
      break;
    }
    Process();
    if (static_cast<size_t>(n) < asked) break;  // drained the socket
  }
  // One batched write of every response produced above.
  FlushOut();
  mr_lock_held_ = false;
}

void TcpConn::Process() {
  while (fd_ >= 0) {
    size_t avail = in_end_ - in_start_;
    if (stash_payload_ > 0) {
      size_t take = std::min(avail, stash_payload_);
      if (take == 0) return;
      const uint8_t* p = in_.data() + in_start_;
      stash_.insert(stash_.end(), p, p + take);
      in_start_ += take;
      stash_payload_ -= take;
    } else if (!in_payload_) {
      if (!InputAllowed()) return;  // resumed when the backlog drains
      FrameHeader h;
      const char* why = "";
      const uint8_t* hp = in_.data() + in_start_;
      ParseResult r = ParseHeader(hp, avail, &h, &why);
      if (r == ParseResult::kNeedMore) return;
      if (r == ParseResult::kBad) {
        ProtocolError(why);
        return;
      }
      if (rnr_blocked_ && IsRequest(h.type)) {
        // RC order: behind the blocked request. Responses and CM frames
        // (the other direction) still go through.
        stash_.insert(stash_.end(), hp, hp + kHeaderSize);
        in_start_ += kHeaderSize;
        stash_payload_ = h.length;
        continue;
      }
      // The header is consumed before its handler runs so that a
      // zero-length payload can complete inside it.
      in_start_ += kHeaderSize;
      if (!HandleHeader(h)) {
        // RNR: no receive. Retried first when one is posted.
        rnr_blocked_ = true;
        stash_.assign(hp, hp + kHeaderSize);
        stash_payload_ = h.length;
        UpdateInterest();
      }
    } else {
      size_t take = std::min(avail, remaining_);
      if (take == 0) return;
      if (dst_ != nullptr) {
        std::memcpy(dst_, in_.data() + in_start_, take);
        dst_ += take;
      }
      in_start_ += take;
      remaining_ -= take;
      if (remaining_ == 0) FinishPayload();
    }
  }
}

void TcpConn::ExpectPayload(uint8_t* dst, size_t len) {
  dst_ = dst;
  remaining_ = len;
  in_payload_ = len > 0;
  if (len == 0) FinishPayload();
}

bool TcpConn::HandleHeader(const FrameHeader& h) {
  cur_ = h;
  ignore_cur_ = false;
  if (h.type == kFrameResp) return HandleResp(h);
  if (h.type < kFrameWrite) return HandleCm(h);
  return HandleRequest(h);
}

void TcpConn::FinishPayload() {
  in_payload_ = false;
  dst_ = nullptr;
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
      FinishRequest();
  }
}

void TcpConn::Queue(const FrameHeader& h, const void* payload, size_t len,
                    std::shared_ptr<MrEntry> mr) {
  OutFrame& f = out_.emplace_back();
  EncodeHeader(h, f.hdr);
  f.payload = static_cast<const uint8_t*>(payload);
  f.payload_len = len;
  if (mr != nullptr) ++out_target_;
  f.mr = std::move(mr);
}

void TcpConn::QueueOwned(const FrameHeader& h, const void* payload,
                         size_t len) {
  OutFrame& f = out_.emplace_back();
  EncodeHeader(h, f.hdr);
  const auto* p = static_cast<const uint8_t*>(payload);
  if (len > 0) f.own.assign(p, p + len);
  f.payload = f.own.data();
  f.payload_len = len;
}

void TcpConn::QpError() {
  if (qp_ == nullptr) return;
  qp_->EnterError();
  // A payload being placed into an application buffer (a READ response
  // into the WR's sge, a SEND into a receive) stops there: that WR is
  // flushed now and its buffer may be reused as soon as it is polled.
  if (in_payload_ && (cur_.type == kFrameResp || have_recv_)) {
    dst_ = nullptr;
    ignore_cur_ = true;
  }
  if (have_recv_) {
    qp_->FlushOne(cur_recv_.wr_id, true);
    have_recv_ = false;
  }
  // The flushed WRs' buffers are the application's again: our requests not
  // yet sent are withdrawn, and the unsent rest of a partly sent one is
  // replaced by zeros (the peer drops requests once either QP failed, and
  // the frame must still end where its header says).
  std::deque<OutFrame> keep;
  for (OutFrame& f : out_) {
    if (f.request && f.sent == 0) {
      --out_requests_;
      continue;
    }
    if (f.request) f.zero = true;
    keep.push_back(std::move(f));
  }
  out_.swap(keep);
}

void TcpConn::FlushOut() {
  if (out_target_ > 0 && !mr_lock_held_) {
    std::shared_lock<std::shared_mutex> mr_lock(mrs_->mu());
    mr_lock_held_ = true;
    FlushOutLocked();
    mr_lock_held_ = false;
  } else {
    FlushOutLocked();
  }
}

void TcpConn::FlushOutLocked() {
  if (fd_ < 0 || broken_) {
    out_.clear();
    out_target_ = 0;
    out_requests_ = 0;
    return;
  }
  constexpr int kMaxIov = 64;
  while (!out_.empty()) {
    iovec iov[kMaxIov];
    int n = 0;
    size_t total = 0;
    for (const OutFrame& f : out_) {
      if (n + 2 > kMaxIov) break;
      if (f.mr != nullptr && f.mr->dead) {
        // Deregistered while its READ response was still queued: the
        // response cannot be completed, so the connection fails.
        OnPeerGone(true, "region deregistered during a remote read");
        return;
      }
      if (f.sent < kHeaderSize) {
        iov[n++] = {const_cast<uint8_t*>(f.hdr) + f.sent, kHeaderSize - f.sent};
        total += kHeaderSize - f.sent;
      }
      size_t off = f.sent > kHeaderSize ? f.sent - kHeaderSize : 0;
      size_t len = f.payload_len - off;
      if (len > 0 && f.zero) {
        // Filler for a withdrawn request: in chunks, and nothing after it
        // in this call (the chunk may not finish the frame).
        len = std::min(len, sizeof(kZeros));
        iov[n++] = {const_cast<uint8_t*>(kZeros), len};
        total += len;
        break;
      }
      if (len > 0) {
        iov[n++] = {const_cast<uint8_t*>(f.payload) + off, len};
        total += len;
      }
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = sendmsg(fd_, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        // The reader sees the reset or EOF and tears the connection down.
        broken_ = true;
        out_.clear();
        out_target_ = 0;
        out_requests_ = 0;
      }
      break;
    }
    size_t left = static_cast<size_t>(w);
    while (left > 0) {
      OutFrame& f = out_.front();
      size_t rem = kHeaderSize + f.payload_len - f.sent;
      if (left >= rem) {
        left -= rem;
        if (f.mr != nullptr) --out_target_;
        if (f.request) --out_requests_;
        out_.pop_front();
      } else {
        f.sent += left;
        left = 0;
      }
    }
    if (static_cast<size_t>(w) < total) break;
  }
  UpdateInterest();
}

}  // namespace rpma::prov::tcp
