// Connection: connect + admission, registrations, posts and completions.
#include "connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kv/client/rpma_status.h"
#include "kv/endpoint.h"
#include "kv/record_format.h"

namespace kv {
namespace {

namespace pr = kv::protocol;
using Clock = std::chrono::steady_clock;

constexpr size_t kSendSlot = 512;  // every client message fits
constexpr uint64_t kTagSend = 1ull << 62;
constexpr uint64_t kTagRecv = 1ull << 61;
constexpr uint64_t kTagMask = kTagSend | kTagRecv;

void* AlignedAlloc(size_t n) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, (n + 4095) / 4096 * 4096) != 0) return nullptr;
  std::memset(p, 0, n);
  return p;
}

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// What a failed completion means to a user (the provider's own words in
// brackets, for a report).
std::string LostBecause(ibv_wc_status s) {
  const std::string raw = std::string(" [") + ibv_wc_status_str(s) + "]";
  switch (s) {
    case IBV_WC_WR_FLUSH_ERR:
      return "the server closed the connection (shut down or restarted?)" + raw;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "the server stopped answering (crashed, or the network is "
             "down?)" +
             raw;
    case IBV_WC_REM_ACCESS_ERR:
      return "the server refused a remote access" + raw;
    default:
      return "the connection to the server failed" + raw;
  }
}

}  // namespace

void Connection::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

Connection::Connection(const ClientOptions& o) : options_(o) {}

bool Connection::IndexFits(uint64_t bucket_count) const {
  // Numbers from the server's memory are a peer's too: the index they
  // describe must lie inside the read region, or a later read would fail
  // the connection. (A grown index may cover the log's first segments:
  // the store hands them to the index, docs/format.md "Index growth".)
  if (bucket_count == 0 || bucket_count > (uint64_t{1} << 40)) return false;
  const uint64_t index_end =
      accept_.index_offset +
      index_format::PhysicalBuckets(bucket_count) * index_format::kBucketSize;
  return index_end <= read_region_size_;
}

Status Connection::AdoptIndexHeader(const index_format::IndexHeader& h) {
  // A header behind the geometry in use is not adopted: it was read
  // before another op's newer header, or before the growth whose bucket
  // count the accept data already carried was published. The reader
  // starts over and reads the header again (bounded).
  if (h.generation <= index_generation_ ||
      h.bucket_count <= geometry_.bucket_count) {
    return Status::Ok();
  }
  if (!IndexFits(h.bucket_count)) {
    return Status::Corruption(
        "the index header of keyspace '" + options_.keyspace + "' on " +
        server_ + " names " + std::to_string(h.bucket_count) +
        " buckets, which do not fit its read region (a damaged pool, or a "
        "server of another version)");
  }
  index_generation_ = h.generation;
  geometry_.bucket_count = h.bucket_count;
  return Status::Ok();
}

void Connection::Fail(Status why) {
  if (failure_.ok()) failure_ = std::move(why);
}

Result<std::unique_ptr<Connection>> Connection::Open(const ClientOptions& o) {
  Result<Endpoint> ep = Endpoint::Parse(o.server);
  if (!ep.ok()) return ep.status();
  Status st = ValidateKeyspaceName(o.keyspace);
  if (!st.ok()) return st;
  if (o.access_key.size() > pr::kMaxAccessKey) {
    return Status::InvalidArgument("access key of " +
                                   std::to_string(o.access_key.size()) +
                                   " bytes is over the 64-byte limit");
  }
  if (o.provider != "auto" && o.provider != "tcp" && o.provider != "verbs") {
    return Status::InvalidArgument("provider '" + o.provider +
                                   "' is not one of auto, tcp, verbs");
  }
  if (o.provider != "auto") setenv("RPMA_PROVIDER", o.provider.c_str(), 1);
  std::unique_ptr<Connection> c(new Connection(o));
  c->host_ = ep->host;
  c->port_ = ep->port;
  c->server_ = ep->ToString();
  KV_RETURN_IF_ERROR(c->Connect());
  return c;
}

Status Connection::Connect() {
  ibv_context* ctx = nullptr;
  int rc = rpma_utils_get_ibv_context(host_.c_str(),
                                      RPMA_UTIL_IBV_CONTEXT_REMOTE, &ctx);
  if (rc != 0) {
    return Status::Unavailable("cannot connect to " + server_ +
                               ": no RDMA device or tcp provider reaches " +
                               host_ + " (" + rpma_err_2str(rc) + ")");
  }
  rc = rpma_peer_new(ctx, &peer_);
  if (rc != 0) return client::StatusFromRpma(rc, "rpma_peer_new");

  // Queues: every in-flight operation takes at most 1 + 16 reads or a
  // write + a send; receives: one per outstanding request.
  const uint32_t inflight =
      options_.max_inflight == 0
          ? 1
          : (options_.max_inflight > 256 ? 256 : options_.max_inflight);
  send_slots_ = inflight;
  recv_slots_ = inflight + 1;
  sq_size_ = inflight * 4 + 8;

  // Message buffers first: receives are posted before the connection is
  // established, so WELCOME can never miss one.
  msgs_.reset(static_cast<uint8_t*>(
      AlignedAlloc(send_slots_ * kSendSlot + recv_slots_ * pr::kMaxMessage)));
  if (!msgs_) return Status::NoSpace("out of memory for message buffers");
  rc = rpma_mr_reg(peer_, msgs_.get(),
                   send_slots_ * kSendSlot + recv_slots_ * pr::kMaxMessage,
                   RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &msg_mr_);
  if (rc != 0) return client::StatusFromRpma(rc, "rpma_mr_reg(messages)");

  pr::Connect cd;
  const bool hello = options_.keyspace.size() > pr::kInlineNameMax ||
                     !options_.access_key.empty();
  cd.flags = static_cast<uint8_t>(
      (options_.create_if_missing ? pr::kConnectCreate : 0) |
      (hello ? pr::kConnectHello : 0));
  if (!hello) cd.name = options_.keyspace;
  cd.map_epoch = options_.map_epoch;
  KV_RETURN_IF_ERROR(Dial(cd));
  if (accept_.admit == pr::Admit::kHelloRequired) {
    KV_RETURN_IF_ERROR(Hello());
    if (accept_.admit == pr::Admit::kReconnect) {
      // HELLO admitted us on a connection in the server's empty
      // protection domain; the keyspace's is reached by connecting again
      // with the one-time ticket (docs/protocol.md, "HELLO").
      Hangup();
      pr::Connect again;
      again.flags = pr::kConnectTicket;
      again.map_epoch = options_.map_epoch;
      again.name.assign(reinterpret_cast<const char*>(accept_.ticket),
                        pr::kTicketSize);
      KV_RETURN_IF_ERROR(Dial(again));
      if (accept_.admit != pr::Admit::kOk) {
        return Status::Unavailable("cannot connect to " + server_ +
                                   ": the ticket connect was not admitted");
      }
    }
  }
  return Register();
}

Status Connection::Dial(const pr::Connect& cd) {
  rpma_conn_cfg* cfg = nullptr;
  int rc = rpma_conn_cfg_new(&cfg);
  if (rc != 0) return client::StatusFromRpma(rc, "rpma_conn_cfg_new");
  (void)rpma_conn_cfg_set_timeout(
      cfg, static_cast<int>(options_.connect_timeout.count()));
  (void)rpma_conn_cfg_set_sq_size(cfg, sq_size_);
  (void)rpma_conn_cfg_set_rq_size(cfg, recv_slots_);
  (void)rpma_conn_cfg_set_cq_size(cfg, sq_size_ + recv_slots_);
  sq_free_ = sq_size_;
  unsignaled_ = 0;
  free_send_.clear();
  for (uint32_t i = send_slots_; i > 0; i--) free_send_.push_back(i - 1);

  rpma_conn_req* req = nullptr;
  rc = rpma_conn_req_new(peer_, host_.c_str(), port_.c_str(), cfg, &req);
  (void)rpma_conn_cfg_delete(&cfg);
  if (rc != 0) {
    return Status::Unavailable("cannot connect to " + server_ + ": " +
                               rpma_err_2str(rc));
  }
  for (uint32_t i = 0; i < recv_slots_; i++) {
    rc = rpma_conn_req_recv(
        req, msg_mr_, send_slots_ * kSendSlot + i * pr::kMaxMessage,
        pr::kMaxMessage, reinterpret_cast<const void*>(kTagRecv | i));
    if (rc != 0) {
      (void)rpma_conn_req_delete(&req);
      return client::StatusFromRpma(rc, "rpma_conn_req_recv");
    }
  }
  uint8_t buf[pr::kConnectSize];
  rpma_conn_private_data pd{buf,
                            static_cast<uint8_t>(pr::EncodeConnect(cd, buf))};
  rc = rpma_conn_req_connect(&req, &pd, &conn_);
  if (rc != 0) {
    return Status::Unavailable("cannot connect to " + server_ + ": " +
                               rpma_err_2str(rc));
  }
  int efd = -1;
  (void)rpma_conn_get_event_fd(conn_, &efd);
  pollfd pfd{efd, POLLIN, 0};
  const int ms = static_cast<int>(options_.connect_timeout.count()) + 1000;
  if (::poll(&pfd, 1, ms) <= 0) {
    return Status::TimedOut("cannot connect to " + server_ + ": no answer in " +
                            std::to_string(ms) + " ms");
  }
  rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  rc = rpma_conn_next_event(conn_, &ev);
  if (rc != 0) return client::StatusFromRpma(rc, "rpma_conn_next_event");
  if (ev == RPMA_CONN_REJECTED) {
    return Status::Unavailable("cannot connect to " + server_ +
                               ": connection refused — is kvserver running?");
  }
  if (ev == RPMA_CONN_UNREACHABLE) {
    return Status::Unavailable("cannot connect to " + server_ +
                               ": unreachable — is kvserver running, is the "
                               "address right?");
  }
  if (ev == RPMA_CONN_LOST) {
    return Status::Unavailable(
        "cannot connect to " + server_ +
        ": the connection failed before it was set up — is kvserver "
        "running there, is the address right? [" +
        rpma_utils_conn_event_2str(ev) + "]");
  }
  if (ev != RPMA_CONN_ESTABLISHED) {
    return Status::Unavailable("cannot connect to " + server_ + ": " +
                               rpma_utils_conn_event_2str(ev));
  }
  rc = rpma_conn_get_cq(conn_, &cq_);
  if (rc != 0) return client::StatusFromRpma(rc, "rpma_conn_get_cq");
  // Non-blocking: a readable CQ fd (the tcp provider wakes it on the
  // peer's bytes) need not mean a completion event, and Wait must never
  // sit in rpma_cq_wait past its deadline (docs/tcp_provider.md).
  int cq_fd = -1;
  if (rpma_cq_get_fd(cq_, &cq_fd) == 0 && cq_fd >= 0) {
    (void)fcntl(cq_fd, F_SETFL, fcntl(cq_fd, F_GETFL) | O_NONBLOCK);
  }
  rpma_conn_private_data got{};
  rc = rpma_conn_get_private_data(conn_, &got);
  if (rc != 0) return client::StatusFromRpma(rc, "rpma_conn_get_private_data");
  return Admit(got.ptr, got.len);
}

void Connection::Hangup() {
  if (conn_ != nullptr) {
    (void)rpma_conn_disconnect(conn_);
    (void)rpma_conn_delete(&conn_);
  }
  cq_ = nullptr;
  failure_ = Status::Ok();
}

Status Connection::StatusOfAdmission(const pr::Accept& a) const {
  const std::string ks = "keyspace '" + options_.keyspace + "'";
  const std::string why = a.reason.empty() ? "" : " (" + a.reason + ")";
  switch (a.admit) {
    case pr::Admit::kOk:
    case pr::Admit::kHelloRequired:
    case pr::Admit::kReconnect:
      return Status::Ok();
    case pr::Admit::kUnknownKeyspace:
      // Asked to create it: then what is missing is the server's flag.
      return Status::NotFound(
          ks + " does not exist on " + server_ +
          (options_.create_if_missing
               ? " and the server does not create keyspaces: start kvserver "
                 "with --allow_create, or run kvadmin keyspace create"
               : " — connect with --create (the server needs "
                 "--allow_create) or run kvadmin keyspace create") +
          why);
    case pr::Admit::kAccessDenied:
      return Status::PermissionDenied(
          ks + " on " + server_ + " needs an access key" +
          (options_.access_key.empty() ? " (none given: --access_key)"
                                       : " and the one given is wrong") +
          why);
    case pr::Admit::kTooManyConnections:
      return Status::Unavailable(server_ + " has too many connections" + why);
    case pr::Admit::kShuttingDown:
      return Status::Unavailable(server_ + " is shutting down" + why);
    case pr::Admit::kNoSpace:
      return Status::NoSpace(ks + " has no free log segment to grant" + why);
    case pr::Admit::kWrongShard:
      return Status::WrongShard(server_ + " does not serve " + ks + why);
    case pr::Admit::kBadVersion:
      return Status::Unavailable(server_ + " refused protocol version " +
                                 std::to_string(pr::kVersion) + why);
    default:
      return Status::Unavailable(server_ + " refused the connection: " +
                                 std::string(pr::AdmitName(a.admit)) + why);
  }
}

Status Connection::Admit(const void* pdata, size_t len) {
  Status st = pr::DecodeAccept(pdata, len, &accept_);
  if (!st.ok()) {
    return Status::Unavailable("cannot connect to " + server_ + ": " +
                               st.message());
  }
  KV_RETURN_IF_ERROR(StatusOfAdmission(accept_));
  if (accept_.admit == pr::Admit::kOk) {
    grant_ = accept_.grant;
    tail_ = grant_.start;
    max_inflight_ =
        accept_.max_inflight < send_slots_ ? accept_.max_inflight : send_slots_;
  }
  return Status::Ok();
}

Status Connection::Hello() {
  pr::Hello h;
  h.flags = options_.create_if_missing ? pr::kConnectCreate : 0;
  h.name = options_.keyspace;
  h.access_key = options_.access_key;
  uint8_t payload[pr::kHelloSize];
  const size_t n = pr::EncodeHello(h, payload);
  max_inflight_ = 1;
  KV_RETURN_IF_ERROR(Send(pr::Type::kHello, 0, payload, n));
  const auto deadline = Clock::now() + options_.connect_timeout;
  std::vector<Event> events;
  while (true) {
    // A refusal arrives as WELCOME followed at once by the server's
    // disconnect: the same reap can bring both, so the message counts
    // even when the wait reports the connection's failure.
    Status st = Wait(deadline, &events);
    for (Event& e : events) {
      if (e.kind != Event::kMessage) continue;
      if (e.header.type == pr::Type::kWelcome) {
        return Admit(e.body.data(), e.body.size());
      }
      return Status::Unavailable("cannot connect to " + server_ +
                                 ": unexpected reply to HELLO");
    }
    if (!st.ok()) {
      return Status(st.code(), "cannot connect to " + server_ +
                                   ": no WELCOME: " + st.message());
    }
    events.clear();
  }
}

Status Connection::Register() {
  int rc = rpma_mr_remote_from_descriptor(accept_.read_desc,
                                          pr::kDescriptorSize, &read_mr_);
  if (rc != 0) return client::StatusFromRpma(rc, "read region descriptor");
  size_t region_size = 0;
  rc = rpma_mr_remote_get_size(read_mr_, &region_size);
  if (rc != 0) return client::StatusFromRpma(rc, "read region size");
  read_region_size_ = region_size;
  if (!IndexFits(accept_.bucket_count)) {
    return Status::Corruption("cannot connect to " + server_ +
                              ": the keyspace's index (" +
                              std::to_string(accept_.bucket_count) +
                              " buckets) does not fit its read region");
  }
  geometry_ = {accept_.keyspace_id, accept_.bucket_count, accept_.log_size,
               accept_.segment_size};
  KV_RETURN_IF_ERROR(InstallGrant(grant_));
  // The arena holds two largest records plus room for many small ones.
  const size_t max_record = record_format::RecordSize(
      record_format::kMaxKeySize, accept_.max_value_size, /*expires=*/true);
  arena_size_ = 2 * max_record + (size_t{8} << 20);
  arena_.reset(static_cast<uint8_t*>(AlignedAlloc(arena_size_)));
  if (!arena_) return Status::NoSpace("out of memory for the data arena");
  rc =
      rpma_mr_reg(peer_, arena_.get(), arena_size_,
                  RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC, &arena_mr_);
  return client::StatusFromRpma(rc, "rpma_mr_reg(arena)");
}

Status Connection::InstallGrant(const pr::Grant& g) {
  if (g.size == 0) {  // admitted to a full keyspace: no grant yet
    grant_ = g;
    tail_ = 0;
    return Status::Ok();
  }
  rpma_mr_remote* mr = nullptr;
  int rc =
      rpma_mr_remote_from_descriptor(g.write_desc, pr::kDescriptorSize, &mr);
  if (rc != 0) return client::StatusFromRpma(rc, "grant descriptor");
  if (write_mr_ != nullptr) (void)rpma_mr_remote_delete(&write_mr_);
  write_mr_ = mr;
  grant_ = g;
  tail_ = g.start;
  return Status::Ok();
}

Status Connection::PostRead(size_t arena_off, uint64_t remote_off, size_t len,
                            uint64_t tag, bool more) {
  if (!failure_.ok()) return failure_;
  const int flags = RPMA_F_COMPLETION_ALWAYS | (more ? RPMA_EXT_F_MORE : 0);
  int rc = rpma_read(conn_, arena_mr_, arena_off, read_mr_, remote_off, len,
                     flags, reinterpret_cast<const void*>(tag));
  if (rc != 0) return client::StatusFromRpma(rc, "rpma_read");
  sq_free_--;
  return Status::Ok();
}

Status Connection::PostAppend(size_t arena_off, size_t len,
                              uint64_t* segment_offset, bool more) {
  if (!failure_.ok()) return failure_;
  const int flags = RPMA_F_COMPLETION_ON_ERROR | (more ? RPMA_EXT_F_MORE : 0);
  int rc = rpma_write(conn_, write_mr_, tail_ - grant_.start, arena_mr_,
                      arena_off, len, flags, nullptr);
  if (rc != 0) return client::StatusFromRpma(rc, "rpma_write");
  sq_free_--;
  unsignaled_++;
  *segment_offset = tail_;
  tail_ += len;
  return Status::Ok();
}

Status Connection::Send(pr::Type type, uint32_t request_id,
                        const uint8_t* payload, size_t len) {
  if (!failure_.ok()) return failure_;
  if (free_send_.empty() || pr::kHeaderSize + len > kSendSlot) {
    return Status::Busy("no free send slot");
  }
  const uint32_t slot = free_send_.back();
  uint8_t* p = msgs_.get() + slot * kSendSlot;
  pr::Header h;
  h.type = type;
  h.request_id = request_id;
  h.length = static_cast<uint32_t>(len);
  h.map_epoch = accept_.map_epoch;
  pr::EncodeHeader(h, p);
  if (len > 0) std::memcpy(p + pr::kHeaderSize, payload, len);
  // The tag carries how many unsignaled writes this send's completion
  // frees from the send queue (they precede it).
  const uint64_t tag = kTagSend | (uint64_t{unsignaled_} << 32) | slot;
  int rc =
      rpma_send(conn_, msg_mr_, slot * kSendSlot, pr::kHeaderSize + len,
                RPMA_F_COMPLETION_ALWAYS, reinterpret_cast<const void*>(tag));
  if (rc != 0) return client::StatusFromRpma(rc, "rpma_send");
  free_send_.pop_back();
  unsignaled_ = 0;
  sq_free_--;
  return Status::Ok();
}

Status Connection::PostRecv(uint32_t slot) {
  int rc = rpma_recv(
      conn_, msg_mr_, send_slots_ * kSendSlot + slot * pr::kMaxMessage,
      pr::kMaxMessage, reinterpret_cast<const void*>(kTagRecv | slot));
  return client::StatusFromRpma(rc, "rpma_recv");
}

Status Connection::Reap(std::vector<Event>* events, int* got) {
  ibv_wc wc[16];
  int n = 0;
  int rc = rpma_cq_get_wc(cq_, 16, wc, &n);
  *got = 0;
  if (rc == RPMA_E_NO_COMPLETION) return Status::Ok();
  if (rc != 0) {
    Fail(client::StatusFromRpma(rc, "rpma_cq_get_wc"));
    return failure_;
  }
  for (int i = 0; i < n; i++) {
    const uint64_t tag = wc[i].wr_id;
    if (wc[i].status != IBV_WC_SUCCESS) {
      Fail(Status::Unavailable("connection to " + server_ +
                               " lost: " + LostBecause(wc[i].status)));
      continue;
    }
    if (tag & kTagSend) {
      free_send_.push_back(static_cast<uint32_t>(tag & 0xffffffffu));
      sq_free_ += 1 + static_cast<uint32_t>((tag & ~kTagMask) >> 32);
      // Progress too: an engine waiting only for a send slot or queue
      // room must get control back (else it sleeps until the timeout).
      (*got)++;
      continue;
    }
    if (tag & kTagRecv) {
      const uint32_t slot = static_cast<uint32_t>(tag & 0xffffffffu);
      const uint8_t* p =
          msgs_.get() + send_slots_ * kSendSlot + slot * pr::kMaxMessage;
      Event e{Event::kMessage, 0, {}, {}};
      Status st = pr::DecodeHeader(p, wc[i].byte_len, &e.header);
      if (!st.ok()) {
        Fail(Status::Unavailable("server " + server_ +
                                 " sent a bad message: " + st.message()));
        continue;
      }
      e.body.assign(p + pr::kHeaderSize, p + pr::kHeaderSize + e.header.length);
      st = PostRecv(slot);
      if (!st.ok()) Fail(st);
      events->push_back(std::move(e));
      (*got)++;
      continue;
    }
    sq_free_++;
    events->push_back(Event{Event::kRead, tag, {}, {}});
    (*got)++;
  }
  return failure_;
}

Status Connection::Wait(Clock::time_point deadline, std::vector<Event>* events,
                        Clock::time_point wake) {
  if (!failure_.ok()) return failure_;
  int cq_fd = -1;
  (void)rpma_cq_get_fd(cq_, &cq_fd);
  uint32_t spins = 0;
  const auto spin_until =
      options_.wait == ClientOptions::Wait::kPoll
          ? Clock::time_point::max()
          : (options_.wait == ClientOptions::Wait::kAdaptive
                 ? Clock::now() + std::chrono::microseconds(options_.spin_us)
                 : Clock::time_point::min());
  while (true) {
    int got = 0;
    KV_RETURN_IF_ERROR(Reap(events, &got));
    if (got > 0) return Status::Ok();
    if ((++spins & 63) != 0 && spin_until != Clock::time_point::min()) {
      continue;  // check the clock every 64 empty polls
    }
    // A software provider's progress thread (tcp) needs this core more
    // than another empty poll does: on a small machine a pure spin
    // starves it for a scheduler tick (measured: client/README.md).
    if (spin_until != Clock::time_point::min()) sched_yield();
    const auto now = Clock::now();
    if (now >= deadline) break;
    if (now >= wake) return Status::Ok();
    if (now < spin_until) continue;
    pollfd pfd{cq_fd, POLLIN, 0};
    if (::poll(&pfd, 1, RemainingMs(std::min(deadline, wake))) > 0) {
      (void)rpma_cq_wait(cq_);
    }
  }
  Fail(Status::TimedOut("no reply from " + server_ + " within " +
                        std::to_string(options_.op_timeout.count()) + " ms"));
  return failure_;
}

Connection::~Connection() {
  if (conn_ != nullptr && failure_.ok() && accept_.admit == pr::Admit::kOk &&
      !free_send_.empty()) {
    // Hand the grant's tail back; the server disconnects after BYE.
    if (Send(pr::Type::kBye, 0, nullptr, 0).ok()) {
      std::vector<Event> events;
      const auto deadline = Clock::now() + std::chrono::milliseconds(200);
      while (!free_send_.empty() && free_send_.size() < send_slots_ &&
             Wait(deadline, &events).ok()) {
        events.clear();
      }
    }
  }
  if (conn_ != nullptr) {
    (void)rpma_conn_disconnect(conn_);
    (void)rpma_conn_delete(&conn_);
  }
  if (read_mr_ != nullptr) (void)rpma_mr_remote_delete(&read_mr_);
  if (write_mr_ != nullptr) (void)rpma_mr_remote_delete(&write_mr_);
  if (arena_mr_ != nullptr) (void)rpma_mr_dereg(&arena_mr_);
  if (msg_mr_ != nullptr) (void)rpma_mr_dereg(&msg_mr_);
  if (peer_ != nullptr) (void)rpma_peer_delete(&peer_);
}

}  // namespace kv
