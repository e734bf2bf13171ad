#include "perf_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "perf_common.h"

namespace rpmaperf {
namespace {

// The region clients read/write/flush; anonymous memory or a file mapping.
struct Region {
  void* ptr = nullptr;
  size_t size = 0;
  ~Region() {
    if (ptr != nullptr) munmap(ptr, size);
  }
};

int MapRegion(const ServerOptions& o, Region* r) {
  r->size = o.region_size;
  int fd = -1;
  int flags = MAP_SHARED | MAP_ANONYMOUS;
  if (!o.pmem_file.empty()) {
    fd = open(o.pmem_file.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(r->size)) != 0) {
      std::perror(o.pmem_file.c_str());
      if (fd >= 0) close(fd);
      return -1;
    }
    flags = MAP_SHARED;
  }
  void* p = mmap(nullptr, r->size, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (fd >= 0) close(fd);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    return -1;
  }
  r->ptr = p;
  return 0;
}

// Serves one accepted connection until the client disconnects. For
// --op=send, every received message is echoed back (ping-pong).
int ServeConnection(struct rpma_conn* conn, struct rpma_mr_local* mr,
                    const Hello& hello, bool busy) {
  struct rpma_cq* cq = nullptr;
  RPMAPERF_TRY(rpma_conn_get_cq(conn, &cq));
  int evfd = -1, cqfd = -1;
  RPMAPERF_TRY(rpma_conn_get_event_fd(conn, &evfd));
  RPMAPERF_TRY(rpma_cq_get_fd(cq, &cqfd));
  fcntl(evfd, F_SETFL, fcntl(evfd, F_GETFL) | O_NONBLOCK);
  fcntl(cqfd, F_SETFL, fcntl(cqfd, F_GETFL) | O_NONBLOCK);
  const bool echo = hello.op == static_cast<uint8_t>(Op::kSend);
  std::vector<ibv_wc> wc(32);
  for (uint64_t spins = 0;; spins++) {
    if (!busy || (spins & 1023) == 0) {
      enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
      int rc = rpma_conn_next_event(conn, &ev);
      if (rc == 0 && ev != RPMA_CONN_ESTABLISHED) return 0;  // closed/lost
      if (rc < 0 && rc != RPMA_E_NO_EVENT) return Report("next_event", rc);
    }
    if (!echo) {
      struct pollfd p = {evfd, POLLIN, 0};
      poll(&p, 1, -1);
      continue;
    }
    int got = 0;
    int rc = rpma_cq_get_wc(cq, static_cast<int>(wc.size()), wc.data(), &got);
    if (rc == RPMA_E_NO_COMPLETION) {
      if (busy) {
        sched_yield();  // leave the core to the progress engine when idle
        continue;
      }
      struct pollfd p[2] = {{evfd, POLLIN, 0}, {cqfd, POLLIN, 0}};
      poll(p, 2, -1);
      if (p[1].revents & POLLIN) {
        rc = rpma_cq_wait(cq);
        if (rc < 0 && rc != RPMA_E_NO_COMPLETION) return Report("wait", rc);
      }
      continue;
    }
    if (rc < 0) return Report("rpma_cq_get_wc", rc);
    for (int i = 0; i < got; i++) {
      if (wc[i].status != IBV_WC_SUCCESS) return 0;  // flushed at teardown
      if (wc[i].opcode != IBV_WC_RECV) continue;     // our own echo sends
      uint32_t slot = TagSlot(wc[i].wr_id);
      size_t in = size_t{slot} * hello.size;
      size_t out = (size_t{hello.qd} + slot) * hello.size;
      RPMAPERF_TRY(
          rpma_recv(conn, mr, in, hello.size, Tag(slot, /*ends_op=*/true)));
      RPMAPERF_TRY(rpma_send(conn, mr, out, hello.size,
                             RPMA_F_COMPLETION_ALWAYS, Tag(slot, false)));
    }
  }
}

}  // namespace

int RunServer(const ServerOptions& o) {
  Region region;
  if (MapRegion(o, &region) != 0) return 1;
  struct ibv_context* ctx = nullptr;
  struct rpma_peer* peer = nullptr;
  struct rpma_mr_local* mr = nullptr;
  struct rpma_ep* ep = nullptr;
  struct rpma_peer_cfg* pcfg = nullptr;
  struct rpma_conn_cfg* ccfg = nullptr;
  RPMAPERF_TRY(rpma_utils_get_ibv_context(o.addr.c_str(),
                                          RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx));
  RPMAPERF_TRY(rpma_peer_new(ctx, &peer));
  RPMAPERF_TRY(rpma_mr_reg(peer, region.ptr, region.size,
                           RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_WRITE_DST |
                               RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT |
                               RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY |
                               RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV,
                           &mr));
  // The region is durable on flush (msync of a file mapping); tell clients
  // they may use RPMA_FLUSH_TYPE_PERSISTENT.
  RPMAPERF_TRY(rpma_peer_cfg_new(&pcfg));
  RPMAPERF_TRY(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true));
  RPMAPERF_TRY(rpma_conn_cfg_new(&ccfg));
  const uint32_t q = 2 * kMaxQd + 16;
  RPMAPERF_TRY(rpma_conn_cfg_set_sq_size(ccfg, q));
  RPMAPERF_TRY(rpma_conn_cfg_set_rq_size(ccfg, q));
  RPMAPERF_TRY(rpma_conn_cfg_set_cq_size(ccfg, 2 * q));
  RPMAPERF_TRY(rpma_ep_listen(peer, o.addr.c_str(), o.port.c_str(), &ep));
  std::fprintf(stderr, "rpmaperf: serving %zu MiB on %s:%s\n",
               region.size >> 20, o.addr.c_str(), o.port.c_str());

  Reply reply{};
  reply.magic = kMagic;
  size_t mr_size = 0, pcfg_size = 0;
  RPMAPERF_TRY(rpma_mr_get_descriptor_size(mr, &mr_size));
  RPMAPERF_TRY(rpma_peer_cfg_get_descriptor_size(pcfg, &pcfg_size));
  if (mr_size > sizeof(reply.mr_desc) || pcfg_size > sizeof(reply.pcfg_desc))
    return Report("descriptor too large", RPMA_E_UNKNOWN);
  reply.mr_desc_size = static_cast<uint8_t>(mr_size);
  reply.pcfg_desc_size = static_cast<uint8_t>(pcfg_size);
  RPMAPERF_TRY(rpma_mr_get_descriptor(mr, reply.mr_desc));
  RPMAPERF_TRY(rpma_peer_cfg_get_descriptor(pcfg, reply.pcfg_desc));

  for (int served = 0; o.max_clients == 0 || served < o.max_clients;) {
    struct rpma_conn_req* req = nullptr;
    RPMAPERF_TRY(rpma_ep_next_conn_req(ep, ccfg, &req));
    struct rpma_conn_private_data in {};
    Hello hello{};
    if (rpma_conn_req_get_private_data(req, &in) == 0 && in.ptr != nullptr &&
        in.len >= sizeof(Hello)) {
      std::memcpy(&hello, in.ptr, sizeof(hello));
    }
    size_t need = 2 * size_t{hello.qd} * hello.size;
    if (hello.magic != kMagic || hello.qd == 0 || hello.qd > kMaxQd ||
        hello.size == 0 || hello.size > kMaxSize || need > region.size) {
      std::fprintf(stderr, "rpmaperf: rejecting a client (bad hello)\n");
      (void)rpma_conn_req_delete(&req);  // rejects
      continue;
    }
    if (hello.op == static_cast<uint8_t>(Op::kSend)) {
      for (uint32_t s = 0; s < hello.qd; s++) {
        RPMAPERF_TRY(rpma_conn_req_recv(req, mr, size_t{s} * hello.size,
                                        hello.size, Tag(s, true)));
      }
    }
    struct rpma_conn_private_data out = {&reply, sizeof(reply)};
    struct rpma_conn* conn = nullptr;
    RPMAPERF_TRY(rpma_conn_req_connect(&req, &out, &conn));
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    int rc = rpma_conn_next_event(conn, &ev);
    if (rc == 0 && ev == RPMA_CONN_ESTABLISHED) {
      served++;
      rc = ServeConnection(conn, mr, hello, o.busy_poll);
    }
    (void)rpma_conn_disconnect(conn);
    (void)rpma_conn_delete(&conn);
  }
  (void)rpma_ep_shutdown(&ep);
  (void)rpma_conn_cfg_delete(&ccfg);
  (void)rpma_peer_cfg_delete(&pcfg);
  (void)rpma_mr_dereg(&mr);
  (void)rpma_peer_delete(&peer);
  return 0;
}

}  // namespace rpmaperf
