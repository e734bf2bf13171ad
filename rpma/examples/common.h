/*
 * common.h -- helpers shared by the example programs, in the style of
 * librpma's examples/common. Everything here uses only the public librpma
 * API, so these programs build unchanged against librpma itself.
 */
#ifndef RPMA_EXAMPLES_COMMON_H
#define RPMA_EXAMPLES_COMMON_H

#include <librpma.h>
#include <stdint.h>
#include <stdio.h>

#define KILOBYTE 1024

/* Prints "<what>: <librpma error>" and returns rc. */
int report(const char *what, int rc);

/* Creates a peer for an address (LOCAL for servers, REMOTE for clients). */
int common_peer_via_address(const char *addr,
			    enum rpma_util_ibv_context_type type,
			    struct rpma_peer **peer_ptr);

/*
 * Connects to addr:port and waits for RPMA_CONN_ESTABLISHED; retries up to
 * 50 times (100 ms apart) while the server is not listening yet.
 */
int client_connect(struct rpma_peer *peer, const char *addr, const char *port,
		   const struct rpma_conn_cfg *cfg,
		   const struct rpma_conn_private_data *pdata,
		   struct rpma_conn **conn_ptr);

/* Takes the next request from ep, accepts it, waits for ESTABLISHED. */
int server_accept_connection(struct rpma_ep *ep,
			     const struct rpma_conn_cfg *cfg,
			     const struct rpma_conn_private_data *pdata,
			     struct rpma_conn **conn_ptr);

/* Waits for RPMA_CONN_CLOSED, then disconnects and deletes. */
int common_wait_for_conn_close_and_disconnect(struct rpma_conn **conn_ptr);

/* Disconnects, waits for RPMA_CONN_CLOSED, deletes. */
int common_disconnect_and_wait_for_conn_close(struct rpma_conn **conn_ptr);

/*
 * Waits for one completion on cq (rpma_cq_wait + rpma_cq_get_wc, tolerating
 * spurious wake-ups) and checks its status and opcode.
 */
int wait_and_validate_completion(struct rpma_cq *cq,
				 enum ibv_wc_opcode expected,
				 struct ibv_wc *wc);

/*
 * What servers send as accept private data: descriptors of the region the
 * client may use and of the server's peer configuration.
 */
#define DESCRIPTORS_MAX_SIZE 24
struct common_data {
	uint16_t data_offset; /* user data offset inside the region */
	uint8_t mr_desc_size;
	uint8_t pcfg_desc_size;
	char descriptors[2 * DESCRIPTORS_MAX_SIZE];
};

/* Fills *data from mr (and pcfg if not NULL). */
int common_data_fill(struct common_data *data, const struct rpma_mr_local *mr,
		     const struct rpma_peer_cfg *pcfg);

/*
 * Decodes the server's common_data from the connection's private data into
 * a remote region and (if pcfg_applied) applies the peer configuration.
 */
int common_data_decode(struct rpma_conn *conn, struct rpma_mr_remote **mr_ptr);

/* As wait_and_validate_completion() but accepts any opcode. */
int wait_and_validate_any(struct rpma_cq *cq, struct ibv_wc *wc);

/* Allocates page-aligned memory (free with free()). */
void *malloc_aligned(size_t size);

#endif /* RPMA_EXAMPLES_COMMON_H */
