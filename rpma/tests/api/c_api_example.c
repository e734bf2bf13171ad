/*
 * c_api_example.c -- a C program written for librpma: it must compile
 * unchanged against rpma/include/librpma.h (as C11), link -lrpma and run.
 *
 * Usage: c_api_example [addr port]
 * Forks: the child is a server that accepts with private data and exposes
 * a memory region; the parent connects with private data, writes, flushes,
 * reads back, and disconnects. Both check CLOSED. Exit 0 on success.
 */
#define _POSIX_C_SOURCE 200809L
#include <librpma.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KILOBYTE 1024
#define CHECK(expr)                                                 \
  do {                                                              \
    int ret_ = (expr);                                              \
    if (ret_ != 0) {                                                \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
              rpma_err_2str(ret_));                                 \
      exit(1);                                                      \
    }                                                               \
  } while (0)

/* the address of every function, so a missing declaration fails to build */
static const void* const api[] = {
    (const void*)rpma_atomic_write,
    (const void*)rpma_conn_apply_remote_peer_cfg,
    (const void*)rpma_conn_cfg_delete,
    (const void*)rpma_conn_cfg_get_compl_channel,
    (const void*)rpma_conn_cfg_get_cq_size,
    (const void*)rpma_conn_cfg_get_rcq_size,
    (const void*)rpma_conn_cfg_get_rq_size,
    (const void*)rpma_conn_cfg_get_sq_size,
    (const void*)rpma_conn_cfg_get_srq,
    (const void*)rpma_conn_cfg_get_timeout,
    (const void*)rpma_conn_cfg_new,
    (const void*)rpma_conn_cfg_set_compl_channel,
    (const void*)rpma_conn_cfg_set_cq_size,
    (const void*)rpma_conn_cfg_set_rcq_size,
    (const void*)rpma_conn_cfg_set_rq_size,
    (const void*)rpma_conn_cfg_set_sq_size,
    (const void*)rpma_conn_cfg_set_srq,
    (const void*)rpma_conn_cfg_set_timeout,
    (const void*)rpma_conn_delete,
    (const void*)rpma_conn_disconnect,
    (const void*)rpma_conn_get_compl_fd,
    (const void*)rpma_conn_get_cq,
    (const void*)rpma_conn_get_event_fd,
    (const void*)rpma_conn_get_private_data,
    (const void*)rpma_conn_get_qp_num,
    (const void*)rpma_conn_get_rcq,
    (const void*)rpma_conn_next_event,
    (const void*)rpma_conn_req_connect,
    (const void*)rpma_conn_req_delete,
    (const void*)rpma_conn_req_get_private_data,
    (const void*)rpma_conn_req_new,
    (const void*)rpma_conn_req_recv,
    (const void*)rpma_conn_wait,
    (const void*)rpma_cq_get_fd,
    (const void*)rpma_cq_get_wc,
    (const void*)rpma_cq_wait,
    (const void*)rpma_ep_get_fd,
    (const void*)rpma_ep_listen,
    (const void*)rpma_ep_next_conn_req,
    (const void*)rpma_ep_shutdown,
    (const void*)rpma_err_2str,
    (const void*)rpma_flush,
    (const void*)rpma_log_get_threshold,
    (const void*)rpma_log_set_function,
    (const void*)rpma_log_set_threshold,
    (const void*)rpma_mr_advise,
    (const void*)rpma_mr_dereg,
    (const void*)rpma_mr_get_descriptor,
    (const void*)rpma_mr_get_descriptor_size,
    (const void*)rpma_mr_get_ptr,
    (const void*)rpma_mr_get_size,
    (const void*)rpma_mr_reg,
    (const void*)rpma_mr_remote_delete,
    (const void*)rpma_mr_remote_from_descriptor,
    (const void*)rpma_mr_remote_get_flush_type,
    (const void*)rpma_mr_remote_get_size,
    (const void*)rpma_peer_cfg_delete,
    (const void*)rpma_peer_cfg_from_descriptor,
    (const void*)rpma_peer_cfg_get_descriptor,
    (const void*)rpma_peer_cfg_get_descriptor_size,
    (const void*)rpma_peer_cfg_get_direct_write_to_pmem,
    (const void*)rpma_peer_cfg_new,
    (const void*)rpma_peer_cfg_set_direct_write_to_pmem,
    (const void*)rpma_peer_delete,
    (const void*)rpma_peer_new,
    (const void*)rpma_read,
    (const void*)rpma_recv,
    (const void*)rpma_send,
    (const void*)rpma_send_with_imm,
    (const void*)rpma_srq_cfg_delete,
    (const void*)rpma_srq_cfg_get_rcq_size,
    (const void*)rpma_srq_cfg_get_rq_size,
    (const void*)rpma_srq_cfg_new,
    (const void*)rpma_srq_cfg_set_rcq_size,
    (const void*)rpma_srq_cfg_set_rq_size,
    (const void*)rpma_srq_delete,
    (const void*)rpma_srq_get_rcq,
    (const void*)rpma_srq_new,
    (const void*)rpma_srq_recv,
    (const void*)rpma_utils_conn_event_2str,
    (const void*)rpma_utils_get_ibv_context,
    (const void*)rpma_utils_ibv_context_is_odp_capable,
    (const void*)rpma_write,
    (const void*)rpma_write_with_imm,
};

/* server's private data: the descriptor of its region */
struct common_data {
  uint8_t mr_desc_size;
  uint8_t pcfg_desc_size;
  char descriptors[24];
};

static void wait_event(struct rpma_conn* conn, enum rpma_conn_event expected) {
  int fd;
  CHECK(rpma_conn_get_event_fd(conn, &fd));
  struct pollfd pfd = {fd, POLLIN, 0};
  if (poll(&pfd, 1, 10000) != 1) {
    fprintf(stderr, "no connection event within 10 s\n");
    exit(1);
  }
  enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
  CHECK(rpma_conn_next_event(conn, &event));
  if (event != expected) {
    fprintf(stderr, "got %s, expected %s\n", rpma_utils_conn_event_2str(event),
            rpma_utils_conn_event_2str(expected));
    exit(1);
  }
}

static int wait_completion(struct rpma_cq* cq, enum ibv_wc_opcode opcode) {
  struct ibv_wc wc;
  CHECK(rpma_cq_wait(cq));
  int ret = rpma_cq_get_wc(cq, 1, &wc, NULL);
  if (ret == RPMA_E_NO_COMPLETION) { /* a spurious wakeup: wait again */
    CHECK(rpma_cq_wait(cq));
    ret = rpma_cq_get_wc(cq, 1, &wc, NULL);
  }
  CHECK(ret);
  if (wc.status != IBV_WC_SUCCESS || wc.opcode != opcode) {
    fprintf(stderr, "completion: %s, opcode %d\n", ibv_wc_status_str(wc.status),
            (int)wc.opcode);
    exit(1);
  }
  return 0;
}

static int server(const char* addr, const char* port, int ready_fd) {
  struct ibv_context* ibv_ctx = NULL;
  struct rpma_peer* peer = NULL;
  struct rpma_ep* ep = NULL;
  struct rpma_conn_req* req = NULL;
  struct rpma_conn* conn = NULL;
  struct rpma_mr_local* mr = NULL;
  struct rpma_peer_cfg* pcfg = NULL;
  char* mem = calloc(1, KILOBYTE);

  CHECK(
      rpma_utils_get_ibv_context(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ibv_ctx));
  CHECK(rpma_peer_new(ibv_ctx, &peer));
  CHECK(rpma_mr_reg(peer, mem, KILOBYTE,
                    RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
                        RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT,
                    &mr));
  CHECK(rpma_peer_cfg_new(&pcfg));
  CHECK(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true));

  struct common_data data = {0};
  size_t mr_size, pcfg_size;
  CHECK(rpma_mr_get_descriptor_size(mr, &mr_size));
  CHECK(rpma_peer_cfg_get_descriptor_size(pcfg, &pcfg_size));
  data.mr_desc_size = (uint8_t)mr_size;
  data.pcfg_desc_size = (uint8_t)pcfg_size;
  CHECK(rpma_mr_get_descriptor(mr, &data.descriptors[0]));
  CHECK(rpma_peer_cfg_get_descriptor(pcfg, &data.descriptors[mr_size]));

  CHECK(rpma_ep_listen(peer, addr, port, &ep));
  if (write(ready_fd, "r", 1) != 1) return 1;
  CHECK(rpma_ep_next_conn_req(ep, NULL, &req));

  struct rpma_conn_private_data pdata;
  CHECK(rpma_conn_req_get_private_data(req, &pdata));
  /* at least what was sent: a NIC delivers the whole field, zero-padded */
  if (pdata.len < 6 || memcmp(pdata.ptr, "hello", 6) != 0) {
    fprintf(stderr, "server: unexpected client private data\n");
    return 1;
  }
  struct rpma_conn_private_data reply = {&data, sizeof(data)};
  CHECK(rpma_conn_req_connect(&req, &reply, &conn));
  wait_event(conn, RPMA_CONN_ESTABLISHED);
  CHECK(rpma_conn_get_private_data(conn, &pdata));
  if (pdata.len < 6) return 1;

  /* the client writes, flushes and disconnects */
  wait_event(conn, RPMA_CONN_CLOSED);
  if (strcmp(mem, "written by the client") != 0) {
    fprintf(stderr, "server: memory holds '%s'\n", mem);
    return 1;
  }
  CHECK(rpma_conn_disconnect(conn));
  CHECK(rpma_conn_delete(&conn));
  CHECK(rpma_ep_shutdown(&ep));
  CHECK(rpma_mr_dereg(&mr));
  CHECK(rpma_peer_cfg_delete(&pcfg));
  CHECK(rpma_peer_delete(&peer));
  free(mem);
  return 0;
}

static int client(const char* addr, const char* port) {
  struct ibv_context* ibv_ctx = NULL;
  struct rpma_peer* peer = NULL;
  struct rpma_conn_req* req = NULL;
  struct rpma_conn* conn = NULL;
  struct rpma_mr_local* mr = NULL;
  struct rpma_mr_remote* remote = NULL;
  struct rpma_peer_cfg* pcfg = NULL;
  struct rpma_cq* cq = NULL;
  char* mem = calloc(1, KILOBYTE);

  CHECK(
      rpma_utils_get_ibv_context(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &ibv_ctx));
  CHECK(rpma_peer_new(ibv_ctx, &peer));
  CHECK(rpma_mr_reg(peer, mem, KILOBYTE,
                    RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST, &mr));
  CHECK(rpma_conn_req_new(peer, addr, port, NULL, &req));
  struct rpma_conn_private_data hello = {"hello", 6};
  CHECK(rpma_conn_req_connect(&req, &hello, &conn));
  wait_event(conn, RPMA_CONN_ESTABLISHED);

  struct rpma_conn_private_data pdata;
  CHECK(rpma_conn_get_private_data(conn, &pdata));
  if (pdata.len < sizeof(struct common_data)) return 1;
  struct common_data* data = pdata.ptr;
  CHECK(rpma_mr_remote_from_descriptor(&data->descriptors[0],
                                       data->mr_desc_size, &remote));
  CHECK(rpma_peer_cfg_from_descriptor(&data->descriptors[data->mr_desc_size],
                                      data->pcfg_desc_size, &pcfg));
  CHECK(rpma_conn_apply_remote_peer_cfg(conn, pcfg));
  CHECK(rpma_conn_get_cq(conn, &cq));

  strcpy(mem, "written by the client");
  CHECK(rpma_write(conn, remote, 0, mr, 0, KILOBYTE / 2,
                   RPMA_F_COMPLETION_ON_ERROR, NULL));
  CHECK(rpma_flush(conn, remote, 0, KILOBYTE / 2, RPMA_FLUSH_TYPE_PERSISTENT,
                   RPMA_F_COMPLETION_ALWAYS, NULL));
  wait_completion(cq, IBV_WC_RDMA_READ);
  CHECK(rpma_read(conn, mr, KILOBYTE / 2, remote, 0, 32,
                  RPMA_F_COMPLETION_ALWAYS, NULL));
  wait_completion(cq, IBV_WC_RDMA_READ);
  if (strcmp(mem + KILOBYTE / 2, "written by the client") != 0) return 1;

  CHECK(rpma_conn_disconnect(conn));
  wait_event(conn, RPMA_CONN_CLOSED);
  CHECK(rpma_conn_delete(&conn));
  CHECK(rpma_mr_remote_delete(&remote));
  CHECK(rpma_peer_cfg_delete(&pcfg));
  CHECK(rpma_mr_dereg(&mr));
  CHECK(rpma_peer_delete(&peer));
  free(mem);
  return 0;
}

int main(int argc, char* argv[]) {
  size_t n = sizeof(api) / sizeof(api[0]);
  for (size_t i = 0; i < n; i++)
    if (api[i] == NULL) return 1;
  if (n != 84) return 1;
  char port[16];
  const char* addr = argc > 1 ? argv[1] : "127.0.0.1";
  if (argc > 2) {
    snprintf(port, sizeof(port), "%s", argv[2]);
  } else {
    snprintf(port, sizeof(port), "%d", 20000 + (int)(getpid() * 17 % 10000));
  }
  setenv("RPMA_PROVIDER", "tcp", 0);

  int ready[2];
  if (pipe(ready) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(ready[0]);
    alarm(30);
    _exit(server(addr, port, ready[1]));
  }
  close(ready[1]);
  char c;
  if (read(ready[0], &c, 1) != 1) {
    fprintf(stderr, "server did not start\n");
    return 1;
  }
  alarm(30);
  int ret = client(addr, port);
  int status = 0;
  waitpid(pid, &status, 0);
  if (ret != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "client %d, server status %d\n", ret, status);
    return 1;
  }
  printf("c_api_example: OK\n");
  return 0;
}
