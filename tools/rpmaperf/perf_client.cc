#include "perf_client.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace rpmaperf {
namespace {

// Everything one benchmark connection holds; released in reverse order.
struct Session {
  struct rpma_peer* peer = nullptr;
  struct rpma_mr_local* mr = nullptr;
  struct rpma_conn* conn = nullptr;
  struct rpma_mr_remote* remote = nullptr;
  struct rpma_cq* cq = nullptr;
  void* buf = nullptr;
  bool established = false;
  ~Session() {
    if (conn != nullptr) {
      (void)rpma_conn_disconnect(conn);
      // CLOSED follows only a connection that was made (bounded by the
      // peer); a rejected or unreachable one has none coming.
      enum rpma_conn_event ev;
      if (established) (void)rpma_conn_next_event(conn, &ev);
      (void)rpma_conn_delete(&conn);
    }
    (void)rpma_mr_remote_delete(&remote);
    (void)rpma_mr_dereg(&mr);
    (void)rpma_peer_delete(&peer);
    std::free(buf);
  }
};

int Connect(const ClientOptions& o, Session* s) {
  struct ibv_context* ctx = nullptr;
  RPMAPERF_TRY(rpma_utils_get_ibv_context(o.addr.c_str(),
                                          RPMA_UTIL_IBV_CONTEXT_REMOTE, &ctx));
  RPMAPERF_TRY(rpma_peer_new(ctx, &s->peer));
  size_t len = 2 * size_t{o.qd} * o.size;
  s->buf = std::aligned_alloc(4096, (len + 4095) / 4096 * 4096);
  if (s->buf == nullptr) return RPMA_E_NOMEM;
  std::memset(s->buf, 0xab, len);
  RPMAPERF_TRY(rpma_mr_reg(s->peer, s->buf, len,
                           RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC |
                               RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV,
                           &s->mr));
  struct rpma_conn_cfg* cfg = nullptr;
  RPMAPERF_TRY(rpma_conn_cfg_new(&cfg));
  (void)rpma_conn_cfg_set_sq_size(cfg, 2 * o.qd + 8);
  (void)rpma_conn_cfg_set_rq_size(cfg, o.qd + 8);
  (void)rpma_conn_cfg_set_cq_size(cfg, 3 * o.qd + 8);
  struct rpma_conn_req* req = nullptr;
  int rc =
      rpma_conn_req_new(s->peer, o.addr.c_str(), o.port.c_str(), cfg, &req);
  (void)rpma_conn_cfg_delete(&cfg);
  if (rc < 0) return Report("rpma_conn_req_new", rc);
  Hello hello{kMagic, static_cast<uint8_t>(o.op), {}, o.size, o.qd};
  struct rpma_conn_private_data pd = {&hello, sizeof(hello)};
  RPMAPERF_TRY(rpma_conn_req_connect(&req, &pd, &s->conn));
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  RPMAPERF_TRY(rpma_conn_next_event(s->conn, &ev));
  if (ev != RPMA_CONN_ESTABLISHED) {
    std::fprintf(stderr,
                 "rpmaperf: cannot connect to %s:%s: %s — is rpmaperf "
                 "--mode=server running there?\n",
                 o.addr.c_str(), o.port.c_str(),
                 rpma_utils_conn_event_2str(ev));
    return 1;
  }
  s->established = true;
  struct rpma_conn_private_data in {};
  RPMAPERF_TRY(rpma_conn_get_private_data(s->conn, &in));
  Reply reply{};
  if (in.ptr == nullptr || in.len < sizeof(Reply)) {
    std::fprintf(stderr, "rpmaperf: server sent no region descriptor\n");
    return 1;
  }
  std::memcpy(&reply, in.ptr, sizeof(reply));
  RPMAPERF_TRY(rpma_mr_remote_from_descriptor(reply.mr_desc, reply.mr_desc_size,
                                              &s->remote));
  struct rpma_peer_cfg* pcfg = nullptr;
  RPMAPERF_TRY(rpma_peer_cfg_from_descriptor(reply.pcfg_desc,
                                             reply.pcfg_desc_size, &pcfg));
  rc = rpma_conn_apply_remote_peer_cfg(s->conn, pcfg);
  (void)rpma_peer_cfg_delete(&pcfg);
  if (rc < 0) return Report("rpma_conn_apply_remote_peer_cfg", rc);
  RPMAPERF_TRY(rpma_conn_get_cq(s->conn, &s->cq));
  return 0;
}

// Posts the work requests of one operation in `slot`.
int Post(const ClientOptions& o, Session* s, uint32_t slot) {
  const size_t off = size_t{slot} * o.size;
  const int always = RPMA_F_COMPLETION_ALWAYS;
  switch (o.op) {
    case Op::kRead:
      return rpma_read(s->conn, s->mr, off, s->remote, off, o.size, always,
                       Tag(slot, true));
    case Op::kWrite:
      return rpma_write(s->conn, s->remote, off, s->mr, off, o.size, always,
                        Tag(slot, true));
    case Op::kFlush: {  // a durable write: write + persistent flush
      int rc = rpma_write(s->conn, s->remote, off, s->mr, off, o.size,
                          RPMA_F_COMPLETION_ON_ERROR, Tag(slot, false));
      if (rc < 0) return rc;
      return rpma_flush(s->conn, s->remote, off, o.size,
                        RPMA_FLUSH_TYPE_PERSISTENT, always, Tag(slot, true));
    }
    case Op::kAtomic: {
      char value[8];
      std::memcpy(value, &slot, sizeof(slot));
      std::memset(value + 4, 0, 4);
      return rpma_atomic_write(s->conn, s->remote, size_t{slot} * 8, value,
                               always, Tag(slot, true));
    }
    case Op::kSend: {  // ping-pong: the server's echo ends the op
      const size_t reply = (size_t{o.qd} + slot) * o.size;
      int rc = rpma_recv(s->conn, s->mr, reply, o.size, Tag(slot, true));
      if (rc < 0) return rc;
      return rpma_send(s->conn, s->mr, off, o.size, always, Tag(slot, false));
    }
  }
  return RPMA_E_INVAL;
}

}  // namespace

int RunClient(const ClientOptions& o, Summary* summary) {
  Session s;
  int rc = Connect(o, &s);
  if (rc != 0) return rc;
  const uint64_t bytes = o.op == Op::kAtomic ? 8 : o.size;
  std::vector<uint64_t> started(o.qd);
  LatencyStats stats(static_cast<size_t>(o.seconds * 1e6));
  const uint64_t t0 = NowNanos();
  const uint64_t measure_from =
      t0 + static_cast<uint64_t>(o.warmup_seconds * 1e9);
  const uint64_t stop_at =
      measure_from + static_cast<uint64_t>(o.seconds * 1e9);
  for (uint32_t i = 0; i < o.qd; i++) {
    started[i] = NowNanos();
    RPMAPERF_TRY(Post(o, &s, i));
  }
  uint32_t in_flight = o.qd;
  std::vector<ibv_wc> wc(64);
  while (in_flight > 0) {
    int got = 0;
    RPMAPERF_TRY(NextCompletions(s.cq, o.busy_poll, wc.data(),
                                 static_cast<int>(wc.size()), &got));
    const uint64_t now = NowNanos();
    for (int i = 0; i < got; i++) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "rpmaperf: completion error: %s\n",
                     ibv_wc_status_str(wc[i].status));
        return 1;
      }
      if (!TagEndsOp(wc[i].wr_id)) continue;
      uint32_t slot = TagSlot(wc[i].wr_id);
      if (now >= measure_from && now < stop_at) stats.Add(now - started[slot]);
      if (now >= stop_at) {
        in_flight--;
        continue;
      }
      started[slot] = now;
      RPMAPERF_TRY(Post(o, &s, slot));
    }
  }
  *summary = stats.Summarize(o.seconds, bytes);
  return 0;
}

}  // namespace rpmaperf
