// Connection management and frame I/O of a tcp connection; see
// tcp_conn.h. The data path (posting, target execution, responses) is in
// tcp_conn_data.cc.
#include "tcp/tcp_conn.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <shared_mutex>

#include "log_internal.h"
#include "tcp/tcp_cm_channel.h"
#include "tcp/tcp_cm_id.h"
#include "tcp/tcp_listener.h"
#include "tcp/tcp_mr.h"
#include "tcp/tcp_qp.h"
#include "tcp/tcp_srq.h"

namespace rpma::prov::tcp {
namespace {
constexpr size_t kInBufSize = 64 * 1024;
// Payload remainders at least this long are read straight into their
// destination (registered memory or a posted receive), not via in_.
constexpr size_t kDirectMin = 4096;
constexpr int kMaxReadsPerEvent = 16;     // fairness between connections
constexpr int64_t kHandshakeMs = 3000;    // passive: the hello must come
constexpr int64_t kAcceptWaitMs = 30000;  // active: the server app decides
constexpr int64_t kDisconnectWaitMs = 1000;
// Stop reading requests while this many frames wait to be sent: a peer
// that floods requests without reading responses cannot grow our memory.
// Honest peers stay far below (bounded by their send queue size); the
// bound is in frames, not bytes, so two peers reading large ranges from
// each other never both stop reading.
constexpr size_t kMaxOutFrames = 65536;
// While a SEND waits for a receive (RNR), later requests are kept (with
// their payloads) up to this many bytes so that the peer's responses
// behind them still flow; beyond it, reading stops until the receive.
constexpr size_t kMaxStash = 64u << 20;

bool IsRequest(uint8_t type) {
  return type >= kFrameWrite && type < kFrameResp;
}
}  // namespace

TcpConn::TcpConn(Engine* engine, MrTable* mrs)
    : engine_(engine), mrs_(mrs), in_(kInBufSize) {}

TcpConn::~TcpConn() {
  if (fd_ >= 0) close(fd_);
}

void TcpConn::SetPeer(const SockAddr& peer, int timeout_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  peer_ = peer;
  timeout_ms_ = timeout_ms > 0 ? timeout_ms : 1000;
}

int TcpConn::Adopt(int fd, std::shared_ptr<ListenSocket> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  fd_ = fd;
  TuneSocket(fd_);
  peer_name_ = PeerName(fd_);
  listener_ = std::move(listener);
  state_ = State::kAwaitHello;
  deadline_ms_ = NowMs() + kHandshakeMs;
  interest_ = EPOLLIN;
  int rc = engine_->Add(fd_, interest_, shared_from_this(), &hid_);
  if (rc != 0) {
    close(fd_);
    fd_ = -1;
    state_ = State::kClosed;
  }
  return rc;
}

void TcpConn::BindId(CmId* id) {
  std::lock_guard<std::mutex> lock(mu_);
  id_ = id;
}

int TcpConn::Migrate(std::shared_ptr<CmQueue> queue) {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_ && id_ != nullptr) queue_->MoveTo(id_, queue.get());
  queue_ = std::move(queue);
  return 0;
}

void TcpConn::AttachQp(TcpQp* qp) {
  std::lock_guard<std::mutex> lock(mu_);
  qp_ = qp;
}

void TcpConn::Emit(CmEventType type, std::vector<uint8_t> pdata) {
  if (!queue_ || id_ == nullptr) {
    RPMA_LOG_DEBUG("tcp: CM event %d dropped (no channel)",
                   static_cast<int>(type));
    return;
  }
  CmEvent ev;
  ev.type = type;
  ev.id = id_;
  ev.private_data = std::move(pdata);
  queue_->Push(&ev);
}

int TcpConn::Connect(const void* pdata, uint8_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::kIdle || (len > 0 && pdata == nullptr)) return -EINVAL;
  const auto* p = static_cast<const uint8_t*>(pdata);
  hello_pdata_.assign(p, p + len);
  int fd =
      socket(peer_.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  TuneSocket(fd);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&peer_.ss), peer_.len) !=
          0 &&
      errno != EINPROGRESS) {
    int err = errno;
    close(fd);
    state_ = State::kClosed;
    // As rdma_cm: the call succeeds, the outcome arrives as an event.
    Emit(err == ECONNREFUSED ? CmEventType::kRejected
                             : CmEventType::kUnreachable);
    return 0;
  }
  fd_ = fd;
  state_ = State::kConnecting;
  deadline_ms_ = NowMs() + timeout_ms_;
  interest_ = EPOLLOUT;
  int rc = engine_->Add(fd_, interest_, shared_from_this(), &hid_);
  if (rc != 0) {
    close(fd_);
    fd_ = -1;
    state_ = State::kClosed;
  }
  return rc;
}

void TcpConn::FinishConnect() {
  int err = 0;
  socklen_t l = sizeof(err);
  if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &l) != 0) err = errno;
  if (err == EINPROGRESS || err == EALREADY) return;
  if (err != 0) {
    CmEventType t = CmEventType::kConnectError;
    if (err == ECONNREFUSED) t = CmEventType::kRejected;
    if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH) {
      t = CmEventType::kUnreachable;
    }
    Close();
    Emit(t);
    return;
  }
  peer_name_ = PeerName(fd_);
  FrameHeader h;
  h.type = kFrameHello;
  h.addr = kHelloMagic;
  h.value = kProtocolVersion;
  h.length = static_cast<uint32_t>(hello_pdata_.size());
  QueueOwned(h, hello_pdata_.data(), hello_pdata_.size());
  state_ = State::kHelloSent;  // the connect deadline keeps running
  FlushOut();
}

int TcpConn::Accept(const void* pdata, uint8_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  if (len > 0 && pdata == nullptr) return -EINVAL;
  if (state_ == State::kClosed) {
    // The client went away before the server decided.
    Emit(CmEventType::kConnectError);
    return 0;
  }
  if (state_ != State::kRequested) return -EINVAL;
  FrameHeader h;
  h.type = kFrameAccept;
  h.length = len;
  QueueOwned(h, pdata, len);
  state_ = State::kEstablished;
  FlushOut();
  Emit(CmEventType::kEstablished, hello_pdata_);
  return 0;
}

int TcpConn::Reject() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kClosed) return 0;
  if (state_ != State::kRequested) return -EINVAL;
  FrameHeader h;
  h.type = kFrameReject;
  Queue(h, nullptr, 0);
  FlushOut();
  Close();
  return 0;
}

int TcpConn::Disconnect() {
  std::lock_guard<std::mutex> lock(mu_);
  FrameHeader h;
  switch (state_) {
    case State::kEstablished:
      // As rdma_disconnect: the QP goes to error (outstanding WRs flush).
      if (qp_ != nullptr) qp_->EnterError();
      h.type = kFrameDisconnect;
      Queue(h, nullptr, 0);
      FlushOut();
      state_ = State::kDisconnecting;
      deadline_ms_ = NowMs() + kDisconnectWaitMs;
      return 0;
    case State::kDisconnecting:
    case State::kClosed:
      return 0;  // teardown already done (or under way)
    case State::kConnecting:
    case State::kHelloSent:
    case State::kAwaitAccept:
      Close();
      Emit(CmEventType::kDisconnected);
      return 0;
    case State::kRequested:
      h.type = kFrameReject;
      Queue(h, nullptr, 0);
      FlushOut();
      Close();
      return 0;
    default:
      return -EINVAL;
  }
}

void TcpConn::DetachId() {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_ && id_ != nullptr) queue_->DropFor(id_);
  queue_.reset();
  id_ = nullptr;
  FrameHeader h;
  if (state_ == State::kEstablished) h.type = kFrameDisconnect;
  if (state_ == State::kRequested) h.type = kFrameReject;
  if (h.type != 0) {
    Queue(h, nullptr, 0);
    FlushOut();  // best effort, never waits
  }
  Close();
  qp_ = nullptr;
}

void TcpConn::Close() {
  if (rnr_blocked_) {
    rnr_blocked_ = false;
    engine_->AddRnrWaiter(-1);
  }
  if (have_recv_ && qp_ != nullptr) qp_->FlushOne(cur_recv_.wr_id, true);
  have_recv_ = false;
  if (qp_ != nullptr) qp_->EnterError();
  if (fd_ >= 0) {
    if (hid_ != 0) engine_->Remove(fd_, hid_);
    hid_ = 0;
    close(fd_);
    fd_ = -1;
  }
  state_ = State::kClosed;
  deadline_ms_ = 0;
  out_.clear();
  out_target_ = 0;
  out_requests_ = 0;
  stash_.clear();
  stash_.shrink_to_fit();
  stash_payload_ = 0;
  listener_.reset();
  dst_mr_.reset();
  dst_ = nullptr;
  in_payload_ = false;
  interest_ = 0;
}

void TcpConn::OnPeerGone(bool protocol_error, const char* why) {
  State s = state_;
  if (protocol_error || s == State::kAwaitHello) {
    RPMA_LOG_WARNING("tcp: closing connection with %s: %s", peer_name_.c_str(),
                     why);
  }
  Close();
  switch (s) {
    case State::kEstablished:
    case State::kDisconnecting:
      Emit(CmEventType::kDisconnected);
      break;
    case State::kConnecting:
    case State::kHelloSent:
    case State::kAwaitAccept:
      Emit(CmEventType::kConnectError);
      break;
    default:  // passive before Accept(): Accept() reports it
      break;
  }
}

void TcpConn::ProtocolError(const char* why) { OnPeerGone(true, why); }

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

void TcpConn::OnTick(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // Safety net for a receive posted without a kick.
  if (TryUnblock()) ReadInput();
  if (fd_ >= 0 && !out_.empty()) FlushOut();  // deferred posts, at worst
  if (fd_ < 0 || deadline_ms_ == 0 || now_ms < deadline_ms_) return;
  switch (state_) {
    case State::kConnecting:
    case State::kHelloSent:
    case State::kAwaitAccept:
      Close();
      Emit(CmEventType::kUnreachable);
      break;
    case State::kAwaitHello:
      RPMA_LOG_WARNING("tcp: closing connection with %s: handshake timeout",
                       peer_name_.c_str());
      Close();
      break;
    case State::kDisconnecting:
      Close();
      Emit(CmEventType::kDisconnected);
      break;
    default:
      deadline_ms_ = 0;
  }
}

void TcpConn::OnKick() {
  std::lock_guard<std::mutex> lock(mu_);
  if (TryUnblock()) ReadInput();
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

bool TcpConn::HandleCm(const FrameHeader& h) {
  bool active_wait =
      state_ == State::kHelloSent || state_ == State::kAwaitAccept;
  switch (h.type) {
    case kFrameHello:
      if (state_ != State::kAwaitHello) break;
      pdata_in_.assign(h.length, 0);
      ExpectPayload(pdata_in_.data(), h.length);
      return true;
    case kFrameHelloAck:
      if (state_ != State::kHelloSent) break;
      state_ = State::kAwaitAccept;
      deadline_ms_ = NowMs() + kAcceptWaitMs;
      return true;
    case kFrameAccept:
      if (!active_wait) break;
      pdata_in_.assign(h.length, 0);
      ExpectPayload(pdata_in_.data(), h.length);
      return true;
    case kFrameReject:
      if (!active_wait) break;
      Close();
      Emit(CmEventType::kRejected);
      return true;
    case kFrameDisconnect:
      if (state_ == State::kEstablished) {
        if (qp_ != nullptr) qp_->EnterError();
        FrameHeader d;
        d.type = kFrameDisconnect;
        Queue(d, nullptr, 0);
        FlushOut();
        Close();
        Emit(CmEventType::kDisconnected);
        return true;
      }
      if (state_ == State::kDisconnecting) {
        Close();
        Emit(CmEventType::kDisconnected);
        return true;
      }
      if (state_ == State::kRequested) {  // the client gave up
        Close();
        return true;
      }
      break;
    default:
      break;
  }
  ProtocolError("unexpected connection-management frame");
  return true;
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

void TcpConn::OnHello() {
  hello_pdata_ = pdata_in_;
  deadline_ms_ = 0;
  // Tell the client a listener has it, so only the network (not a slow
  // server application) is bounded by the client's connect timeout.
  FrameHeader ack;
  ack.type = kFrameHelloAck;
  Queue(ack, nullptr, 0);
  auto id = std::make_unique<TcpCmId>(shared_from_this());
  id_ = id.get();
  state_ = State::kRequested;
  CmEvent ev;
  ev.type = CmEventType::kConnectRequest;
  ev.id = id.get();
  ev.new_id = std::move(id);
  ev.private_data = hello_pdata_;
  std::shared_ptr<ListenSocket> ls = std::move(listener_);
  if (ls == nullptr || !ls->Deliver(&ev, &queue_)) {
    // The listener is gone: refuse. The id must not call back into us
    // (we hold mu_), so it is orphaned before it is destroyed.
    static_cast<TcpCmId*>(ev.new_id.get())->Orphan();
    ev.new_id.reset();
    id_ = nullptr;
    FrameHeader rj;
    rj.type = kFrameReject;
    Queue(rj, nullptr, 0);
    FlushOut();
    Close();
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
        if (f.payload_len > 0) {
          iov[n++] = {const_cast<uint8_t*>(f.payload), f.payload_len};
          total += f.payload_len;
        }
      } else {
        size_t off = f.sent - kHeaderSize;
        iov[n++] = {const_cast<uint8_t*>(f.payload) + off, f.payload_len - off};
        total += f.payload_len - off;
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
