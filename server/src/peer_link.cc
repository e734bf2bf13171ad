#include "peer_link.h"

#include <fcntl.h>
#include <librpma.h>
#include <poll.h>

#include <cstring>
#include <thread>

#include "kv/index_format.h"
#include "kv/record_format.h"

namespace kv::server {
namespace {

namespace pr = kv::protocol;
namespace rf = kv::record_format;
using Clock = std::chrono::steady_clock;

constexpr size_t kRecvSlots = 4;
constexpr size_t kSlot = pr::kMaxMessage;
constexpr size_t kSendOffset = kRecvSlots * kSlot;
constexpr size_t kDataOffset = kSendOffset + kSlot;
// The largest record a keyspace can hold (a 16-bit slot length in units).
constexpr size_t kDataSize =
    index_format::kMaxRecordUnits * index_format::kUnit;
constexpr uint64_t kSendTag = 1000;
constexpr uint64_t kWriteTag = 1001;
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
    : options_(std::move(options)), buf_(kDataOffset + kDataSize, 0) {}

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
  rpma_conn_cfg_set_rq_size(cfg, kRecvSlots);
  rpma_conn_cfg_set_sq_size(cfg, 8);
  rpma_conn_cfg_set_cq_size(cfg, kRecvSlots + 8);
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
    // Hands the grant's tail back; the target disconnects after BYE.
    (void)Send(pr::Type::kBye, nullptr, 0);
  }
  Disconnect();
  if (mr_ != nullptr) (void)rpma_mr_dereg(&mr_);
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
    have_grant_ = true;
    tail_ = grant_.start;
    return Status::Ok();
  }
}

Status PeerLink::Fail(Status why) {
  if (failure_.ok()) failure_ = why;
  return failure_;
}

Result<PeerLink::Copied> PeerLink::Copy(const uint8_t* record, size_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.ok()) return failure_;
  Copied out;
  Status st = CopyLocked(record, length, &out);
  if (!st.ok()) return st;
  return out;
}

Status PeerLink::CopyLocked(const uint8_t* record, size_t length, Copied* out) {
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
  // for a put: a fresh one.
  if (!have_grant_ || tail_ + length > grant_.size ||
      ((grant_.flags & pr::kGrantDeletesOnly) && !tombstone)) {
    st = Refill(tombstone);
    if (!st.ok()) return Fail(st);
    if (tail_ + length > grant_.size) {
      return Fail(
          Status::NoSpace("copy: the target's new grant has no room "
                          "for a record of " +
                          std::to_string(length) + " bytes"));
    }
  }
  // The bytes, then the COMMIT: a send is ordered after the write on the
  // connection, and the target persists record and slot together.
  std::memcpy(buf_.data() + kDataOffset, record, length);
  rpma_mr_remote* remote = nullptr;
  int rc = rpma_mr_remote_from_descriptor(grant_.write_desc,
                                          pr::kDescriptorSize, &remote);
  if (rc) return Fail(FromRpma(rc, "rpma_mr_remote_from_descriptor"));
  rc = rpma_write(conn_, remote, tail_ - grant_.start, mr_, kDataOffset, length,
                  RPMA_F_COMPLETION_ALWAYS,
                  reinterpret_cast<const void*>(kWriteTag));
  st = rc ? FromRpma(rc, "rpma_write") : Wait(IBV_WC_RDMA_WRITE);
  (void)rpma_mr_remote_delete(&remote);
  if (!st.ok()) return Fail(st);
  pr::Commit c;
  c.op = tombstone ? 1 : 0;
  c.flags = pr::kCommitReplica;
  c.segment = grant_.segment;
  c.grant_id = grant_.grant_id;
  c.offset = tail_;
  c.length = static_cast<uint32_t>(length);
  c.key_hash = view.header.key_hash;
  uint8_t payload[pr::kCommitSize];
  pr::EncodeCommit(c, payload);
  st = Send(pr::Type::kCommit, payload, sizeof(payload));
  pr::Header h;
  std::string reply;
  if (st.ok()) st = Receive(&h, &reply);
  pr::CommitAck ack;
  if (st.ok() &&
      (h.type != pr::Type::kCommitAck ||
       !pr::DecodeCommitAck(reinterpret_cast<const uint8_t*>(reply.data()),
                            reply.size(), &ack)
            .ok())) {
    st = Status::Unavailable("node " + options_.target.ToString() +
                             " answered COMMIT with no COMMIT_ACK");
  }
  if (!st.ok()) return Fail(st);
  if (ack.status != StatusCode::kOk) {
    return Fail(Status(ack.status, "node " + options_.target.ToString() +
                                       " refused the copy: " + ack.message));
  }
  tail_ += length;
  records_++;
  bytes_ += length;
  out->stale = ack.flags & pr::kAckStale;
  return Status::Ok();
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
