/*
 * 02_read.c -- one-sided RDMA read.
 *
 *   02_read server <addr> <port>
 *   02_read client <addr> <port>
 *
 * The server registers a buffer holding a greeting (READ_SRC) and sends its
 * descriptor as private data; the server application then only waits for
 * the client to disconnect -- the read is served without it. The client
 * reads the greeting into its own READ_DST region and prints it.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define GREETING "Hello from the server's memory!"

static int
server(const char *addr, const char *port)
{
	struct rpma_peer *peer = NULL;
	struct rpma_ep *ep = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_conn *conn = NULL;
	struct common_data data;
	int ret;

	char *buf = malloc_aligned(KILOBYTE);
	if (buf == NULL)
		return -1;
	strcpy(buf, GREETING);
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, KILOBYTE, RPMA_MR_USAGE_READ_SRC,
			&mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = common_data_fill(&data, mr, NULL)))
		return ret;
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return report("rpma_ep_listen", ret);
	struct rpma_conn_private_data pdata = {&data, sizeof(data)};
	if ((ret = server_accept_connection(ep, NULL, &pdata, &conn)))
		return ret;
	ret = common_wait_for_conn_close_and_disconnect(&conn);
	printf("server: client disconnected\n");
	(void) rpma_mr_dereg(&mr);
	(void) rpma_ep_shutdown(&ep);
	(void) rpma_peer_delete(&peer);
	free(buf);
	return ret;
}

static int
client(const char *addr, const char *port)
{
	struct rpma_peer *peer = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_mr_local *dst = NULL;
	struct rpma_mr_remote *src = NULL;
	struct rpma_cq *cq = NULL;
	struct ibv_wc wc;
	size_t src_size = 0;
	int ret;

	char *buf = malloc_aligned(KILOBYTE);
	if (buf == NULL)
		return -1;
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, KILOBYTE, RPMA_MR_USAGE_READ_DST,
			&dst)))
		return report("rpma_mr_reg", ret);
	if ((ret = client_connect(peer, addr, port, NULL, NULL, &conn)))
		return ret;
	if ((ret = common_data_decode(conn, &src)))
		return ret;
	if ((ret = rpma_mr_remote_get_size(src, &src_size)))
		return report("rpma_mr_remote_get_size", ret);
	if ((ret = rpma_read(conn, dst, 0, src, 0, sizeof(GREETING),
			RPMA_F_COMPLETION_ALWAYS, NULL)))
		return report("rpma_read", ret);
	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return report("rpma_conn_get_cq", ret);
	if ((ret = wait_and_validate_completion(cq, IBV_WC_RDMA_READ, &wc)))
		return ret;
	printf("client: read %zu-byte region: %s\n", src_size, buf);
	ret = common_disconnect_and_wait_for_conn_close(&conn);
	(void) rpma_mr_remote_delete(&src);
	(void) rpma_mr_dereg(&dst);
	(void) rpma_peer_delete(&peer);
	free(buf);
	return ret;
}

int
main(int argc, char *argv[])
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s server|client <addr> <port>\n",
			argv[0]);
		return 2;
	}
	int ret = strcmp(argv[1], "server") == 0 ? server(argv[2], argv[3])
						 : client(argv[2], argv[3]);
	return ret ? 1 : 0;
}
