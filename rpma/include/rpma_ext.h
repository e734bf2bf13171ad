/*
 * rpma_ext.h - rpkv extensions beyond librpma 1.3.
 *
 * Nothing written for librpma includes this header; librpma's own calls
 * (librpma.h) behave exactly as without it. It declares three calls that
 * let a server give each tenant a protection domain of its own and hand a
 * client memory that only that client's connection can reach:
 *
 *   rpma_conn_req_set_peer()  move an incoming request's queue pair into
 *                             another peer's protection domain
 *   rpma_conn_mr_reg()        register memory reachable remotely only
 *                             through one connection
 *   rpma_mr_advance()         make the start of a registration remotely
 *                             unreachable (a floor that only moves up)
 *
 * and a connection group, so that one thread can drive thousands of
 * connections through one fd, with no file descriptor of their own beyond
 * the provider's (tcp: the socket; verbs: none):
 *
 *   rpma_conn_group_new()     one completion channel and one CM event
 *                             channel shared by many connections
 *   rpma_conn_req_set_group() make a request's connection a member
 *   rpma_conn_group_next()    which member has a completion or an event
 *
 * (librpma gives every connection a CM event channel of its own and every
 * CQ a completion channel of its own: over tcp that was four descriptors
 * per connection, and a server with a 20,000-descriptor limit held 4,990
 * connections. verbs servers share both channels the same way.)
 *
 * Support: all three on the tcp provider. On the verbs provider
 * rpma_conn_req_set_peer() works (the QP is destroyed and recreated in the
 * new PD before rdma_accept()); rpma_conn_mr_reg() and rpma_mr_advance()
 * return RPMA_E_NOSUPP: they need type-2 memory windows bound to the QP
 * (ibv_alloc_mw / ibv_bind_mw, a bind per advance, invalidation on
 * connection loss), which is not implemented. Fall back to ordinary
 * rpma_mr_reg() registrations in a per-tenant peer there.
 *
 * Exported from librpma.so (version node LIBRPMA_1.0) next to librpma's
 * functions. Return values: 0 or a negative RPMA_E_* code, as librpma.
 */
#ifndef RPMA_EXT_H
#define RPMA_EXT_H

#include <librpma.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * rpma_conn_req_set_peer - move an INCOMING request (from
 * rpma_ep_next_conn_req) into `peer`'s protection domain, before
 * rpma_conn_req_connect(). The conn_cfg the request was made with is kept
 * (queue and CQ sizes, shared channel); CQs and completion channels belong
 * to the device, not to a protection domain, and stay.
 *
 * After it:
 *  - the remote side's one-sided operations (read, write, atomic write,
 *    flush) are checked against `peer`'s registrations only; those of the
 *    peer the request came from are unreachable through this connection;
 *  - local registrations used on this connection (rpma_send, rpma_recv,
 *    the local side of rpma_read/rpma_write) must be registered with
 *    `peer` (verbs checks lkeys against the QP's PD; tcp does not check);
 *  - the request and the connection made from it count as objects of
 *    `peer` AND of the peer the request came from: neither peer can be
 *    deleted (rpma_peer_delete -> RPMA_E_PROVIDER, PD leaked) while they
 *    live. (tcp: the connection stays served by the original peer's
 *    progress engine; the new peer starts no thread for it.)
 *
 * It may be called again with another peer (same rules). Calling it with
 * the peer the request is already in does nothing and returns 0.
 *
 * ERRORS
 * RPMA_E_INVAL    - req or peer is NULL; req is an outgoing request
 *                   (rpma_conn_req_new); peer is of another device or
 *                   provider than the request; the request was made with
 *                   a conn_cfg that has a shared RQ (rpma_conn_cfg_set_srq:
 *                   an SRQ belongs to one PD); a receive was already posted
 *                   with rpma_conn_req_recv() (it could not move along).
 *                   The request is unchanged and still usable.
 * RPMA_E_NOMEM    - out of memory; the request is unchanged.
 * RPMA_E_NOSUPP   - the provider cannot move QPs (only test providers).
 * RPMA_E_PROVIDER - the provider failed to recreate the QP (verbs). If it
 *                   could recreate it in the original PD the request is
 *                   unchanged; otherwise the request has no queue pair and
 *                   must be deleted (rpma_conn_req_delete rejects the
 *                   client) — the log says which.
 */
int rpma_conn_req_set_peer(struct rpma_conn_req *req, struct rpma_peer *peer);

/*
 * rpma_conn_mr_reg - register [ptr, ptr + size) in the protection domain
 * of `conn`'s queue pair such that REMOTE access is allowed only through
 * this one connection: any other connection, even of the same peer and
 * knowing the exact rkey and address, gets a remote access error
 * (IBV_WC_REM_ACCESS_ERR at the requester) and the memory is untouched.
 * usage is as for rpma_mr_reg(). Local use, rpma_mr_get_descriptor(),
 * rpma_mr_get_ptr/size() and rpma_mr_dereg() are as for any
 * rpma_mr_local; rpma_mr_advance() applies.
 *
 * LIFETIME
 * The region is an object of conn's peer: deregister it before deleting
 * that peer (else rpma_peer_delete fails with RPMA_E_PROVIDER and leaks
 * the PD). It may outlive the connection: once rpma_conn_delete(conn) has
 * returned, no connection can reach it remotely any more (local use goes
 * on working); rpma_mr_dereg() it when done.
 *
 * ERRORS
 * RPMA_E_INVAL    - conn, ptr or mr_ptr is NULL, size is 0, usage is 0 or
 *                   has bits outside RPMA_MR_USAGE_*.
 * RPMA_E_NOMEM    - out of memory.
 * RPMA_E_NOSUPP   - the provider has no per-connection registrations
 *                   (verbs: type-2 memory windows are not implemented).
 * RPMA_E_PROVIDER - the provider failed.
 */
int rpma_conn_mr_reg(struct rpma_conn *conn, void *ptr, size_t size, int usage,
                     struct rpma_mr_local **mr_ptr);

/*
 * rpma_mr_advance - raise the remote floor of a registration: from its
 * return on, every remote access (read, write, atomic write, flush) that
 * touches the first `offset` bytes of the registration fails with a
 * remote access error, and no remote write lands below the floor any more
 * (a write accepted before the call and still being placed stops and
 * fails; bytes it placed before the call stay). A remote read accepted
 * before the call may still be answered. Bytes at and above the floor
 * stay accessible as registered. Local access is not affected. The floor
 * starts at 0 and only moves up; offset == size makes the whole region
 * remotely unreachable. Works for rpma_mr_reg() and rpma_conn_mr_reg()
 * registrations alike.
 *
 * ERRORS
 * RPMA_E_INVAL  - mr is NULL, offset > the registration's size, or offset
 *                 is below the current floor (nothing changes).
 * RPMA_E_NOSUPP - the provider cannot (verbs: would need memory-window
 *                 rebinding).
 */
int rpma_mr_advance(struct rpma_mr_local *mr, size_t offset);

/*
 * A connection group: one completion channel that every member's CQs
 * notify, and one CM event channel that every member's connection events
 * go to, behind one pollable fd. Members are connections made from
 * requests given to rpma_conn_req_set_group(). A group is of one device
 * (the peer it is made with); its members may be of any peer of that
 * device.
 *
 * THREAD SAFETY
 * rpma_conn_group_next() must not run concurrently with itself on one
 * group, nor with rpma_conn_delete() of one of the group's members (call
 * both from the thread that drives the group). A request that joined
 * the group (rpma_conn_req_set_group) but is not connected yet may be
 * deleted on any thread while another drives the group: the completions
 * its deletion flushes are never reported, and its CQs are not touched
 * once it is gone. Everything else on the members (posting,
 * rpma_cq_get_wc, rpma_conn_next_event) may run on any thread, as for any
 * connection.
 */
struct rpma_conn_group;

/* What rpma_conn_group_next() reports about a member. */
#define RPMA_CONN_GROUP_COMPLETION 1 /* a CQ of the member fired (re-armed) */
#define RPMA_CONN_GROUP_EVENT 2      /* rpma_conn_next_event() has one */

/*
 * rpma_conn_group_new - a new, empty group of peer's device.
 *
 * ERRORS
 * RPMA_E_INVAL    - peer or group_ptr is NULL
 * RPMA_E_NOMEM    - out of memory
 * RPMA_E_PROVIDER - a channel or the epoll fd could not be created (e.g.
 *                   EMFILE)
 */
int rpma_conn_group_new(struct rpma_peer *peer,
                        struct rpma_conn_group **group_ptr);

/*
 * rpma_conn_group_delete - deletes a group that has no members (requests
 * given to rpma_conn_req_set_group and not yet deleted, or connections
 * made from them and not yet deleted); NULL *group_ptr is a no-op.
 *
 * ERRORS
 * RPMA_E_INVAL - group_ptr is NULL, or the group still has members (it is
 *                left as it was)
 */
int rpma_conn_group_delete(struct rpma_conn_group **group_ptr);

/*
 * rpma_conn_group_get_fd - the group's fd: readable (level-triggered, for
 * poll/epoll) while rpma_conn_group_next() may have something to report.
 * It may also be readable when the provider has work to do for a member
 * that ends in no report (tcp: a socket carrying a one-sided read that the
 * call to rpma_conn_group_next() serves); then that call returns
 * RPMA_E_NO_EVENT and the fd is quiet again. The fd belongs to the group:
 * do not close it.
 *
 * ERRORS
 * RPMA_E_INVAL - group or fd is NULL
 */
int rpma_conn_group_get_fd(const struct rpma_conn_group *group, int *fd);

/*
 * rpma_conn_req_set_group - make the connection of `req` (incoming or
 * outgoing, not yet connected) a member of `group`: its CQs are recreated
 * on the group's completion channel (so are its queue pair, which is why
 * no receive may have been posted yet), and rpma_conn_req_connect() moves
 * its CM id to the group's event channel instead of a channel of its own.
 *
 * For a member connection:
 *  - rpma_conn_group_next() reports its completions and events;
 *  - rpma_conn_next_event() returns the events the group reported for it
 *    and never blocks (RPMA_E_NO_EVENT when none is waiting);
 *  - rpma_conn_get_event_fd() gives the group's fd;
 *  - rpma_cq_wait() on its CQs returns RPMA_E_SHARED_CHANNEL (the group
 *    waits and re-arms; rpma_cq_get_fd() gives the group's completion
 *    channel, nested in the group's fd: wait on the latter); rpma_conn_wait()
 * and rpma_conn_get_compl_fd() return RPMA_E_NOT_SHARED_CHNL as for any
 *    connection without librpma's shared channel; rpma_cq_get_wc() works
 *    as always.
 *
 * ERRORS
 * RPMA_E_INVAL    - req or group is NULL; the request was made with a
 *                   conn_cfg that has a shared RQ or librpma's shared
 *                   completion channel; a receive was already posted with
 *                   rpma_conn_req_recv(); it is a member of a group
 *                   already; the group is of another device. The request
 *                   is unchanged.
 * RPMA_E_NOMEM    - out of memory; the request is unchanged.
 * RPMA_E_NOSUPP   - the provider cannot recreate queue pairs.
 * RPMA_E_PROVIDER - the provider failed. If the old queue pair could be
 *                   kept the request is unchanged; otherwise it has no
 *                   queue pair and must be deleted — the log says which.
 */
int rpma_conn_req_set_group(struct rpma_conn_req *req,
                            struct rpma_conn_group *group);

/*
 * rpma_conn_group_next - without blocking, the next member with something
 * to report: *conn_ptr and *what (RPMA_CONN_GROUP_COMPLETION: one of its
 * CQs fired and is re-armed, so poll it with rpma_cq_get_wc() until
 * empty; RPMA_CONN_GROUP_EVENT: rpma_conn_next_event() has an event for
 * it). Connection events are reported before completions. On the tcp
 * provider the call first runs the socket I/O of every member that is
 * ready, on the calling thread.
 *
 * ERRORS
 * RPMA_E_INVAL     - group, conn_ptr or what is NULL
 * RPMA_E_NO_EVENT  - nothing to report now
 * RPMA_E_PROVIDER  - a channel failed
 */
int rpma_conn_group_next(struct rpma_conn_group *group,
                         struct rpma_conn **conn_ptr, int *what);

/*
 * RPMA_EXT_F_MORE - a flag for rpma_read(), rpma_write(), rpma_send() and
 * the other posting calls, or'ed to RPMA_F_COMPLETION_*: the caller posts
 * another operation on the same connection right after this one, and the
 * provider may hold this one back until then, so that both leave together
 * (a doorbell for several work requests). tcp: both frames go in one
 * sendmsg — one wake-up of the peer instead of two (also behind a SEND
 * still pending). verbs: ignored (posted at once).
 * The next post must follow without delay and without the flag; if none
 * does, the held operation leaves with the provider's next send on that
 * connection or its next tick (tcp: 50 ms).
 */
#define RPMA_EXT_F_MORE (1 << 16)

#ifdef __cplusplus
}
#endif

#endif /* RPMA_EXT_H */
