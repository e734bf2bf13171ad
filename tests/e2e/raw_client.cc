#include "raw_client.h"

#include <fcntl.h>
#include <librpma.h>
#include <poll.h>

#include <cstring>
#include <thread>

namespace kv::e2e {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kSlot = protocol::kMaxMessage;
constexpr size_t kSendOffset = RawClient::kRecvSlots * kSlot;
constexpr size_t kDataOffset = kSendOffset + kSlot;
constexpr size_t kBufSize = kDataOffset + RawClient::kDataSize;
// wr_id (op_context) values: receives carry their slot + 1.
constexpr uint64_t kSendCtx = 1000;
constexpr uint64_t kReadCtx = 1001;
constexpr uint64_t kWriteCtx = 1002;

Status RpmaError(const char* what, int rc) {
  return Status::Unavailable(std::string(what) + ": " + rpma_err_2str(rc));
}

int SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

}  // namespace

RawClient::RawClient() : buf_(kBufSize, 0) {}

RawClient::~RawClient() {
  Disconnect();
  rpma_mr_dereg(&mr_);
  if (peer_ != nullptr) rpma_peer_delete(&peer_);
}

Status RawClient::ConnectTo(const std::string& host, int port,
                            std::string_view name, uint8_t flags,
                            milliseconds timeout) {
  return Connect(host, port, ConnectPdata(name, flags), timeout);
}

Status RawClient::Connect(const std::string& host, int port,
                          std::optional<std::string> pdata,
                          milliseconds timeout) {
  if (conn_ != nullptr) return Status::Busy("already connected");
  if (peer_ == nullptr) {
    ibv_context* ctx = nullptr;
    int rc = rpma_utils_get_ibv_context(host.c_str(),
                                        RPMA_UTIL_IBV_CONTEXT_REMOTE, &ctx);
    if (rc) return RpmaError("rpma_utils_get_ibv_context", rc);
    if ((rc = rpma_peer_new(ctx, &peer_))) return RpmaError("peer_new", rc);
    rc = rpma_mr_reg(peer_, buf_.data(), buf_.size(),
                     RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV |
                         RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC,
                     &mr_);
    if (rc) return RpmaError("rpma_mr_reg", rc);
  }
  closed_ = false;
  received_.clear();
  accept_pdata_.clear();
  rpma_conn_cfg* cfg = nullptr;
  rpma_conn_cfg_new(&cfg);
  rpma_conn_cfg_set_timeout(cfg, static_cast<int>(timeout.count()));
  rpma_conn_cfg_set_rq_size(cfg, kRecvSlots);
  rpma_conn_cfg_set_sq_size(cfg, 16);
  rpma_conn_cfg_set_cq_size(cfg, kRecvSlots + 16);
  rpma_conn_req* req = nullptr;
  const std::string port_s = std::to_string(port);
  int rc = rpma_conn_req_new(peer_, host.c_str(), port_s.c_str(), cfg, &req);
  rpma_conn_cfg_delete(&cfg);
  if (rc) return RpmaError("rpma_conn_req_new", rc);
  for (size_t i = 0; i < kRecvSlots; i++) {
    rc = rpma_conn_req_recv(req, mr_, i * kSlot, kSlot,
                            reinterpret_cast<void*>(i + 1));
    if (rc) {
      rpma_conn_req_delete(&req);
      return RpmaError("rpma_conn_req_recv", rc);
    }
  }
  rpma_conn_private_data pd{};
  std::string bytes;
  if (pdata.has_value() && !pdata->empty()) {
    bytes = *pdata;
    pd.ptr = bytes.data();
    pd.len = static_cast<uint8_t>(bytes.size());
  }
  rc = rpma_conn_req_connect(&req, pd.ptr != nullptr ? &pd : nullptr, &conn_);
  if (rc) return RpmaError("rpma_conn_req_connect", rc);
  int fd = -1;
  rpma_conn_get_event_fd(conn_, &fd);
  SetNonBlocking(fd);
  rpma_conn_get_cq(conn_, &cq_);
  int ev = NextEvent(timeout);
  if (ev != RPMA_CONN_ESTABLISHED) {
    rpma_conn_delete(&conn_);
    if (ev < 0) return Status::TimedOut("no connection event in time");
    return Status::Unavailable(
        std::string("connection not established: ") +
        rpma_utils_conn_event_2str(static_cast<rpma_conn_event>(ev)));
  }
  rpma_conn_private_data got{};
  rpma_conn_get_private_data(conn_, &got);
  if (got.ptr != nullptr) {
    accept_pdata_.assign(static_cast<const char*>(got.ptr), got.len);
  }
  return Status::Ok();
}

int RawClient::NextEvent(milliseconds timeout) {
  if (conn_ == nullptr) return -1;
  int fd = -1;
  rpma_conn_get_event_fd(conn_, &fd);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    int rc = rpma_conn_next_event(conn_, &ev);
    if (rc == 0) {
      if (ev == RPMA_CONN_CLOSED || ev == RPMA_CONN_LOST) closed_ = true;
      return ev;
    }
    if (rc != RPMA_E_NO_EVENT) return -1;
    auto left =
        std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return -1;
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, static_cast<int>(left.count()));
  }
}

bool RawClient::WaitClosed(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!closed_) {
    auto left =
        std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    if (NextEvent(left) < 0) return closed_;
  }
  return true;
}

void RawClient::Disconnect() {
  if (conn_ == nullptr) return;
  rpma_conn_disconnect(conn_);
  if (!closed_) WaitClosed(milliseconds(1000));
  rpma_conn_delete(&conn_);
  cq_ = nullptr;
}

void RawClient::Abandon() {
  if (conn_ == nullptr) return;
  rpma_conn_delete(&conn_);
  cq_ = nullptr;
}

Status RawClient::PostRecv(size_t slot) {
  int rc = rpma_recv(conn_, mr_, slot * kSlot, kSlot,
                     reinterpret_cast<void*>(slot + 1));
  return rc ? RpmaError("rpma_recv", rc) : Status::Ok();
}

Status RawClient::WaitCompletion(int want_opcode, milliseconds timeout,
                                 uint32_t* byte_len, uint64_t* wr_id) {
  if (conn_ == nullptr) return Status::Unavailable("not connected");
  const auto spin_start = Clock::now();
  const auto deadline = spin_start + timeout;
  for (;;) {
    ibv_wc wc{};
    int rc = rpma_cq_get_wc(cq_, 1, &wc, nullptr);
    if (rc == 0) {
      if (wc.status != IBV_WC_SUCCESS) {
        return Status::IoError(std::string("completion failed: ") +
                               ibv_wc_status_str(wc.status));
      }
      if (wc.opcode == IBV_WC_RECV && !take_replies_) continue;  // dropped
      if (wc.opcode == IBV_WC_RECV) {
        const size_t slot = wc.wr_id - 1;
        received_.emplace_back(
            reinterpret_cast<const char*>(buf_.data() + slot * kSlot),
            wc.byte_len);
        Status st = PostRecv(slot);
        if (!st.ok()) return st;
        if (want_opcode == IBV_WC_RECV) return Status::Ok();
        continue;
      }
      if (static_cast<int>(wc.opcode) == want_opcode) {
        if (byte_len != nullptr) *byte_len = wc.byte_len;
        if (wr_id != nullptr) *wr_id = wc.wr_id;
        return Status::Ok();
      }
      continue;  // e.g. a send completion while waiting for a read
    }
    if (rc != RPMA_E_NO_COMPLETION) return RpmaError("rpma_cq_get_wc", rc);
    if (Clock::now() >= deadline) return Status::TimedOut("no completion");
    if (closed_) return Status::Unavailable("connection closed");
    // Notice a CLOSED/LOST while waiting, without blocking.
    int fd = -1;
    rpma_conn_get_event_fd(conn_, &fd);
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) NextEvent(milliseconds(0));
    // Spin briefly (latency measurements), then back off.
    if (Clock::now() - spin_start > std::chrono::milliseconds(1)) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    } else {
      std::this_thread::yield();
    }
  }
}

Status RawClient::SendRaw(std::string_view bytes) {
  if (conn_ == nullptr) return Status::Unavailable("not connected");
  if (bytes.size() > kSlot) return Status::InvalidArgument("message too big");
  std::memcpy(buf_.data() + kSendOffset, bytes.data(), bytes.size());
  int rc =
      rpma_send(conn_, mr_, kSendOffset, bytes.size(), RPMA_F_COMPLETION_ALWAYS,
                reinterpret_cast<void*>(kSendCtx));
  if (rc) return RpmaError("rpma_send", rc);
  return WaitCompletion(IBV_WC_SEND, milliseconds(5000), nullptr, nullptr);
}

Status RawClient::SendMessage(protocol::Type type, std::string_view payload,
                              uint32_t request_id) {
  std::string msg(protocol::kHeaderSize + payload.size(), '\0');
  protocol::Header h;
  h.type = type;
  h.request_id = request_id;
  h.length = static_cast<uint32_t>(payload.size());
  protocol::EncodeHeader(h, reinterpret_cast<uint8_t*>(msg.data()));
  std::memcpy(msg.data() + protocol::kHeaderSize, payload.data(),
              payload.size());
  return SendRaw(msg);
}

Status RawClient::Receive(std::string* message, milliseconds timeout) {
  if (received_.empty()) {
    Status st = WaitCompletion(IBV_WC_RECV, timeout, nullptr, nullptr);
    if (!st.ok() && received_.empty()) return st;
  }
  *message = std::move(received_.front());
  received_.erase(received_.begin());
  return Status::Ok();
}

Status RawClient::ReceiveMessage(protocol::Header* header, std::string* payload,
                                 milliseconds timeout) {
  std::string msg;
  Status st = Receive(&msg, timeout);
  if (!st.ok()) return st;
  st = protocol::DecodeHeader(msg.data(), msg.size(), header);
  if (!st.ok()) return st;
  payload->assign(msg.data() + protocol::kHeaderSize, header->length);
  return Status::Ok();
}

Status RawClient::Write(const uint8_t* descriptor, uint64_t offset,
                        std::string_view data, milliseconds timeout) {
  if (conn_ == nullptr) return Status::Unavailable("not connected");
  if (data.size() > kDataSize) return Status::InvalidArgument("too big");
  rpma_mr_remote* remote = nullptr;
  int rc = rpma_mr_remote_from_descriptor(descriptor, protocol::kDescriptorSize,
                                          &remote);
  if (rc) return RpmaError("rpma_mr_remote_from_descriptor", rc);
  std::memcpy(buf_.data() + kDataOffset, data.data(), data.size());
  rc = rpma_write(conn_, remote, offset, mr_, kDataOffset, data.size(),
                  RPMA_F_COMPLETION_ALWAYS, reinterpret_cast<void*>(kWriteCtx));
  Status st = rc ? RpmaError("rpma_write", rc)
                 : WaitCompletion(IBV_WC_RDMA_WRITE, timeout, nullptr, nullptr);
  rpma_mr_remote_delete(&remote);
  return st;
}

Status RawClient::Read(const uint8_t* descriptor, uint64_t offset,
                       size_t length, std::string* out, milliseconds timeout) {
  if (conn_ == nullptr) return Status::Unavailable("not connected");
  if (length > kDataSize) return Status::InvalidArgument("too big");
  rpma_mr_remote* remote = nullptr;
  int rc = rpma_mr_remote_from_descriptor(descriptor, protocol::kDescriptorSize,
                                          &remote);
  if (rc) return RpmaError("rpma_mr_remote_from_descriptor", rc);
  rc = rpma_read(conn_, mr_, kDataOffset, remote, offset, length,
                 RPMA_F_COMPLETION_ALWAYS, reinterpret_cast<void*>(kReadCtx));
  Status st = rc ? RpmaError("rpma_read", rc)
                 : WaitCompletion(IBV_WC_RDMA_READ, timeout, nullptr, nullptr);
  rpma_mr_remote_delete(&remote);
  if (st.ok()) {
    out->assign(reinterpret_cast<const char*>(buf_.data() + kDataOffset),
                length);
  }
  return st;
}

std::string ConnectPdata(std::string_view name, uint8_t flags) {
  protocol::Connect c;
  c.flags = flags;
  c.name = std::string(name);
  uint8_t out[protocol::kConnectSize];
  size_t n = protocol::EncodeConnect(c, out);
  return std::string(reinterpret_cast<const char*>(out), n);
}

std::string HelloPayload(std::string_view name, std::string_view key,
                         uint8_t flags) {
  protocol::Hello h;
  h.flags = flags;
  h.name = std::string(name);
  h.access_key = std::string(key);
  std::string out(protocol::kHelloSize, '\0');
  protocol::EncodeHello(h, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

std::string CommitPayload(const protocol::Commit& c) {
  std::string out(protocol::kCommitSize, '\0');
  protocol::EncodeCommit(c, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

}  // namespace kv::e2e
