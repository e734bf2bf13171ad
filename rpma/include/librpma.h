/*
 * librpma.h -- the librpma 1.3 C API, implemented by rpkv's rpma/ layer.
 *
 * Remote persistent memory access: register memory, exchange its
 * descriptors, connect two peers, and move data with one-sided reads,
 * writes, atomic writes and flushes, or with two-sided messages. Code
 * written for librpma 1.3 compiles against this header unchanged and runs
 * when linked with -lrpma. Behaviour follows librpma's implementation;
 * where its man pages say otherwise, rpma/README.md lists the choice.
 *
 * Conventions shared by every function below:
 *  - 0 on success or a negative RPMA_E_* code; an out-pointer is written
 *    only on success.
 *  - Getters fail with RPMA_E_INVAL when the object or the out-pointer is
 *    NULL. Destructors (*_delete, rpma_mr_dereg, rpma_ep_shutdown) fail with
 *    RPMA_E_INVAL when the pointer-to-pointer is NULL, do nothing when it
 *    points to NULL, and otherwise always free the object and set the
 *    pointer to NULL, even when they return an error.
 *  - Data-path functions only check the shape of their arguments; bounds
 *    and access rights are checked by the (software or hardware) NIC and
 *    reported as error completions.
 *
 * Thread safety (as librpma's THREAD_SAFETY.md): a peer may be shared by
 * many threads; data-path operations, completion functions, getters,
 * rpma_conn_next_event/disconnect/delete/wait and the error/log API are
 * thread-safe. Configuration objects (peer_cfg, conn_cfg, srq_cfg) must be
 * used by one thread at a time. Not thread-safe: rpma_conn_req_new,
 * rpma_conn_req_delete, rpma_ep_listen, rpma_ep_next_conn_req,
 * rpma_ep_shutdown, rpma_mr_reg, rpma_mr_dereg, rpma_srq_new,
 * rpma_srq_delete, rpma_utils_get_ibv_context, the default log function.
 */
#ifndef LIBRPMA_H
#define LIBRPMA_H 1

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* error codes (see rpma_err_2str() for their texts)                       */
/* ---------------------------------------------------------------------- */

#define RPMA_W_WAIT_FOR_COMPLETION (1) /* defined by librpma, never used */

#define RPMA_E_UNKNOWN (-100000)         /* Unknown error */
#define RPMA_E_NOSUPP (-100001)          /* Not supported */
#define RPMA_E_PROVIDER (-100002)        /* Provider error occurred */
#define RPMA_E_NOMEM (-100003)           /* Out of memory */
#define RPMA_E_INVAL (-100004)           /* Invalid argument */
#define RPMA_E_NO_COMPLETION (-100005)   /* No next completion available */
#define RPMA_E_NO_EVENT (-100006)        /* No next event available */
#define RPMA_E_AGAIN (-100007)           /* Temporary error */
#define RPMA_E_SHARED_CHANNEL (-100008)  /* Completion channel is shared */
#define RPMA_E_NOT_SHARED_CHNL (-100009) /* Completion channel isn't shared */

/* ---------------------------------------------------------------------- */
/* utils: picking a device                                                 */
/* ---------------------------------------------------------------------- */

/* Default timeout of address/route resolution and connection setup. */
#define RPMA_DEFAULT_TIMEOUT_MS 1000

enum rpma_util_ibv_context_type {
  RPMA_UTIL_IBV_CONTEXT_LOCAL, /* the device owning a local address */
  RPMA_UTIL_IBV_CONTEXT_REMOTE /* the device that routes to an address */
};

/*
 * rpma_utils_get_ibv_context -- find the device context for an address.
 * LOCAL looks for the device that owns addr (to listen on it), REMOTE for
 * the device through which addr is reached (to connect to it). The RDMA
 * device is chosen when one serves the address, otherwise a synthetic
 * context of rpkv's tcp provider bound to that address; the environment
 * variable RPMA_PROVIDER=tcp|verbs|auto forces a provider. The context
 * lives until the process exits (there is no release function).
 * Errors: RPMA_E_INVAL - addr or ibv_ctx_ptr is NULL, or type is unknown;
 * RPMA_E_NOMEM - out of memory; RPMA_E_PROVIDER - the address does not
 * resolve, no device serves it, or RPMA_PROVIDER has an unknown value.
 */
int rpma_utils_get_ibv_context(const char *addr,
                               enum rpma_util_ibv_context_type type,
                               struct ibv_context **ibv_ctx_ptr);

/*
 * rpma_utils_ibv_context_is_odp_capable -- store in *is_odp_capable 1 if
 * the device supports On-Demand Paging for RC reads and writes, else 0.
 * Errors: RPMA_E_INVAL - ibv_ctx or is_odp_capable is NULL;
 * RPMA_E_PROVIDER - the device could not be queried (unknown context).
 */
int rpma_utils_ibv_context_is_odp_capable(struct ibv_context *ibv_ctx,
                                          int *is_odp_capable);

/* ---------------------------------------------------------------------- */
/* peer configuration                                                      */
/* ---------------------------------------------------------------------- */

/*
 * A peer configuration describes properties of the remote side that matter
 * to the local one; today only "direct write to PMem" (data written by RDMA
 * lands in the persistence domain), which is what allows
 * RPMA_FLUSH_TYPE_PERSISTENT. Default: false. It travels between peers as
 * a 1-byte descriptor.
 */
struct rpma_peer_cfg;

/*
 * rpma_peer_cfg_new -- create a peer configuration with default values.
 * Errors: RPMA_E_INVAL - pcfg_ptr is NULL; RPMA_E_NOMEM - out of memory.
 */
int rpma_peer_cfg_new(struct rpma_peer_cfg **pcfg_ptr);

/*
 * rpma_peer_cfg_delete -- free a peer configuration, *pcfg_ptr = NULL.
 * Errors: RPMA_E_INVAL - pcfg_ptr is NULL.
 */
int rpma_peer_cfg_delete(struct rpma_peer_cfg **pcfg_ptr);

/*
 * rpma_peer_cfg_set_direct_write_to_pmem -- declare whether RDMA writes to
 * this peer's memory land directly in PMem.
 * Errors: RPMA_E_INVAL - pcfg is NULL.
 */
int rpma_peer_cfg_set_direct_write_to_pmem(struct rpma_peer_cfg *pcfg,
                                           bool supported);

/*
 * rpma_peer_cfg_get_direct_write_to_pmem -- read the flag set above.
 * Errors: RPMA_E_INVAL - pcfg or supported is NULL.
 */
int rpma_peer_cfg_get_direct_write_to_pmem(const struct rpma_peer_cfg *pcfg,
                                           bool *supported);

/*
 * rpma_peer_cfg_get_descriptor -- serialize the configuration into desc
 * (exactly rpma_peer_cfg_get_descriptor_size() bytes, i.e. 1 byte: 0 or 1).
 * Errors: RPMA_E_INVAL - pcfg or desc is NULL.
 */
int rpma_peer_cfg_get_descriptor(const struct rpma_peer_cfg *pcfg, void *desc);

/*
 * rpma_peer_cfg_get_descriptor_size -- the descriptor size (always 1).
 * Errors: RPMA_E_INVAL - pcfg or desc_size is NULL.
 */
int rpma_peer_cfg_get_descriptor_size(const struct rpma_peer_cfg *pcfg,
                                      size_t *desc_size);

/*
 * rpma_peer_cfg_from_descriptor -- create a peer configuration from a
 * descriptor received from the other side (bytes past the first ignored;
 * any non-zero byte means true).
 * Errors: RPMA_E_INVAL - desc or pcfg_ptr is NULL, or desc_size < 1;
 * RPMA_E_NOMEM - out of memory.
 */
int rpma_peer_cfg_from_descriptor(const void *desc, size_t desc_size,
                                  struct rpma_peer_cfg **pcfg_ptr);

/* ---------------------------------------------------------------------- */
/* peer                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * A peer is the local end of everything: it holds the protection domain
 * under which memory is registered and connections are made. It must
 * outlive every MR, SRQ, endpoint, request and connection made from it.
 */
struct rpma_peer;

/*
 * rpma_peer_new -- create a peer on the device ibv_ctx (from
 * rpma_utils_get_ibv_context() or opened by the application).
 * Errors: RPMA_E_INVAL - ibv_ctx or peer_ptr is NULL; RPMA_E_NOMEM -
 * allocating the protection domain failed with ENOMEM, or out of memory;
 * RPMA_E_PROVIDER - the context is unknown or allocating the protection
 * domain failed otherwise; RPMA_E_UNKNOWN - it failed without an error.
 */
int rpma_peer_new(struct ibv_context *ibv_ctx, struct rpma_peer **peer_ptr);

/*
 * rpma_peer_delete -- free the peer and its protection domain.
 * Errors: RPMA_E_INVAL - peer_ptr is NULL; RPMA_E_PROVIDER - releasing the
 * protection domain failed (the peer is freed anyway, *peer_ptr = NULL).
 */
int rpma_peer_delete(struct rpma_peer **peer_ptr);

/* ---------------------------------------------------------------------- */
/* memory regions                                                          */
/* ---------------------------------------------------------------------- */

struct rpma_mr_local;  /* memory registered here */
struct rpma_mr_remote; /* a peer's memory, known from its descriptor */

/* What a registration is for (bits, any combination but not 0). */
#define RPMA_MR_USAGE_READ_SRC (1 << 0)  /* peers read from it */
#define RPMA_MR_USAGE_READ_DST (1 << 1)  /* local reads land in it */
#define RPMA_MR_USAGE_WRITE_SRC (1 << 2) /* local writes come from it */
#define RPMA_MR_USAGE_WRITE_DST (1 << 3) /* peers write to it */
#define RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY (1 << 4) /* peers flush it */
#define RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT (1 << 5) /* peers persist it */
#define RPMA_MR_USAGE_SEND (1 << 6) /* messages are sent from it */
#define RPMA_MR_USAGE_RECV (1 << 7) /* messages are received into it */

/*
 * rpma_mr_reg -- register [ptr, ptr + size) on the peer for `usage`. The
 * memory must stay mapped until rpma_mr_dereg().
 * Errors: RPMA_E_INVAL - peer, ptr or mr_ptr is NULL, size is 0, usage is 0
 * or has bits outside RPMA_MR_USAGE_*; RPMA_E_NOMEM - out of memory;
 * RPMA_E_PROVIDER - the registration failed.
 */
int rpma_mr_reg(struct rpma_peer *peer, void *ptr, size_t size, int usage,
                struct rpma_mr_local **mr_ptr);

/*
 * rpma_mr_dereg -- deregister and free; *mr_ptr = NULL. Operations still
 * using the region complete with errors.
 * Errors: RPMA_E_INVAL - mr_ptr is NULL; RPMA_E_PROVIDER - deregistration
 * failed (the object is freed anyway).
 */
int rpma_mr_dereg(struct rpma_mr_local **mr_ptr);

/*
 * rpma_mr_get_descriptor -- serialize what a peer needs to access the
 * region into desc (rpma_mr_get_descriptor_size() bytes, 21): little-endian
 * u64 address, u64 length, u32 rkey, then the u8 usage bits.
 * Errors: RPMA_E_INVAL - mr or desc is NULL.
 */
int rpma_mr_get_descriptor(const struct rpma_mr_local *mr, void *desc);

/*
 * rpma_mr_remote_from_descriptor -- create a remote region object from a
 * descriptor received from a peer (bytes past the 21st are ignored).
 * Errors: RPMA_E_INVAL - desc or mr_ptr is NULL, desc_size < 21, or the
 * usage byte is 0; RPMA_E_NOMEM - out of memory.
 */
int rpma_mr_remote_from_descriptor(const void *desc, size_t desc_size,
                                   struct rpma_mr_remote **mr_ptr);

/*
 * rpma_mr_get_descriptor_size -- the descriptor size (always 21).
 * Errors: RPMA_E_INVAL - mr or desc_size is NULL.
 */
int rpma_mr_get_descriptor_size(const struct rpma_mr_local *mr,
                                size_t *desc_size);

/*
 * rpma_mr_get_ptr -- the registered address.
 * Errors: RPMA_E_INVAL - mr or ptr is NULL.
 */
int rpma_mr_get_ptr(const struct rpma_mr_local *mr, void **ptr);

/*
 * rpma_mr_get_size -- the registered length.
 * Errors: RPMA_E_INVAL - mr or size is NULL.
 */
int rpma_mr_get_size(const struct rpma_mr_local *mr, size_t *size);

/*
 * rpma_mr_remote_get_size -- the remote region's length.
 * Errors: RPMA_E_INVAL - mr or size is NULL.
 */
int rpma_mr_remote_get_size(const struct rpma_mr_remote *mr, size_t *size);

/*
 * rpma_mr_remote_get_flush_type -- the flush types the remote region
 * supports, as RPMA_MR_USAGE_FLUSH_TYPE_* bits (0 if none).
 * Errors: RPMA_E_INVAL - mr or flush_type is NULL.
 */
int rpma_mr_remote_get_flush_type(const struct rpma_mr_remote *mr,
                                  int *flush_type);

/*
 * rpma_mr_remote_delete -- free a remote region object; *mr_ptr = NULL.
 * Errors: RPMA_E_INVAL - mr_ptr is NULL.
 */
int rpma_mr_remote_delete(struct rpma_mr_remote **mr_ptr);

/*
 * rpma_mr_advise -- give the NIC advice (IBV_ADVISE_MR_ADVICE_*) about
 * [offset, offset + len) of an On-Demand-Paging registration. mr must not
 * be NULL (librpma does not check it).
 * Errors: RPMA_E_NOSUPP - the provider does not support advice;
 * RPMA_E_INVAL - the range is out of bounds, the usage does not allow the
 * advice, or the flags are invalid; RPMA_E_PROVIDER - other failures.
 */
int rpma_mr_advise(struct rpma_mr_local *mr, size_t offset, size_t len,
                   int advice, uint32_t flags);

/* ---------------------------------------------------------------------- */
/* connection configuration                                                */
/* ---------------------------------------------------------------------- */

/*
 * Read only when a request is created (rpma_conn_req_new,
 * rpma_ep_next_conn_req); NULL there means the defaults: timeout 1000 ms,
 * cq_size 10, rcq_size 0 (no separate receive CQ), sq_size 10, rq_size 10,
 * no shared completion channel, no SRQ.
 */
struct rpma_conn_cfg;

/*
 * rpma_conn_cfg_new -- create a connection configuration with defaults.
 * Errors: RPMA_E_INVAL - cfg_ptr is NULL; RPMA_E_NOMEM - out of memory.
 */
int rpma_conn_cfg_new(struct rpma_conn_cfg **cfg_ptr);

/*
 * rpma_conn_cfg_delete -- free a configuration; *cfg_ptr = NULL.
 * Errors: RPMA_E_INVAL - cfg_ptr is NULL.
 */
int rpma_conn_cfg_delete(struct rpma_conn_cfg **cfg_ptr);

/*
 * rpma_conn_cfg_set_timeout -- timeout of address/route resolution and of
 * connection setup (active side), in milliseconds.
 * Errors: RPMA_E_INVAL - cfg is NULL or timeout_ms < 0.
 */
int rpma_conn_cfg_set_timeout(struct rpma_conn_cfg *cfg, int timeout_ms);

/*
 * rpma_conn_cfg_get_timeout -- read the timeout.
 * Errors: RPMA_E_INVAL - cfg or timeout_ms is NULL.
 */
int rpma_conn_cfg_get_timeout(const struct rpma_conn_cfg *cfg, int *timeout_ms);

/*
 * rpma_conn_cfg_set_cq_size -- size of the main completion queue.
 * Errors: RPMA_E_INVAL - cfg is NULL.
 */
int rpma_conn_cfg_set_cq_size(struct rpma_conn_cfg *cfg, uint32_t cq_size);

/*
 * rpma_conn_cfg_get_compl_channel -- whether the CQ and the receive CQ of
 * a connection share one completion channel.
 * Errors: RPMA_E_INVAL - cfg or shared is NULL.
 */
int rpma_conn_cfg_get_compl_channel(const struct rpma_conn_cfg *cfg,
                                    bool *shared);

/*
 * rpma_conn_cfg_set_compl_channel -- share one completion channel between
 * the CQ and the receive CQ (then use rpma_conn_wait(), not rpma_cq_wait()).
 * Errors: RPMA_E_INVAL - cfg is NULL.
 */
int rpma_conn_cfg_set_compl_channel(struct rpma_conn_cfg *cfg, bool shared);

/*
 * rpma_conn_cfg_get_cq_size -- read the CQ size.
 * Errors: RPMA_E_INVAL - cfg or cq_size is NULL.
 */
int rpma_conn_cfg_get_cq_size(const struct rpma_conn_cfg *cfg,
                              uint32_t *cq_size);

/*
 * rpma_conn_cfg_set_rcq_size -- size of a separate receive CQ (0: none;
 * receive completions then go to the main CQ).
 * Errors: RPMA_E_INVAL - cfg is NULL.
 */
int rpma_conn_cfg_set_rcq_size(struct rpma_conn_cfg *cfg, uint32_t rcq_size);

/*
 * rpma_conn_cfg_get_rcq_size -- read the receive CQ size.
 * Errors: RPMA_E_INVAL - cfg or rcq_size is NULL.
 */
int rpma_conn_cfg_get_rcq_size(const struct rpma_conn_cfg *cfg,
                               uint32_t *rcq_size);

/*
 * rpma_conn_cfg_set_sq_size -- maximum outstanding send-queue work requests.
 * Errors: RPMA_E_INVAL - cfg is NULL.
 */
int rpma_conn_cfg_set_sq_size(struct rpma_conn_cfg *cfg, uint32_t sq_size);

/*
 * rpma_conn_cfg_get_sq_size -- read the send-queue size.
 * Errors: RPMA_E_INVAL - cfg or sq_size is NULL.
 */
int rpma_conn_cfg_get_sq_size(const struct rpma_conn_cfg *cfg,
                              uint32_t *sq_size);

/*
 * rpma_conn_cfg_set_rq_size -- maximum outstanding posted receives.
 * Errors: RPMA_E_INVAL - cfg is NULL.
 */
int rpma_conn_cfg_set_rq_size(struct rpma_conn_cfg *cfg, uint32_t rq_size);

/*
 * rpma_conn_cfg_get_rq_size -- read the receive-queue size.
 * Errors: RPMA_E_INVAL - cfg or rq_size is NULL.
 */
int rpma_conn_cfg_get_rq_size(const struct rpma_conn_cfg *cfg,
                              uint32_t *rq_size);

/* ---------------------------------------------------------------------- */
/* shared receive queue (attached to connections through conn_cfg)        */
/* ---------------------------------------------------------------------- */

struct rpma_srq;

/*
 * rpma_conn_cfg_set_srq -- connections made with this configuration take
 * their receives from srq (which must outlive them). The SRQ cannot be
 * cleared again (NULL is refused, as in librpma).
 * Errors: RPMA_E_INVAL - cfg or srq is NULL.
 */
int rpma_conn_cfg_set_srq(struct rpma_conn_cfg *cfg, struct rpma_srq *srq);

/*
 * rpma_conn_cfg_get_srq -- the SRQ set above (NULL if none).
 * Errors: RPMA_E_INVAL - cfg or srq_ptr is NULL.
 */
int rpma_conn_cfg_get_srq(const struct rpma_conn_cfg *cfg,
                          struct rpma_srq **srq_ptr);

/* ---------------------------------------------------------------------- */
/* connection                                                              */
/* ---------------------------------------------------------------------- */

struct rpma_conn;

/*
 * rpma_conn_get_event_fd -- the fd of the connection's own event channel:
 * readable when rpma_conn_next_event() has an event. It may be set
 * O_NONBLOCK and polled.
 * Errors: RPMA_E_INVAL - conn or fd is NULL.
 */
int rpma_conn_get_event_fd(const struct rpma_conn *conn, int *fd);

enum rpma_conn_event {
  RPMA_CONN_UNDEFINED = -1, /* never produced; for initializers */
  RPMA_CONN_ESTABLISHED,    /* the connection is up */
  RPMA_CONN_CLOSED,         /* either side disconnected */
  RPMA_CONN_LOST,           /* setup failed or the device went away */
  RPMA_CONN_REJECTED,       /* the server rejected or nobody listens */
  RPMA_CONN_UNREACHABLE     /* the server could not be reached in time */
};

/*
 * rpma_conn_next_event -- wait for and return the next connection event
 * (blocking unless the event fd is O_NONBLOCK). On ESTABLISHED the active
 * side obtains the private data the server accepted with.
 * Errors: RPMA_E_INVAL - conn or event is NULL; RPMA_E_NO_EVENT - the fd
 * is non-blocking and no event is pending; RPMA_E_UNKNOWN - an unexpected
 * event (consumed); RPMA_E_PROVIDER - getting the event failed;
 * RPMA_E_NOMEM - out of memory.
 */
int rpma_conn_next_event(struct rpma_conn *conn, enum rpma_conn_event *event);

/*
 * rpma_utils_conn_event_2str -- a constant description of an event
 * ("Unsupported connection event" for unknown values). Never fails.
 */
const char *rpma_utils_conn_event_2str(enum rpma_conn_event conn_event);

/* Private data exchanged while connecting (at most 255 bytes). */
struct rpma_conn_private_data {
  void *ptr;
  uint8_t len;
};

/*
 * rpma_conn_get_private_data -- the peer's private data: on the passive
 * side what the client sent with its request, on the active side what the
 * server accepted with (available after ESTABLISHED). {NULL, 0} if none.
 * The buffer belongs to the connection.
 * Errors: RPMA_E_INVAL - conn or pdata is NULL.
 */
int rpma_conn_get_private_data(const struct rpma_conn *conn,
                               struct rpma_conn_private_data *pdata);

/*
 * rpma_conn_apply_remote_peer_cfg -- take the remote side's configuration
 * into account (direct write to PMem enables RPMA_FLUSH_TYPE_PERSISTENT).
 * Errors: RPMA_E_INVAL - conn or pcfg is NULL.
 */
int rpma_conn_apply_remote_peer_cfg(struct rpma_conn *conn,
                                    const struct rpma_peer_cfg *pcfg);

/*
 * rpma_conn_get_qp_num -- the connection's queue pair number (the value
 * completions report in ibv_wc.qp_num).
 * Errors: RPMA_E_INVAL - conn or qp_num is NULL.
 */
int rpma_conn_get_qp_num(const struct rpma_conn *conn, uint32_t *qp_num);

struct rpma_cq;

/*
 * rpma_conn_get_cq -- the main completion queue (owned by the connection).
 * Errors: RPMA_E_INVAL - conn or cq_ptr is NULL.
 */
int rpma_conn_get_cq(const struct rpma_conn *conn, struct rpma_cq **cq_ptr);

/*
 * rpma_conn_get_rcq -- the separate receive CQ, or NULL if there is none.
 * Errors: RPMA_E_INVAL - conn or rcq_ptr is NULL.
 */
int rpma_conn_get_rcq(const struct rpma_conn *conn, struct rpma_cq **rcq_ptr);

/*
 * rpma_conn_disconnect -- start tearing the connection down (both sides
 * then get RPMA_CONN_CLOSED), or, after RPMA_CONN_CLOSED was received,
 * complete the teardown. It does not wait for the peer.
 * Errors: RPMA_E_INVAL - conn is NULL; RPMA_E_PROVIDER - the provider
 * failed to disconnect.
 */
int rpma_conn_disconnect(struct rpma_conn *conn);

/*
 * rpma_conn_delete -- release the connection and everything it owns
 * (CQs, queue pair, event channel, private data); *conn_ptr = NULL even on
 * failure. It does not require RPMA_CONN_CLOSED first and never blocks on
 * the peer; a still-connected peer sees RPMA_CONN_CLOSED.
 * Errors: RPMA_E_INVAL - conn_ptr is NULL (or releasing the flush buffer
 * failed); RPMA_E_PROVIDER - releasing a provider resource failed.
 */
int rpma_conn_delete(struct rpma_conn **conn_ptr);

/* ---------------------------------------------------------------------- */
/* connection requests                                                     */
/* ---------------------------------------------------------------------- */

struct rpma_conn_req;

/*
 * rpma_conn_req_new -- prepare an outgoing connection request to addr:port
 * (resolution within the cfg's timeout; CQs and queue pair created).
 * Nothing is sent until rpma_conn_req_connect(). cfg may be NULL.
 * Errors: RPMA_E_INVAL - peer, addr, port or req_ptr is NULL, or cfg has a
 * shared completion channel and an SRQ with its own receive CQ;
 * RPMA_E_NOMEM - out of memory; RPMA_E_PROVIDER - resolution, or creating
 * a channel, CQ or queue pair, failed.
 */
int rpma_conn_req_new(struct rpma_peer *peer, const char *addr,
                      const char *port, const struct rpma_conn_cfg *cfg,
                      struct rpma_conn_req **req_ptr);

/*
 * rpma_conn_req_delete -- drop a request; an incoming one is rejected (the
 * client sees RPMA_CONN_REJECTED). *req_ptr = NULL even on failure.
 * Errors: RPMA_E_INVAL - req_ptr is NULL; RPMA_E_PROVIDER - releasing or
 * rejecting failed.
 */
int rpma_conn_req_delete(struct rpma_conn_req **req_ptr);

/*
 * rpma_conn_req_connect -- connect (outgoing request) or accept (incoming
 * request), sending pdata (may be NULL) to the peer. The request is
 * consumed (*req_ptr = NULL) in every case except when req_ptr or *req_ptr
 * is NULL; *conn_ptr is written only on success. Success means "initiated":
 * RPMA_CONN_ESTABLISHED comes from rpma_conn_next_event().
 * Errors: RPMA_E_INVAL - req_ptr or *req_ptr is NULL (nothing consumed);
 * RPMA_E_INVAL - conn_ptr is NULL, or pdata is not NULL and pdata->ptr is
 * NULL or pdata->len is 0 (request consumed; an incoming one is rejected);
 * RPMA_E_NOMEM - out of memory; RPMA_E_PROVIDER - connecting or accepting
 * failed.
 */
int rpma_conn_req_connect(struct rpma_conn_req **req_ptr,
                          const struct rpma_conn_private_data *pdata,
                          struct rpma_conn **conn_ptr);

/*
 * rpma_conn_get_compl_fd -- the fd of the completion channel shared by the
 * connection's CQ and receive CQ.
 * Errors: RPMA_E_INVAL - conn or fd is NULL; RPMA_E_NOT_SHARED_CHNL - the
 * connection has no shared completion channel.
 */
int rpma_conn_get_compl_fd(const struct rpma_conn *conn, int *fd);

/*
 * rpma_conn_wait -- wait on the shared completion channel; *cq is the CQ
 * that got a completion (re-armed), *is_rcq (may be NULL) tells whether it
 * is the receive CQ. flags is reserved (ignored). A wakeup may be spurious:
 * rpma_cq_get_wc() may then return RPMA_E_NO_COMPLETION.
 * Errors: RPMA_E_INVAL - conn or cq is NULL; RPMA_E_NOT_SHARED_CHNL - no
 * shared channel; RPMA_E_NO_COMPLETION - getting the event failed (also
 * when the fd is non-blocking and nothing is pending); RPMA_E_UNKNOWN -
 * the event came from an unknown CQ; RPMA_E_PROVIDER - re-arming failed.
 */
int rpma_conn_wait(struct rpma_conn *conn, int flags, struct rpma_cq **cq,
                   bool *is_rcq);

/*
 * rpma_conn_req_recv -- post a receive on the request's queue pair before
 * connecting, so that a message sent right after ESTABLISHED has a buffer.
 * The connection inherits it. dst must stay registered until completion.
 * Errors: RPMA_E_INVAL - req or dst is NULL; RPMA_E_PROVIDER - posting
 * failed.
 */
int rpma_conn_req_recv(struct rpma_conn_req *req, struct rpma_mr_local *dst,
                       size_t offset, size_t len, const void *op_context);

/* ---------------------------------------------------------------------- */
/* endpoint (server side)                                                  */
/* ---------------------------------------------------------------------- */

struct rpma_ep;

/*
 * rpma_ep_listen -- listen for connection requests on addr:port.
 * Errors: RPMA_E_INVAL - peer, addr, port or ep_ptr is NULL; RPMA_E_NOMEM
 * - out of memory; RPMA_E_PROVIDER - creating the channel, resolving,
 * binding (address in use) or listening failed.
 */
int rpma_ep_listen(struct rpma_peer *peer, const char *addr, const char *port,
                   struct rpma_ep **ep_ptr);

/*
 * rpma_ep_shutdown -- stop listening and free the endpoint; *ep_ptr = NULL
 * even on failure. Established connections are not affected.
 * Errors: RPMA_E_INVAL - ep_ptr is NULL; RPMA_E_PROVIDER - releasing the
 * listener failed.
 */
int rpma_ep_shutdown(struct rpma_ep **ep_ptr);

/*
 * rpma_ep_get_fd -- the endpoint's event fd: readable when a connection
 * request is pending. It may be set O_NONBLOCK and polled.
 * Errors: RPMA_E_INVAL - ep or fd is NULL.
 */
int rpma_ep_get_fd(const struct rpma_ep *ep, int *fd);

/*
 * rpma_ep_next_conn_req -- take the next incoming connection request and
 * prepare it with cfg (may be NULL). Accept it with rpma_conn_req_connect()
 * or reject it with rpma_conn_req_delete().
 * Errors: RPMA_E_INVAL - ep or req_ptr is NULL, or the event was not a
 * connection request; RPMA_E_NO_EVENT - the fd is non-blocking and nothing
 * is pending; RPMA_E_NOMEM - out of memory; RPMA_E_PROVIDER - getting the
 * event or creating the request's resources failed.
 */
int rpma_ep_next_conn_req(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg,
                          struct rpma_conn_req **req_ptr);

/*
 * rpma_conn_req_get_private_data -- the private data the client sent with
 * an incoming request ({NULL, 0} for outgoing requests or none sent); the
 * buffer belongs to the request.
 * Errors: RPMA_E_INVAL - req or pdata is NULL.
 */
int rpma_conn_req_get_private_data(const struct rpma_conn_req *req,
                                   struct rpma_conn_private_data *pdata);

/* ---------------------------------------------------------------------- */
/* shared receive queue configuration and object                           */
/* ---------------------------------------------------------------------- */

/* Defaults (librpma's implementation): rq_size 20, rcq_size 20. */
struct rpma_srq_cfg;

/*
 * rpma_srq_cfg_new -- create an SRQ configuration with defaults.
 * Errors: RPMA_E_INVAL - cfg_ptr is NULL; RPMA_E_NOMEM - out of memory.
 */
int rpma_srq_cfg_new(struct rpma_srq_cfg **cfg_ptr);

/*
 * rpma_srq_cfg_delete -- free it; *cfg_ptr = NULL.
 * Errors: RPMA_E_INVAL - cfg_ptr is NULL.
 */
int rpma_srq_cfg_delete(struct rpma_srq_cfg **cfg_ptr);

/*
 * rpma_srq_cfg_set_rq_size -- maximum outstanding receives on the SRQ.
 * Errors: RPMA_E_INVAL - cfg is NULL.
 */
int rpma_srq_cfg_set_rq_size(struct rpma_srq_cfg *cfg, uint32_t rq_size);

/*
 * rpma_srq_cfg_get_rq_size -- read it.
 * Errors: RPMA_E_INVAL - cfg or rq_size is NULL.
 */
int rpma_srq_cfg_get_rq_size(const struct rpma_srq_cfg *cfg, uint32_t *rq_size);

/*
 * rpma_srq_cfg_set_rcq_size -- size of the SRQ's own receive CQ (0: none).
 * Errors: RPMA_E_INVAL - cfg is NULL.
 */
int rpma_srq_cfg_set_rcq_size(struct rpma_srq_cfg *cfg, uint32_t rcq_size);

/*
 * rpma_srq_cfg_get_rcq_size -- read it.
 * Errors: RPMA_E_INVAL - cfg or rcq_size is NULL.
 */
int rpma_srq_cfg_get_rcq_size(const struct rpma_srq_cfg *cfg,
                              uint32_t *rcq_size);

/*
 * rpma_srq_new -- create a shared receive queue (and, if rcq_size > 0, its
 * receive CQ, which then receives the completions of every connection
 * using the SRQ; wc.qp_num tells them apart). cfg may be NULL.
 * Errors: RPMA_E_INVAL - peer or srq_ptr is NULL; RPMA_E_NOMEM - out of
 * memory; RPMA_E_PROVIDER - creating the SRQ, channel or CQ failed.
 */
int rpma_srq_new(struct rpma_peer *peer, struct rpma_srq_cfg *cfg,
                 struct rpma_srq **srq_ptr);

/*
 * rpma_srq_delete -- free the SRQ and its receive CQ; *srq_ptr = NULL.
 * Connections using it must be deleted first.
 * Errors: RPMA_E_INVAL - srq_ptr is NULL; RPMA_E_PROVIDER - releasing a
 * resource failed.
 */
int rpma_srq_delete(struct rpma_srq **srq_ptr);

/*
 * rpma_srq_recv -- post a receive buffer on the SRQ (dst NULL with
 * offset 0 and len 0 posts a zero-byte receive).
 * Errors: RPMA_E_INVAL - srq is NULL, or dst is NULL while offset or len is
 * not 0; RPMA_E_PROVIDER - posting failed (e.g. the SRQ is full).
 */
int rpma_srq_recv(struct rpma_srq *srq, struct rpma_mr_local *dst,
                  size_t offset, size_t len, const void *op_context);

/*
 * rpma_srq_get_rcq -- the SRQ's receive CQ, or NULL if it has none.
 * Errors: RPMA_E_INVAL - srq or rcq_ptr is NULL.
 */
int rpma_srq_get_rcq(const struct rpma_srq *srq, struct rpma_cq **rcq_ptr);

/* ---------------------------------------------------------------------- */
/* data path                                                               */
/* ---------------------------------------------------------------------- */

/*
 * Completion flags (one is required): ON_ERROR generates a completion only
 * if the operation fails; ALWAYS generates one in every case. Unsignaled
 * operations keep their send-queue slot until a later signaled one
 * completes. op_context comes back as ibv_wc.wr_id. Buffers (local and
 * remote) must stay registered until the operation's completion (or a
 * later one of the same connection) has been reaped.
 */
#define RPMA_F_COMPLETION_ON_ERROR (1 << 0)
#define RPMA_F_COMPLETION_ALWAYS (1 << 1 | RPMA_F_COMPLETION_ON_ERROR)

/*
 * rpma_read -- read len bytes from src + src_offset (remote) into
 * dst + dst_offset (local). With src and dst both NULL and offsets and len
 * 0, posts an empty read. Completion opcode IBV_WC_RDMA_READ.
 * Errors: RPMA_E_INVAL - conn is NULL, flags is 0, or exactly one of
 * src/dst is NULL, or both are NULL while an offset or len is not 0;
 * RPMA_E_PROVIDER - posting failed.
 */
int rpma_read(struct rpma_conn *conn, struct rpma_mr_local *dst,
              size_t dst_offset, const struct rpma_mr_remote *src,
              size_t src_offset, size_t len, int flags, const void *op_context);

/*
 * rpma_write -- write len bytes from src + src_offset (local) to
 * dst + dst_offset (remote). Completion opcode IBV_WC_RDMA_WRITE. The data
 * is not guaranteed visible or persistent until rpma_flush() completes.
 * Errors: as rpma_read().
 */
int rpma_write(struct rpma_conn *conn, struct rpma_mr_remote *dst,
               size_t dst_offset, const struct rpma_mr_local *src,
               size_t src_offset, size_t len, int flags,
               const void *op_context);

/*
 * rpma_write_with_imm -- rpma_write() that also consumes a receive at the
 * peer, which gets IBV_WC_RECV_RDMA_WITH_IMM with imm (network byte order
 * in ibv_wc.imm_data, IBV_WC_WITH_IMM set).
 * Errors: as rpma_read().
 */
int rpma_write_with_imm(struct rpma_conn *conn, struct rpma_mr_remote *dst,
                        size_t dst_offset, const struct rpma_mr_local *src,
                        size_t src_offset, size_t len, int flags, uint32_t imm,
                        const void *op_context);

#define RPMA_ATOMIC_WRITE_ALIGNMENT 8

/*
 * rpma_atomic_write -- write 8 bytes atomically to dst + dst_offset, after
 * every earlier operation of the connection (including flushes) finished.
 * src is copied at posting time and needs no registration. Completion
 * opcode IBV_WC_RDMA_WRITE.
 * Errors: RPMA_E_INVAL - conn, dst or src is NULL, flags is 0, or
 * dst_offset is not a multiple of 8; RPMA_E_PROVIDER - posting failed.
 */
int rpma_atomic_write(struct rpma_conn *conn, struct rpma_mr_remote *dst,
                      size_t dst_offset, const char src[8], int flags,
                      const void *op_context);

enum rpma_flush_type {
  /* make the data durable (needs direct write to PMem at the peer) */
  RPMA_FLUSH_TYPE_PERSISTENT,
  /* make the data visible to the peer's CPU */
  RPMA_FLUSH_TYPE_VISIBILITY,
};

/*
 * rpma_flush -- make earlier writes to dst [dst_offset, +len) persistent or
 * visible at the peer. Without a native flush this is librpma's
 * read-after-write: an 8-byte read at dst + dst_offset (completion opcode
 * IBV_WC_RDMA_READ), so the range needs the remote read right that the
 * FLUSH_TYPE usage bits grant.
 * Errors: RPMA_E_INVAL - conn or dst is NULL or flags is 0; RPMA_E_NOSUPP
 * - type is PERSISTENT and the peer's configuration (applied with
 * rpma_conn_apply_remote_peer_cfg()) lacks direct write to PMem, or dst was
 * not registered with the usage bit of this flush type; RPMA_E_PROVIDER -
 * posting failed. (An unknown type is not rejected, as in librpma.)
 */
int rpma_flush(struct rpma_conn *conn, struct rpma_mr_remote *dst,
               size_t dst_offset, size_t len, enum rpma_flush_type type,
               int flags, const void *op_context);

/*
 * rpma_send -- send len bytes from src + offset to the peer's next posted
 * receive (src NULL with offset and len 0 sends an empty message).
 * Completion opcode IBV_WC_SEND; the peer gets IBV_WC_RECV.
 * Errors: RPMA_E_INVAL - conn is NULL, flags is 0, or src is NULL while
 * offset or len is not 0; RPMA_E_PROVIDER - posting failed.
 */
int rpma_send(struct rpma_conn *conn, const struct rpma_mr_local *src,
              size_t offset, size_t len, int flags, const void *op_context);

/*
 * rpma_send_with_imm -- rpma_send() carrying imm (network byte order in the
 * peer's ibv_wc.imm_data, IBV_WC_WITH_IMM set).
 * Errors: as rpma_send().
 */
int rpma_send_with_imm(struct rpma_conn *conn, const struct rpma_mr_local *src,
                       size_t offset, size_t len, int flags, uint32_t imm,
                       const void *op_context);

/*
 * rpma_recv -- post a receive buffer dst + offset of len bytes (dst NULL
 * with offset and len 0 posts a zero-byte receive). Receives always
 * complete (IBV_WC_RECV, or IBV_WC_RECV_RDMA_WITH_IMM).
 * Errors: RPMA_E_INVAL - conn is NULL, or dst is NULL while offset or len
 * is not 0; RPMA_E_PROVIDER - posting failed (e.g. receive queue full).
 */
int rpma_recv(struct rpma_conn *conn, struct rpma_mr_local *dst, size_t offset,
              size_t len, const void *op_context);

/* ---------------------------------------------------------------------- */
/* completions                                                             */
/* ---------------------------------------------------------------------- */

/*
 * rpma_cq_get_fd -- the CQ's completion channel fd (readable after a
 * completion arrived on an armed CQ); shared channels give the same fd for
 * the CQ and the receive CQ. tcp provider: readable also while one of the
 * CQ's connections has bytes to read, which rpma_cq_wait() and
 * rpma_cq_get_wc() then read on the calling thread; so a readable fd may
 * yield no event (set O_NONBLOCK to get RPMA_E_NO_COMPLETION then instead
 * of blocking until the next event).
 * Errors: RPMA_E_INVAL - cq or fd is NULL.
 */
int rpma_cq_get_fd(const struct rpma_cq *cq, int *fd);

/*
 * rpma_cq_wait -- wait for a completion notification and re-arm the CQ.
 * Errors: RPMA_E_INVAL - cq is NULL; RPMA_E_SHARED_CHANNEL - the channel is
 * shared (use rpma_conn_wait()); RPMA_E_NO_COMPLETION - getting the event
 * failed (also on a non-blocking fd with nothing pending); RPMA_E_PROVIDER
 * - re-arming failed.
 */
int rpma_cq_wait(struct rpma_cq *cq);

/*
 * rpma_cq_get_wc -- take up to num_entries completions; *num_entries_got
 * (may be NULL only when num_entries is 1) says how many.
 * Errors: RPMA_E_INVAL - cq or wc is NULL, num_entries < 1, or
 * num_entries > 1 and num_entries_got is NULL; RPMA_E_NO_COMPLETION - none
 * available; RPMA_E_PROVIDER - polling failed; RPMA_E_UNKNOWN - polling
 * returned more than asked.
 */
int rpma_cq_get_wc(struct rpma_cq *cq, int num_entries, struct ibv_wc *wc,
                   int *num_entries_got);

/* ---------------------------------------------------------------------- */
/* errors and logging                                                      */
/* ---------------------------------------------------------------------- */

/*
 * rpma_err_2str -- a constant, human-readable description of an rpma error
 * code (any unknown value gives "Unknown error"). Never fails.
 */
const char *rpma_err_2str(int ret);

enum rpma_log_level {
  RPMA_LOG_DISABLED = -1, /* nothing is logged */
  RPMA_LOG_LEVEL_FATAL,   /* the library stops working */
  RPMA_LOG_LEVEL_ERROR,   /* an operation failed */
  RPMA_LOG_LEVEL_WARNING, /* something the caller may handle */
  RPMA_LOG_LEVEL_NOTICE,  /* connection-level events */
  RPMA_LOG_LEVEL_INFO,    /* more detail */
  RPMA_LOG_LEVEL_DEBUG,   /* everything */
};

enum rpma_log_threshold {
  /* messages above this level never reach the log function (default
   * WARNING) */
  RPMA_LOG_THRESHOLD,
  /* the default log function also writes messages up to this level to
   * stderr (default DISABLED) */
  RPMA_LOG_THRESHOLD_AUX,
  RPMA_LOG_THRESHOLD_MAX
};

/*
 * rpma_log_set_threshold -- set one of the thresholds.
 * Errors: RPMA_E_INVAL - threshold is not RPMA_LOG_THRESHOLD or
 * RPMA_LOG_THRESHOLD_AUX, or level is not an rpma_log_level value;
 * RPMA_E_AGAIN - never returned here (librpma: without C11 atomics).
 */
int rpma_log_set_threshold(enum rpma_log_threshold threshold,
                           enum rpma_log_level level);

/*
 * rpma_log_get_threshold -- read one of the thresholds.
 * Errors: RPMA_E_INVAL - threshold is invalid, or level is NULL.
 */
int rpma_log_get_threshold(enum rpma_log_threshold threshold,
                           enum rpma_log_level *level);

/*
 * A log function: must be thread-safe. file_name may be NULL (then
 * line_no and function_name carry nothing).
 */
typedef void rpma_log_function(enum rpma_log_level level, const char *file_name,
                               const int line_no, const char *function_name,
                               const char *message_format, ...);

#define RPMA_LOG_USE_DEFAULT_FUNCTION (NULL)

/*
 * rpma_log_set_function -- install a log function, or the default one
 * (syslog, plus stderr up to the aux threshold) with
 * RPMA_LOG_USE_DEFAULT_FUNCTION.
 * Errors: RPMA_E_AGAIN - never returned here (librpma: without atomics).
 */
int rpma_log_set_function(rpma_log_function *log_function);

#ifdef __cplusplus
}
#endif

#endif /* LIBRPMA_H */
