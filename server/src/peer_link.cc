#include "peer_link.h"

#include <fcntl.h>
#include <librpma.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "kv/index_format.h"
#include "kv/record_format.h"

namespace kv::server {
namespace {

namespace pr = kv::protocol;
namespace rf = kv::record_format;
using Clock = std::chrono::steady_clock;

// The buffer: receive slots (a reply per record in flight, and room for
// an ERROR), the control send slot (HELLO, REFILL, BYE) and a COMMIT send
// slot per record in flight. The staging ring the records are written
// from is a region of its own: it starts small and grows (re-registered,
// with nothing in flight) for a record larger than it.
constexpr size_t kRecvSlots = PeerLink::kWindow + 4;
constexpr size_t kSlot = pr::kMaxMessage;
constexpr size_t kSendOffset = kRecvSlots * kSlot;
constexpr size_t kCommitSlot = 64;
static_assert(pr::kHeaderSize + pr::kCommitSize <= kCommitSlot);
constexpr size_t kCommitOffset = kSendOffset + kSlot;
constexpr size_t kBufferSize = kCommitOffset + PeerLink::kWindow * kCommitSlot;
// The largest record a keyspace can hold (a 16-bit slot length in units).
constexpr size_t kDataSize =
    index_format::kMaxRecordUnits * index_format::kUnit;
constexpr uint64_t kSendTag = 1000;
constexpr uint64_t kWriteTag = 1001;
constexpr uint64_t kCommitSendTag = 1002;
// A REFILL answered busy (the target's per-connection rate limit) is sent
// again after this pause, at most this many times.
constexpr auto kBusyPause = std::chrono::milliseconds(20);
constexpr int kBusyRetries = 250;

Status FromRpma(int rc, const std::string& what) {
  return Status::Unavailable(what + ": " + rpma_err_2str(rc));
}

// A refusal of the target's, as the status its admit code means.
Status FromAdmit(const pr::Accept& a, const std::string& who) {
  const std::string why =
      who + " refused the copy: " + std::string(pr::AdmitName(a.admit)) +
      (a.reason.empty() ? "" : " (" + a.reason + ")");
  switch (a.admit) {
    case pr::Admit::kAccessDenied:
      return Status::PermissionDenied(why);
    case pr::Admit::kWrongShard:
      return Status::WrongShard(why);
    case pr::Admit::kUnknownKeyspace:
      return Status::NotFound(why);
    case pr::Admit::kNoSpace:
      return Status::NoSpace(why);
    default:
      return Status::Unavailable(why);
  }
}

}  // namespace

PeerLink::PeerLink(Options options)
    : options_(std::move(options)),
      buf_(kBufferSize, 0),
      ring_(std::clamp<size_t>(options_.ring_bytes, 4096, kDataSize)) {}

Result<std::unique_ptr<PeerLink>> PeerLink::Open(const Options& options) {
  std::unique_ptr<PeerLink> link(new PeerLink(options));
  const std::string who = "node " + options.target.ToString();
  ibv_context* ctx = nullptr;
  int rc = rpma_utils_get_ibv_context(options.target.host.c_str(),
                                      RPMA_UTIL_IBV_CONTEXT_REMOTE, &ctx);
  if (rc) return FromRpma(rc, who + ": no device reaches it");
  if ((rc = rpma_peer_new(ctx, &link->peer_))) {
    return FromRpma(rc, "rpma_peer_new");
  }
  rc = rpma_mr_reg(
      link->peer_, link->buf_.data(), link->buf_.size(),
      RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV | RPMA_MR_USAGE_WRITE_SRC,
      &link->mr_);
  if (rc) return FromRpma(rc, "rpma_mr_reg");
  rc = rpma_mr_reg(link->peer_, link->ring_.data(), link->ring_.size(),
                   RPMA_MR_USAGE_WRITE_SRC, &link->ring_mr_);
  if (rc) return FromRpma(rc, "rpma_mr_reg");

  // 1. A HELLO connection: the peer key travels in HELLO, never in the
  //    private data; the WELCOME carries a ticket.
  pr::Connect hello_connect;
  hello_connect.flags = pr::kConnectHello;
  hello_connect.map_epoch = options.epoch;
  pr::Accept accept;
  KV_RETURN_IF_ERROR(link->Connect(hello_connect, &accept));
  if (accept.admit != pr::Admit::kHelloRequired) {
    return FromAdmit(accept, who);
  }
  pr::Hello hello;
  hello.flags = pr::kHelloPeer;
  hello.name = options.keyspace;
  hello.access_key = options.peer_key;
  uint8_t payload[pr::kHelloSize];
  const size_t n = pr::EncodeHello(hello, payload);
  KV_RETURN_IF_ERROR(link->Send(pr::Type::kHello, payload, n));
  pr::Header h;
  std::string reply;
  KV_RETURN_IF_ERROR(link->Receive(&h, &reply));
  pr::Accept welcome;
  if (h.type != pr::Type::kWelcome ||
      !pr::DecodeAccept(reply.data(), reply.size(), &welcome).ok()) {
    return Status::Unavailable(who + " answered HELLO with no WELCOME");
  }
  link->Disconnect();
  if (welcome.admit != pr::Admit::kReconnect) return FromAdmit(welcome, who);

  // 2. The ticket's connection, made in the keyspace's protection domain.
  pr::Connect ticket;
  ticket.flags = pr::kConnectTicket;
  ticket.map_epoch = options.epoch;
  ticket.name.assign(reinterpret_cast<const char*>(welcome.ticket),
                     pr::kTicketSize);
  KV_RETURN_IF_ERROR(link->Connect(ticket, &link->accept_));
  if (link->accept_.admit != pr::Admit::kOk) {
    return FromAdmit(link->accept_, who);
  }
  link->window_ = std::min<size_t>(kWindow, link->accept_.max_inflight);
  return link;
}

Status PeerLink::Connect(const pr::Connect& connect, pr::Accept* accept) {
  const std::string who = "node " + options_.target.ToString();
  closed_ = false;
  received_.clear();
  rpma_conn_cfg* cfg = nullptr;
  int rc = rpma_conn_cfg_new(&cfg);
  if (rc) return FromRpma(rc, "rpma_conn_cfg_new");
  rpma_conn_cfg_set_timeout(cfg, static_cast<int>(options_.timeout.count()));
  // Per record in flight: a write and a COMMIT send (signalled: the CQ
  // holds its completion until it is reaped), and a reply.
  rpma_conn_cfg_set_rq_size(cfg, kRecvSlots);
  rpma_conn_cfg_set_sq_size(cfg, 2 * kWindow + 8);
  rpma_conn_cfg_set_cq_size(cfg, kRecvSlots + kWindow + 8);
  rpma_conn_req* req = nullptr;
  rc = rpma_conn_req_new(peer_, options_.target.host.c_str(),
                         options_.target.port.c_str(), cfg, &req);
  rpma_conn_cfg_delete(&cfg);
  if (rc) return FromRpma(rc, who);
  for (size_t i = 0; i < kRecvSlots; i++) {
    rc = rpma_conn_req_recv(req, mr_, i * kSlot, kSlot,
                            reinterpret_cast<void*>(i + 1));
    if (rc) {
      rpma_conn_req_delete(&req);
      return FromRpma(rc, "rpma_conn_req_recv");
    }
  }
  uint8_t pdata[pr::kConnectSize];
  rpma_conn_private_data pd{
      pdata, static_cast<uint8_t>(pr::EncodeConnect(connect, pdata))};
  rc = rpma_conn_req_connect(&req, &pd, &conn_);
  if (rc) return FromRpma(rc, who);
  int fd = -1;
  rpma_conn_get_event_fd(conn_, &fd);
  rpma_conn_get_cq(conn_, &cq_);
  int cq_fd = -1;
  if (rpma_cq_get_fd(cq_, &cq_fd) == 0 && cq_fd >= 0) {
    (void)fcntl(cq_fd, F_SETFL, fcntl(cq_fd, F_GETFL) | O_NONBLOCK);
  }
  pollfd p{fd, POLLIN, 0};
  rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  const auto deadline = Clock::now() + options_.timeout;
  while ((rc = rpma_conn_next_event(conn_, &ev)) == RPMA_E_NO_EVENT) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) break;
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
  if (rc != 0 || ev != RPMA_CONN_ESTABLISHED) {
    (void)rpma_conn_delete(&conn_);
    cq_ = nullptr;
    if (rc == RPMA_E_NO_EVENT) {
      return Status::TimedOut(who + " did not accept within " +
                              std::to_string(options_.timeout.count()) + " ms");
    }
    if (rc == 0 && ev == RPMA_CONN_UNREACHABLE) {
      // The provider's own handshake timer (or no route): a silent peer.
      return Status::Unavailable(
          who +
          " is unreachable: no answer to the connection handshake "
          "within " +
          std::to_string(options_.timeout.count()) + " ms, or no route to it");
    }
    return Status::Unavailable(
        who + " refused or dropped the connection" +
        (rc == 0 ? std::string(" (") + rpma_utils_conn_event_2str(ev) + ")"
                 : ""));
  }
  rpma_conn_private_data got{};
  rpma_conn_get_private_data(conn_, &got);
  if (got.ptr == nullptr || !pr::DecodeAccept(got.ptr, got.len, accept).ok()) {
    return Status::Unavailable(who + " accepted with no valid accept data");
  }
  return Status::Ok();
}

void PeerLink::Disconnect() {
  if (conn_ == nullptr) return;
  (void)rpma_conn_disconnect(conn_);
  (void)rpma_conn_delete(&conn_);
  cq_ = nullptr;
}

PeerLink::~PeerLink() {
  if (conn_ != nullptr && failure_.ok()) {
    while (!in_flight_.empty() && ReapOne().ok()) {
    }
    // Hands the grant's tail back; the target disconnects after BYE.
    if (failure_.ok()) (void)Send(pr::Type::kBye, nullptr, 0);
  }
  Disconnect();
  if (remote_ != nullptr) (void)rpma_mr_remote_delete(&remote_);
  if (mr_ != nullptr) (void)rpma_mr_dereg(&mr_);
  if (ring_mr_ != nullptr) (void)rpma_mr_dereg(&ring_mr_);
  if (peer_ != nullptr) (void)rpma_peer_delete(&peer_);
}

Status PeerLink::Send(pr::Type type, const uint8_t* payload, size_t len) {
  if (conn_ == nullptr) return Status::Unavailable("not connected");
  pr::Header h;
  h.type = type;
  h.request_id = ++request_id_;
  h.length = static_cast<uint32_t>(len);
  h.map_epoch = options_.epoch;
  uint8_t* p = buf_.data() + kSendOffset;
  pr::EncodeHeader(h, p);
  if (len > 0) std::memcpy(p + pr::kHeaderSize, payload, len);
  int rc = rpma_send(conn_, mr_, kSendOffset, pr::kHeaderSize + len,
                     RPMA_F_COMPLETION_ALWAYS,
                     reinterpret_cast<const void*>(kSendTag));
  if (rc) return FromRpma(rc, "rpma_send");
  return Wait(IBV_WC_SEND);
}

Status PeerLink::Wait(int opcode) {
  const std::string who = "node " + options_.target.ToString();
  int cq_fd = -1;
  (void)rpma_cq_get_fd(cq_, &cq_fd);
  const auto deadline = Clock::now() + options_.timeout;
  for (;;) {
    ibv_wc wc{};
    int rc = rpma_cq_get_wc(cq_, 1, &wc, nullptr);
    if (rc == 0) {
      if (wc.status != IBV_WC_SUCCESS) {
        return Status::Unavailable(
            who + ": completion failed: " + ibv_wc_status_str(wc.status));
      }
      if (wc.opcode == IBV_WC_RECV) {
        const size_t slot = wc.wr_id - 1;
        received_.emplace_back(
            reinterpret_cast<const char*>(buf_.data() + slot * kSlot),
            wc.byte_len);
        rc = rpma_recv(conn_, mr_, slot * kSlot, kSlot,
                       reinterpret_cast<void*>(slot + 1));
        if (rc) return FromRpma(rc, "rpma_recv");
        if (opcode == IBV_WC_RECV) return Status::Ok();
        continue;
      }
      // A COMMIT's send completion is nobody's to wait for (its reply
      // is); a control send's is.
      if (wc.opcode == IBV_WC_SEND && wc.wr_id == kCommitSendTag) continue;
      if (static_cast<int>(wc.opcode) == opcode) return Status::Ok();
      continue;
    }
    if (rc != RPMA_E_NO_COMPLETION) return FromRpma(rc, "rpma_cq_get_wc");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) {
      return Status::TimedOut(who + " did not answer within " +
                              std::to_string(options_.timeout.count()) + " ms");
    }
    pollfd p{cq_fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) > 0) {
      (void)rpma_cq_wait(cq_);
    }
  }
}

Status PeerLink::Receive(pr::Header* h, std::string* payload) {
  if (received_.empty()) KV_RETURN_IF_ERROR(Wait(IBV_WC_RECV));
  std::string msg = std::move(received_.front());
  received_.erase(received_.begin());
  KV_RETURN_IF_ERROR(pr::DecodeHeader(msg.data(), msg.size(), h));
  if (h->type == pr::Type::kError) {
    std::string text = msg.substr(pr::kHeaderSize);
    return Status::Unavailable("node " + options_.target.ToString() +
                               " ended the copy with ERROR: " + text);
  }
  payload->assign(msg.data() + pr::kHeaderSize, h->length);
  return Status::Ok();
}

Status PeerLink::Refill(bool for_delete) {
  const std::string who = "node " + options_.target.ToString();
  for (int attempt = 0;; attempt++) {
    uint8_t flags = for_delete ? pr::kRefillForDelete : 0;
    KV_RETURN_IF_ERROR(Send(pr::Type::kRefill, &flags, pr::kRefillSize));
    pr::Header h;
    std::string reply;
    KV_RETURN_IF_ERROR(Receive(&h, &reply));
    pr::RefillAck ack;
    if (h.type != pr::Type::kRefillAck ||
        !pr::DecodeRefillAck(reinterpret_cast<const uint8_t*>(reply.data()),
                             reply.size(), accept_.segment_size, &ack)
             .ok()) {
      return Status::Unavailable(who + " answered REFILL with no REFILL_ACK");
    }
    if (ack.status == StatusCode::kBusy && attempt < kBusyRetries) {
      std::this_thread::sleep_for(kBusyPause);
      continue;
    }
    if (ack.status != StatusCode::kOk) {
      return Status(ack.status, who + ": REFILL: " + ack.message);
    }
    grant_ = ack.grant;
    have_grant_ = false;
    if (remote_ != nullptr) (void)rpma_mr_remote_delete(&remote_);
    int rc = rpma_mr_remote_from_descriptor(grant_.write_desc,
                                            pr::kDescriptorSize, &remote_);
    if (rc) return FromRpma(rc, "rpma_mr_remote_from_descriptor");
    have_grant_ = true;
    tail_ = grant_.start;
    return Status::Ok();
  }
}

Status PeerLink::Fail(Status why) {
  if (failure_.ok()) failure_ = why;
  return failure_;
}

std::unique_lock<std::mutex> PeerLink::Lock(bool background) {
  if (background) {
    // A foreground caller is waiting: let it in first (std::mutex is not
    // fair, and a copier relocks at once).
    while (foreground_waiting_.load(std::memory_order_acquire) > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return std::unique_lock<std::mutex>(mu_);
  }
  foreground_waiting_.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock<std::mutex> lock(mu_);
  foreground_waiting_.fetch_sub(1, std::memory_order_acq_rel);
  return lock;
}

Result<PeerLink::Copied> PeerLink::Copy(const uint8_t* record, size_t length) {
  std::unique_lock<std::mutex> lock = Lock(false);
  if (!failure_.ok()) return failure_;
  Result<uint64_t> ticket = SubmitLocked(record, length);
  if (!ticket.ok()) return ticket.status();
  KV_RETURN_IF_ERROR(WaitForLocked(*ticket));
  // The lock was held throughout: the last record reaped is this one.
  return Copied{last_stale_};
}

Result<uint64_t> PeerLink::Submit(const uint8_t* record, size_t length,
                                  bool background) {
  std::unique_lock<std::mutex> lock = Lock(background);
  if (!failure_.ok()) return failure_;
  return SubmitLocked(record, length);
}

Status PeerLink::WaitFor(uint64_t ticket) {
  std::unique_lock<std::mutex> lock = Lock(false);
  return WaitForLocked(ticket);
}

Status PeerLink::WaitForLocked(uint64_t ticket) {
  if (ticket > submitted_) {
    return Status::InvalidArgument("no such ticket: " + std::to_string(ticket));
  }
  while (acked_ < ticket) {
    if (!failure_.ok()) return failure_;
    KV_RETURN_IF_ERROR(ReapOne());
  }
  return Status::Ok();
}

int64_t PeerLink::RingSpace(uint64_t length) const {
  if (in_flight_.empty()) return 0;
  const uint64_t front = in_flight_.front().ring_offset;
  if (front <= ring_next_) {  // in use: [front, ring_next_)
    if (ring_next_ + length <= ring_.size()) {
      return static_cast<int64_t>(ring_next_);
    }
    return length < front ? 0 : -1;
  }
  // Wrapped: in use [front, ring size) and [0, ring_next_).
  return ring_next_ + length < front ? static_cast<int64_t>(ring_next_) : -1;
}

Status PeerLink::ReapOne() {
  const std::string who = "node " + options_.target.ToString();
  if (in_flight_.empty()) return Status::Ok();
  pr::Header h;
  std::string reply;
  Status st = Receive(&h, &reply);
  pr::CommitAck ack;
  if (st.ok() &&
      (h.type != pr::Type::kCommitAck ||
       h.request_id != in_flight_.front().request_id ||
       !pr::DecodeCommitAck(reinterpret_cast<const uint8_t*>(reply.data()),
                            reply.size(), &ack)
            .ok())) {
    st = Status::Unavailable(who + " answered COMMIT with no COMMIT_ACK");
  }
  if (!st.ok()) return Fail(st);
  if (ack.status != StatusCode::kOk) {
    return Fail(Status(ack.status, who + " refused the copy: " + ack.message));
  }
  records_++;
  bytes_ += in_flight_.front().length;
  in_flight_.pop_front();
  acked_++;
  last_stale_ = ack.flags & pr::kAckStale;
  return Status::Ok();
}

Result<uint64_t> PeerLink::SubmitLocked(const uint8_t* record, size_t length) {
  rf::RecordView view;
  Status st = rf::VerifyRecord(record, length, accept_.keyspace_id, &view);
  if (!st.ok()) return Status::Corruption("copy: " + st.message());
  if (rf::RecordSizeOf(view) != length || length > kDataSize) {
    return Status::Corruption("copy: a record of " + std::to_string(length) +
                              " bytes that is not its padded size");
  }
  if (length > accept_.segment_size) {
    return Status::InvalidArgument(
        "copy: a record of " + std::to_string(length) +
        " bytes does not fit the target's segments of " +
        std::to_string(accept_.segment_size));
  }
  const bool tombstone = view.tombstone();
  // A grant the record does not fit (or none yet), or the delete reserve
  // for a put: a fresh one, once every record in flight is answered (a
  // REFILL_ACK comes after their COMMIT_ACKs).
  if (!have_grant_ || tail_ + length > grant_.size ||
      ((grant_.flags & pr::kGrantDeletesOnly) && !tombstone)) {
    while (!in_flight_.empty()) KV_RETURN_IF_ERROR(ReapOne());
    st = Refill(tombstone);
    if (!st.ok()) return Fail(st);
    if (tail_ + length > grant_.size) {
      return Fail(
          Status::NoSpace("copy: the target's new grant has no room "
                          "for a record of " +
                          std::to_string(length) + " bytes"));
    }
  }
  while (in_flight_.size() >= window_) KV_RETURN_IF_ERROR(ReapOne());
  if (length > ring_.size()) {
    // A record larger than the ring: nothing in flight, then a ring that
    // holds it (registered anew).
    while (!in_flight_.empty()) KV_RETURN_IF_ERROR(ReapOne());
    if (ring_mr_ != nullptr) (void)rpma_mr_dereg(&ring_mr_);
    ring_.assign(std::min(kDataSize, std::max(length, 2 * ring_.size())), 0);
    ring_next_ = 0;
    int rc = rpma_mr_reg(peer_, ring_.data(), ring_.size(),
                         RPMA_MR_USAGE_WRITE_SRC, &ring_mr_);
    if (rc) return Fail(FromRpma(rc, "rpma_mr_reg"));
  }
  int64_t at;
  while ((at = RingSpace(length)) < 0) KV_RETURN_IF_ERROR(ReapOne());
  // The bytes, then the COMMIT: a send is ordered after the write on the
  // connection, and the target persists record and slot together. The
  // write reports only an error; the COMMIT's reply says it landed.
  const uint64_t staged = static_cast<uint64_t>(at);
  std::memcpy(ring_.data() + staged, record, length);
  int rc = rpma_write(conn_, remote_, tail_ - grant_.start, ring_mr_, staged,
                      length, RPMA_F_COMPLETION_ON_ERROR,
                      reinterpret_cast<const void*>(kWriteTag));
  if (rc) return Fail(FromRpma(rc, "rpma_write"));
  pr::Commit c;
  c.op = tombstone ? 1 : 0;
  c.flags = pr::kCommitReplica;
  c.segment = grant_.segment;
  c.grant_id = grant_.grant_id;
  c.offset = tail_;
  c.length = static_cast<uint32_t>(length);
  c.key_hash = view.header.key_hash;
  pr::Header h;
  h.type = pr::Type::kCommit;
  h.request_id = ++request_id_;
  h.length = static_cast<uint32_t>(pr::kCommitSize);
  h.map_epoch = options_.epoch;
  // The slot of the ticket kWindow before this one, answered already.
  const size_t slot = kCommitOffset + (submitted_ % kWindow) * kCommitSlot;
  pr::EncodeHeader(h, buf_.data() + slot);
  pr::EncodeCommit(c, buf_.data() + slot + pr::kHeaderSize);
  rc = rpma_send(conn_, mr_, slot, pr::kHeaderSize + pr::kCommitSize,
                 RPMA_F_COMPLETION_ALWAYS,
                 reinterpret_cast<const void*>(kCommitSendTag));
  if (rc) return Fail(FromRpma(rc, "rpma_send"));
  in_flight_.push_back({static_cast<uint64_t>(at), length, h.request_id});
  ring_next_ = static_cast<uint64_t>(at) + length;
  tail_ += length;
  return ++submitted_;
}

Status PeerLink::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

uint64_t PeerLink::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

uint64_t PeerLink::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace kv::server
