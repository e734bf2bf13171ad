// Connection management of a tcp connection (handshake, accept/reject,
// disconnect, timers); see tcp_conn.h. Frame I/O is in tcp_conn_io.cc, the
// initiator's data path in tcp_conn_data.cc, the target in tcp_target.cc.
#include "tcp/tcp_conn.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "log_internal.h"
#include "tcp/access_penalty.h"
#include "tcp/tcp_cm_channel.h"
#include "tcp/tcp_cm_id.h"
#include "tcp/tcp_cq.h"
#include "tcp/tcp_device.h"
#include "tcp/tcp_listener.h"
#include "tcp/tcp_qp.h"

namespace rpma::prov::tcp {

TcpConn::TcpConn(ProgressEngine* engine, MrTable* mrs, const DeviceCaps& caps)
    : strict_(StrictMode()),
      engine_(engine),
      mrs_(mrs),
      reader_(this),
      target_(mrs, engine, &reader_, &out_, caps) {}

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
  peer_ip_ = PeerIp(fd_);
  passive_ = true;
  listener_ = std::move(listener);
  state_ = State::kAwaitHello;
  deadline_ms_ = NowMs() + kHandshakeMs;
  interest_ = EPOLLIN;
  return WatchSocket();
}

int TcpConn::WatchSocket() {
  int rc = engine_->Add(fd_, interest_, shared_from_this(), &hid_);
  if (rc != 0) {  // the engine cannot watch it: the connection is dead
    close(fd_);
    fd_ = -1;
    state_ = State::kClosed;
    return rc;
  }
  JoinGroups();
  return 0;
}

void TcpConn::JoinGroups() {
  if (joined_ || fd_ < 0 || qp_ == nullptr || hid_ == 0) return;
  const std::shared_ptr<ProgressGroup>* gs[2] = {
      qp_->send_cq() != nullptr ? qp_->send_cq()->group_ptr() : nullptr,
      qp_->recv_cq() != nullptr ? qp_->recv_cq()->group_ptr() : nullptr};
  if (gs[0] != nullptr && gs[1] != nullptr && gs[0]->get() == gs[1]->get()) {
    gs[1] = nullptr;  // one channel for both CQs
  }
  for (int i = 0; i < 2; ++i) {
    if (gs[i] == nullptr || *gs[i] == nullptr) continue;
    uint64_t key = 0;
    // On failure the engine alone serves the socket, as before.
    if ((*gs[i])->Join(shared_from_this(), fd_, interest_, &key) == 0) {
      groups_[i] = {*gs[i], key};
    }
  }
  joined_ = true;
}

void TcpConn::LeaveGroups() {
  for (GroupEntry& g : groups_) {
    if (g.group != nullptr && fd_ >= 0) g.group->Leave(fd_, g.key);
    g = GroupEntry{};
  }
  joined_ = false;
}

void TcpConn::Delegate() {
  engine_->Unwatch(fd_, hid_, interest_);
  delegated_ = true;
  checked_reads_ = app_reads_;
}

void TcpConn::TakeBack() {
  if (!delegated_) return;
  delegated_ = false;
  if (fd_ >= 0 && hid_ != 0) engine_->Rewatch(fd_, hid_, interest_);
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
  if (qp != qp_) LeaveGroups();
  qp_ = qp;
  target_.set_qp(qp);
  JoinGroups();
}

int TcpConn::MoveToTable(MrTable* mrs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!passive_ || (state_ != State::kRequested && state_ != State::kClosed))
    return -EINVAL;
  // Not established: no request of the peer is executing or queued (a
  // request frame before accept is a protocol error), so nothing refers
  // to the old table's entries.
  mrs_ = mrs;
  target_.set_mrs(mrs);
  return 0;
}

bool TcpConn::NotConnectedYet() {
  std::lock_guard<std::mutex> lock(mu_);
  return passive_ ? state_ == State::kRequested : state_ == State::kIdle;
}

bool TcpConn::UsesTable(MrTable* mrs) {
  std::lock_guard<std::mutex> lock(mu_);
  return mrs_ == mrs;
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
  return WatchSocket();
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
  peer_ip_ = PeerIp(fd_);
  FrameHeader h;
  h.type = kFrameHello;
  h.addr = kHelloMagic;
  h.value = kProtocolVersion;
  h.length = static_cast<uint32_t>(hello_pdata_.size());
  out_.PushCopy(OutQueue::Kind::kControl, h, hello_pdata_.data(),
                hello_pdata_.size());
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
  out_.PushCopy(OutQueue::Kind::kControl, h, pdata, len);
  state_ = State::kEstablished;
  FlushOut();
  Emit(CmEventType::kEstablished, hello_pdata_);
  return 0;
}

int TcpConn::Reject() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kClosed) return 0;
  if (state_ != State::kRequested) return -EINVAL;
  SendCm(kFrameReject);
  Close();
  return 0;
}

int TcpConn::Disconnect() {
  std::lock_guard<std::mutex> lock(mu_);
  switch (state_) {
    case State::kEstablished:
      // As rdma_disconnect: the QP goes to error (outstanding WRs flush).
      // The engine times the teardown: it watches the socket again.
      TakeBack();
      QpError();
      SendCm(kFrameDisconnect);
      state_ = State::kDisconnecting;
      deadline_ms_ =
          NowMs() + (strict_ ? kStrictDisconnectWaitMs : kDisconnectWaitMs);
      return 0;
    case State::kPeerDisconnected:
      // Strict mode: the reply the initiator is waiting for. No event here
      // (kDisconnected was delivered when the peer's request came).
      SendCm(kFrameDisconnect);
      Close();
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
      SendCm(kFrameReject);
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
  // Best effort, never waits.
  if (state_ == State::kEstablished || state_ == State::kPeerDisconnected)
    SendCm(kFrameDisconnect);
  if (state_ == State::kRequested) SendCm(kFrameReject);
  Close();
  qp_ = nullptr;
}

void TcpConn::SendCm(uint8_t type) {
  FrameHeader h;
  h.type = type;
  out_.Push(OutQueue::Kind::kControl, h, nullptr, 0);
  FlushOut();
}

void TcpConn::Close() {
  if (reader_.blocked()) engine_->AddRnrWaiter(-1);
  target_.Reset();
  QpError();
  if (ack_deferred_) engine_->CancelDeferred(hid_);
  ack_deferred_ = false;
  delegated_ = false;
  if (fd_ >= 0) {
    LeaveGroups();
    if (hid_ != 0) engine_->Remove(fd_, hid_);
    hid_ = 0;
    close(fd_);
    fd_ = -1;
  }
  state_ = State::kClosed;
  deadline_ms_ = 0;
  out_.Clear();
  reader_.Reset();
  listener_.reset();
  interest_ = 0;
  AccountHeld();  // gives the Pd's share back
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

void TcpConn::OnTick(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // Safety net for a receive posted without a kick.
  if (TryUnblock()) ReadInput();
  if (fd_ >= 0 && !out_.empty()) FlushOut();  // deferred posts, at worst
  if (fd_ >= 0) CheckLimits(now_ms);
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
    case State::kHeldBack:
      deadline_ms_ = 0;
      DeliverRequest();
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

void TcpConn::OnCheck(bool first) {
  // Held: an application thread is serving the socket right now.
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || !delegated_ || fd_ < 0) return;
  if (state_ != State::kEstablished) {
    TakeBack();
    return;
  }
  if (!first && app_reads_ == checked_reads_) {
    // Ready, and unserved for a whole check interval: the engine serves
    // it again (its epoll reports the pending bytes at once) until an
    // application thread does.
    TakeBack();
    return;
  }
  checked_reads_ = app_reads_;
}

void TcpConn::OnDeferred() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ack_deferred_) return;
  ack_deferred_ = false;
  FlushOut();
}

bool TcpConn::HandleCm(const FrameHeader& h) {
  bool active_wait =
      state_ == State::kHelloSent || state_ == State::kAwaitAccept;
  switch (h.type) {
    case kFrameHello:
      if (state_ != State::kAwaitHello) break;
      pdata_in_.assign(h.length, 0);
      reader_.Expect(pdata_in_.data(), h.length);
      return true;
    case kFrameHelloAck:
      if (state_ != State::kHelloSent) break;
      state_ = State::kAwaitAccept;
      deadline_ms_ = NowMs() + kAcceptWaitMs;
      return true;
    case kFrameAccept:
      if (!active_wait) break;
      pdata_in_.assign(h.length, 0);
      reader_.Expect(pdata_in_.data(), h.length);
      return true;
    case kFrameReject:
      if (!active_wait) break;
      Close();
      Emit(CmEventType::kRejected);
      return true;
    case kFrameDisconnect:
      if (state_ == State::kEstablished && strict_) {
        // The IB CM passes the DREQ up and sends the DREP only when the
        // application disconnects (or destroys its id).
        TakeBack();
        QpError();
        state_ = State::kPeerDisconnected;
        deadline_ms_ = 0;
        Emit(CmEventType::kDisconnected);
        return true;
      }
      if (state_ == State::kEstablished) {
        QpError();
        SendCm(kFrameDisconnect);
        Close();
        Emit(CmEventType::kDisconnected);
        return true;
      }
      if (state_ == State::kDisconnecting) {
        Close();
        Emit(CmEventType::kDisconnected);
        return true;
      }
      if (state_ == State::kRequested || state_ == State::kHeldBack) {
        // the client gave up
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

void TcpConn::OnHello() {
  hello_pdata_ = pdata_in_;
  deadline_ms_ = 0;
  // Tell the client a listener has it, so only the network (not a slow
  // server application) is bounded by the client's connect timeout.
  FrameHeader ack;
  ack.type = kFrameHelloAck;
  out_.Push(OutQueue::Kind::kControl, ack, nullptr, 0);
  int64_t now = NowMs();
  int64_t at = AccessPenalty::Global().DeliveryTime(peer_ip_, now);
  if (at < 0) {
    RPMA_LOG_WARNING(
        "tcp: rejecting a connection request of %s: its address caused too "
        "many remote access errors",
        peer_name_.c_str());
    listener_.reset();
    SendCm(kFrameReject);
    Close();
    return;
  }
  if (at > now) {  // delivered by OnTick once its turn comes
    state_ = State::kHeldBack;
    deadline_ms_ = at;
    FlushOut();
    return;
  }
  DeliverRequest();
}

void TcpConn::DeliverRequest() {
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
    SendCm(kFrameReject);
    Close();
  }
}

}  // namespace rpma::prov::tcp
