#include "server.h"

#include <fcntl.h>
#include <librpma.h>
#include <poll.h>
#include <rpma_ext.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "kv/store/keyspace_sizing.h"
#include "log.h"

namespace kv::server {
namespace {

using Clock = std::chrono::steady_clock;

// Refused connections wait at most this long for ESTABLISHED/CLOSED
// before they are deleted, and at most this many wait at once (the
// oldest goes first): a flood of bad connects cannot pile up.
constexpr auto kClosingGrace = std::chrono::milliseconds(2000);
constexpr size_t kMaxClosing = 512;

int SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

Status RpmaStatus(const std::string& what, int rc) {
  return Status::Unavailable(what + ": " + rpma_err_2str(rc));
}

}  // namespace

Server::Server(const ServerOptions& options) : options_(options) {}

uint64_t MinPoolSizeFor(const ServerOptions& o) {
  return store::MinPoolSizeFor(o.index_capacity, o.segment_size);
}

Result<std::unique_ptr<Server>> Server::Open(const ServerOptions& options) {
  std::unique_ptr<Server> s(new Server(options));
  if (!options.access_keys_path.empty()) {
    Result<std::unique_ptr<AccessKeys>> keys =
        AccessKeys::Load(options.access_keys_path);
    if (!keys.ok()) return keys.status();
    s->keys_ = std::move(keys).value();
    Logf("access keys: %zu keyspaces need a key (%s)", s->keys_->size(),
         options.access_keys_path.c_str());
  }
  std::string peer_key;
  if (!options.peer_key_path.empty()) {
    Result<std::string> loaded = LoadPeerKey(options.peer_key_path);
    if (!loaded.ok()) return loaded.status();
    peer_key = std::move(loaded).value();
  }
  // The listen address first: a server whose port is taken must not
  // create (and leave behind) a pool file first. Requests that arrive
  // before Run() wait in the listener.
  KV_RETURN_IF_ERROR(s->OpenRpma());
  KV_RETURN_IF_ERROR(s->OpenPool());
  s->keyspaces_ = std::make_unique<KeyspaceTable>(
      s->pool_.get(), s->device_,
      CreateOptions{options.segment_size, options.index_capacity});
  s->session_stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->session_stop_fd_ < 0) return Status::IoError("eventfd failed");
  s->auth_delay_ = std::make_unique<AuthDelay>(
      options.auth_delay, options.auth_delay_max, s->session_stop_fd_);
  s->grant_quotas_ = std::make_unique<GrantQuotas>(options.grant_share_percent);
  s->tickets_ = std::make_unique<Tickets>(options.ticket_lifetime);
  s->refusal_log_ =
      std::make_unique<RefusalLog>(std::chrono::milliseconds(1000));
  s->admission_ = std::make_unique<Admission>(
      s->keyspaces_.get(), s->keys_.get(), options.allow_create,
      s->auth_delay_.get(), options.shards);
  const bool peers = !peer_key.empty();
  if (peers) {
    s->admission_->set_peer_key(std::move(peer_key));
    Logf("peer key: peer kvservers may write shard copies (%s)",
         options.peer_key_path.c_str());
  }
  Worker::Options wo;
  wo.spin_us = options.spin_us;
  wo.stats = &s->stats_;
  wo.peer = s->peer_;
  // With a peer key, one more worker drives the peer sessions alone (a
  // move's copy, a primary's forwarding to this node as its backup) and
  // the HELLO connections (a peer's begins with one). A
  // client worker may wait inside a commit for this node's backups; were
  // the peer sessions on the client workers, two nodes backing up each
  // other could each wait for the other's busy workers for ever.
  const uint32_t n = options.workers + (peers ? 1 : 0);
  for (uint32_t i = 0; i < n; i++) {
    Result<std::unique_ptr<Worker>> w = Worker::Start(static_cast<int>(i), wo);
    if (!w.ok()) return w.status();
    s->workers_.push_back(std::move(w).value());
  }
  s->client_workers_ = options.workers;
  s->cleaner_ = std::make_unique<CleanerPolicy>(s->keyspaces_.get(), &s->stats_,
                                                options.cleaner_threshold,
                                                std::chrono::milliseconds(200));
  return s;
}

Status Server::OpenPool() {
  const auto t0 = Clock::now();
  Result<std::unique_ptr<store::Pool>> pool =
      store::Pool::Open(options_.pool_path);
  const long long open_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0)
          .count();
  if (!pool.ok() && pool.status().IsNotFound()) {
    // The smallest pool is one that holds its default keyspace: checked
    // before a file is made, and a pool whose keyspace still fails is not
    // left behind (the next start would serve it with no keyspace).
    const uint64_t need = MinPoolSizeFor(options_);
    if (options_.pool_size < need) {
      return Status::InvalidArgument(
          "--pool_size=" + std::to_string(options_.pool_size >> 20) +
          "M cannot hold the default keyspace (" +
          std::to_string(store::kMinSegments) + " segments of " +
          std::to_string(options_.segment_size >> 10) +
          " KiB and an index for " + std::to_string(options_.index_capacity) +
          " keys, at most half the pool): use --pool_size=" +
          std::to_string((need + (1 << 20) - 1) >> 20) +
          "M or more, or a smaller --segment_size / --index_capacity");
    }
    pool = store::Pool::Create(options_.pool_path, options_.pool_size);
    if (!pool.ok()) return pool.status();
    // A cluster node's pool holds only the shards the map gives it.
    Status st =
        options_.shards != nullptr
            ? Status::Ok()
            : KeyspaceTable::CreateIn(pool->get(), "default",
                                      CreateOptions{options_.segment_size,
                                                    options_.index_capacity});
    if (!st.ok()) {
      pool->reset();
      unlink(options_.pool_path.c_str());
      return Status(st.code(), "creating keyspace 'default': " + st.message() +
                                   " (the new pool file was removed)");
    }
    Logf("created pool %s (%llu bytes)%s", options_.pool_path.c_str(),
         static_cast<unsigned long long>(options_.pool_size),
         options_.shards != nullptr ? " for cluster shards"
                                    : " with keyspace 'default'");
  } else if (!pool.ok()) {
    return pool.status();
  }
  pool_ = std::move(pool).value();
  store::PoolInfo info = pool_->Info();
  for (const std::string& note : info.recovery_notes) {
    Logf("recovery: %s", note.c_str());
  }
  if (!info.unclean_keyspaces.empty()) {
    std::string names;
    for (const std::string& n : info.unclean_keyspaces) {
      names += (names.empty() ? "'" : ", '") + n + "'";
    }
    // A commit is acknowledged only after its commit point: what recovery
    // clears was never acknowledged.
    Logf(
        "recovery: the pool was not closed cleanly (crash, power loss or "
        "kill -9): keyspace %s checked in %lld ms, %zu repairs (listed "
        "above; interrupted commits were never acknowledged)",
        names.c_str(), open_ms, info.recovery_notes.size());
  }
  Logf("pool %s: %u keyspaces, %s granularity, %llu bytes free",
       options_.pool_path.c_str(), info.keyspaces, info.granularity.c_str(),
       static_cast<unsigned long long>(info.free_bytes));
  return Status::Ok();
}

Status Server::OpenRpma() {
  const std::string& host = options_.listen.host;
  ibv_context* ctx = nullptr;
  int rc = rpma_utils_get_ibv_context(host.c_str(), RPMA_UTIL_IBV_CONTEXT_LOCAL,
                                      &ctx);
  if (rc) {
    return RpmaStatus("cannot listen on " + options_.listen.ToString() +
                          ": no RDMA device for " + host,
                      rc);
  }
  const char* dev = ctx->device != nullptr ? ctx->device->name : "";
  provider_ = std::strncmp(dev, "rpma_tcp", 8) == 0
                  ? "tcp"
                  : std::string("verbs (") + dev + ")";
  device_ = ctx;
  if ((rc = rpma_peer_new(ctx, &peer_))) return RpmaStatus("rpma_peer_new", rc);
  rc = rpma_ep_listen(peer_, host.c_str(), options_.listen.port.c_str(), &ep_);
  if (rc) {
    return RpmaStatus(
        "cannot listen on " + options_.listen.ToString() + " (address in use?)",
        rc);
  }
  int fd = -1;
  rpma_ep_get_fd(ep_, &fd);
  SetNonBlocking(fd);
  // Queue sizes for max_inflight receives, twice as many sends (a reply's
  // completion may lag the next request) and their completions.
  const uint32_t inflight = options_.max_inflight;
  rpma_conn_cfg_new(&cfg_);
  rpma_conn_cfg_set_rq_size(cfg_, inflight);
  rpma_conn_cfg_set_sq_size(cfg_, 2 * inflight + 1);
  rpma_conn_cfg_set_cq_size(cfg_, 3 * inflight + 2);
  return Status::Ok();
}

Server::~Server() { Shutdown(); }

Result<std::shared_ptr<store::Keyspace>> Server::LocalKeyspace(
    std::string_view name) {
  bool created = false;
  Result<OpenKeyspace*> ks = keyspaces_->Get(name, false, &created);
  if (!ks.ok()) return ks.status();
  return (*ks)->keyspace;
}

Status Server::EndShardSessions(std::string_view name,
                                std::chrono::milliseconds timeout) {
  bool created = false;
  Result<OpenKeyspace*> ks = keyspaces_->Get(name, false, &created);
  if (ks.status().IsNotFound()) return Status::Ok();
  if (!ks.ok()) return ks.status();
  const OpenKeyspace* open = *ks;
  for (const std::unique_ptr<Worker>& w : workers_) w->EndSessionsOf(open);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (open->sessions.load(std::memory_order_acquire) != 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::TimedOut(std::to_string(open->sessions.load()) +
                              " sessions of '" + std::string(name) +
                              "' still open after " +
                              std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return Status::Ok();
}

Status Server::DropShard(std::string_view name) {
  bool created = false;
  Result<OpenKeyspace*> ks = keyspaces_->Get(name, false, &created);
  if (ks.ok()) tickets_->Forget(*ks);
  return keyspaces_->DropShard(name);
}

void Server::Run(int stop_fd) {
  cleaner_->Start();
  Logf("ready on %s (provider %s, pool %s, %zu workers, max %u connections)",
       options_.listen.ToString().c_str(), provider_.c_str(),
       options_.pool_path.c_str(), workers_.size(), options_.max_connections);
  Logf(
      "limits: %u pending HELLOs (%lld ms), idle timeout %lld ms, %u "
      "REFILLs/s (burst %u) per connection, %u%% of a keyspace's segments "
      "granted at once, wrong-key delay %lld..%lld ms",
      options_.max_pending_hello,
      static_cast<long long>(options_.hello_timeout.count()),
      static_cast<long long>(options_.idle_timeout.count()),
      options_.refill_rate, options_.refill_burst, options_.grant_share_percent,
      static_cast<long long>(options_.auth_delay.count()),
      static_cast<long long>(options_.auth_delay_max.count()));
  int ep_fd = -1;
  rpma_ep_get_fd(ep_, &ep_fd);
  for (;;) {
    std::vector<pollfd> fds = {{ep_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    for (const Closing& c : closing_) {
      int fd = -1;
      rpma_conn_get_event_fd(c.conn, &fd);
      fds.push_back({fd, POLLIN, 0});
    }
    // Refused connections wait for their deadlines (ReapClosing); with
    // none the thread sleeps until a request or the stop: an idle server
    // costs no wake-up here.
    int n = poll(fds.data(), fds.size(), closing_.empty() ? -1 : 100);
    if (n < 0 && errno != EINTR) break;
    if (fds[1].revents) break;
    if (fds[0].revents) AcceptPending();
    ReapClosing(false);
  }
  Log("shutting down: no new connections; finishing sessions");
}

void Server::AcceptPending() {
  for (;;) {
    rpma_conn_req* req = nullptr;
    int rc = rpma_ep_next_conn_req(ep_, cfg_, &req);
    if (rc == RPMA_E_NO_EVENT) return;
    if (rc) {
      // A request that could not be set up (e.g. the peer vanished):
      // nothing to answer; keep serving.
      Logf("incoming connection failed: %s", rpma_err_2str(rc));
      if (rc != RPMA_E_INVAL) return;
      continue;
    }
    Admit(req);
  }
}

void Server::Admit(rpma_conn_req* req) {
  const uint64_t id = next_session_id_++;
  rpma_conn_private_data pd{};
  rpma_conn_req_get_private_data(req, &pd);
  ConnectRequest cr;
  Refusal r;
  if (!Admission::ParseConnect(pd.ptr, pd.len, &cr, &r)) {
    return Refuse(req, r, id);
  }
  const uint64_t active = stats_.connections_active.load();
  if (active >= options_.max_connections) {
    return Refuse(req,
                  {protocol::Admit::kTooManyConnections,
                   "server has " + std::to_string(active) +
                       " connections (--max_connections)"},
                  id);
  }
  // Connections that have not sent HELLO have their own small cap (like
  // sshd's MaxStartups): a flood of silent HELLO connects cannot fill
  // --max_connections; named connects keep getting in.
  const size_t pending_cap =
      std::min(options_.max_pending_hello, options_.max_connections);
  if (cr.hello()) {
    const size_t pending = pending_hellos_.load(std::memory_order_relaxed);
    if (pending >= pending_cap) {
      return Refuse(req,
                    {protocol::Admit::kTooManyConnections,
                     std::to_string(pending) +
                         " connections wait for HELLO (--max_pending_hello)"},
                    id);
    }
  }
  OpenKeyspace* ks = nullptr;
  bool peer_node = false;
  if (cr.ticket()) {
    ks = tickets_->Redeem(cr.connect.name, &peer_node);
    if (ks == nullptr) {
      return Refuse(req,
                    {protocol::Admit::kAccessDenied,
                     "admission ticket unknown, used or expired: send HELLO "
                     "again"},
                    id);
    }
  } else if (!cr.hello()) {
    ks = admission_->Resolve(cr.connect.name, cr.create(), std::nullopt, &r);
    if (ks == nullptr) return Refuse(req, r, id);
  }
  if (ks != nullptr) {
    // The connection is made in the keyspace's protection domain: its
    // one-sided operations can reach that keyspace's registrations and
    // nothing else (before any receive is posted: they could not move).
    int rc = rpma_conn_req_set_peer(req, ks->peer);
    if (rc) {
      Logf("connection %llu refused: moving it to keyspace '%s': %s",
           static_cast<unsigned long long>(id), ks->keyspace->name().c_str(),
           rpma_err_2str(rc));
      Stats::Add(stats_.refusals);
      (void)rpma_conn_req_delete(&req);
      return;
    }
  }
  SessionEnv env;
  env.peer = ks != nullptr ? ks->peer : peer_;
  env.tickets = tickets_.get();
  env.refusal_log = refusal_log_.get();
  env.info_all_keyspaces = options_.info_all_keyspaces;
  env.admission = admission_.get();
  env.keyspaces = keyspaces_.get();
  env.stats = &stats_;
  env.pending_hellos = &pending_hellos_;
  env.max_inflight = options_.max_inflight;
  env.hello_timeout = options_.hello_timeout;
  env.idle_timeout = options_.idle_timeout;
  env.grant_quotas = grant_quotas_.get();
  env.refill_rate = options_.refill_rate;
  env.refill_burst = options_.refill_burst;
  env.provider = provider_;
  env.group_commit = options_.group_commit;
  env.shards = options_.shards;
  Result<std::unique_ptr<Session>> made = Session::Create(env, id);
  if (!made.ok()) {
    return Refuse(req, {protocol::Admit::kServerError, made.status().message()},
                  id);
  }
  std::unique_ptr<Session> session = std::move(made).value();
  if (ks != nullptr && !session->Bind(ks, &r, peer_node)) {
    return Refuse(req, r, id);
  }
  // The worker with the fewest sessions drives it from now on: the
  // connection joins its group before anything is posted (the queue pair
  // is recreated on the group's completion channel).
  Worker* w = workers_.front().get();
  for (size_t i = 0; i < client_workers_; i++) {
    if (workers_[i]->sessions() < w->sessions()) w = workers_[i].get();
  }
  // Peer sessions, and the HELLO connections one of them may begin with,
  // on the peer worker (a HELLO connection only says HELLO and goes).
  if ((peer_node || cr.hello()) && workers_.size() > client_workers_) {
    w = workers_.back().get();
  }
  int grc = rpma_conn_req_set_group(req, w->group());
  if (grc) {
    Logf("connection %llu refused: joining a worker's group: %s",
         static_cast<unsigned long long>(id), rpma_err_2str(grc));
    Stats::Add(stats_.refusals);
    (void)rpma_conn_req_delete(&req);
    return;
  }
  Status st = session->PostReceives(req);
  if (!st.ok()) {
    // Receives already posted point into the session's buffers, which die
    // with `session` at return: accepting (even to refuse) would let the
    // client's next message land in freed memory. Reject outright.
    Logf("connection %llu refused: %s", static_cast<unsigned long long>(id),
         st.message().c_str());
    Stats::Add(stats_.refusals);
    (void)rpma_conn_req_delete(&req);
    return;
  }
  uint8_t pdata[protocol::kAcceptSize];
  protocol::EncodeAccept(session->AcceptData(), pdata);
  rpma_conn_private_data out{pdata, static_cast<uint8_t>(sizeof(pdata))};
  rpma_conn* conn = nullptr;
  // Counted before the accept: the client may send INFO the moment it is
  // established, and its worker answers before this thread goes on.
  stats_.connections_active.fetch_add(1);
  int rc = rpma_conn_req_connect(&req, &out, &conn);
  if (rc) {
    // The request is consumed; the session's grant is sealed with it.
    stats_.connections_active.fetch_sub(1);
    Logf("session %llu: accepting failed: %s",
         static_cast<unsigned long long>(id), rpma_err_2str(rc));
    return;
  }
  session->Attach(conn);
  Stats::Add(stats_.connections_total);
  if (cr.hello()) {
    Logf("session %llu: connected, waiting for HELLO",
         static_cast<unsigned long long>(id));
  } else {
    // ks, not the connect's name: a ticket connect's name is the ticket.
    Logf("session %llu admitted%s: keyspace '%s'",
         static_cast<unsigned long long>(id), cr.ticket() ? " by ticket" : "",
         ks->keyspace->name().c_str());
  }
  w->Adopt(std::move(session));
}

void Server::Refuse(rpma_conn_req* req, const Refusal& r, uint64_t id) {
  Stats::Add(stats_.refusals);
  Logf("connection %llu refused: %s: %s", static_cast<unsigned long long>(id),
       std::string(protocol::AdmitName(r.admit)).c_str(), r.reason.c_str());
  uint8_t pdata[protocol::kAcceptSize];
  protocol::EncodeAccept(RefusalAccept(r, id), pdata);
  rpma_conn_private_data out{pdata, static_cast<uint8_t>(sizeof(pdata))};
  rpma_conn* conn = nullptr;
  if (rpma_conn_req_connect(&req, &out, &conn) != 0) return;
  if (closing_.size() >= kMaxClosing) {
    rpma_conn_delete(&closing_.front().conn);
    closing_.erase(closing_.begin());
  }
  int fd = -1;
  rpma_conn_get_event_fd(conn, &fd);
  SetNonBlocking(fd);
  closing_.push_back(Closing{conn, Clock::now() + kClosingGrace, false});
}

void Server::ReapClosing(bool all) {
  const auto now = Clock::now();
  for (size_t i = 0; i < closing_.size();) {
    Closing& c = closing_[i];
    bool gone = all || now >= c.deadline;
    rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    while (!gone && rpma_conn_next_event(c.conn, &ev) == 0) {
      if (ev == RPMA_CONN_ESTABLISHED && !c.disconnected) {
        // The refusal's private data has reached the client: hang up.
        rpma_conn_disconnect(c.conn);
        c.disconnected = true;
      } else if (ev == RPMA_CONN_CLOSED || ev == RPMA_CONN_LOST) {
        gone = true;
      }
    }
    if (gone) {
      if (!c.disconnected) rpma_conn_disconnect(c.conn);
      rpma_conn_delete(&c.conn);
      closing_.erase(closing_.begin() + static_cast<long>(i));
    } else {
      i++;
    }
  }
}

void Server::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // 1. No new connections.
  if (ep_ != nullptr) rpma_ep_shutdown(&ep_);
  // 2. Every session handles what it has received, returns its grant and
  //    disconnects; the workers end.
  if (session_stop_fd_ >= 0) {
    uint64_t one = 1;
    (void)!write(session_stop_fd_, &one, sizeof(one));
  }
  size_t n = 0;
  for (const std::unique_ptr<Worker>& w : workers_) n += w->sessions();
  for (const std::unique_ptr<Worker>& w : workers_) w->Stop();
  workers_.clear();
  if (refusal_log_ != nullptr) refusal_log_->Flush();  // the last summary
  ReapClosing(true);
  if (n != 0) Logf("shutdown: %zu sessions closed", n);
  // 3. The cleaner (it may be mid-run: Stop waits).
  if (cleaner_ != nullptr) cleaner_->Stop();
  // 4. Read regions, then the peer they were registered with.
  if (keyspaces_ != nullptr) keyspaces_->Close();
  if (cfg_ != nullptr) rpma_conn_cfg_delete(&cfg_);
  if (peer_ != nullptr) rpma_peer_delete(&peer_);
  // 5. The pool: keyspace handles first, then the pool itself (persists
  //    the index and marks every keyspace cleanly closed).
  admission_.reset();
  keyspaces_.reset();
  if (pool_ != nullptr) {
    pool_.reset();
    Log("pool closed cleanly");
  }
  if (session_stop_fd_ >= 0) close(session_stop_fd_);
  session_stop_fd_ = -1;
}

}  // namespace kv::server
