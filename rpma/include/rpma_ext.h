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

#ifdef __cplusplus
}
#endif

#endif /* RPMA_EXT_H */
