/*
 * 04_atomic_write.c -- write, visibility flush, then an 8-byte atomic
 * write of a flag that publishes the data (the flush -> atomic_write order
 * is guaranteed).
 *
 *   04_atomic_write server <addr> <port>
 *   04_atomic_write client <addr> <port>
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define FLAG_OFFSET 0
#define PAYLOAD_OFFSET 64
#define PAYLOAD "payload published by an atomic flag"

static int
server(const char *addr, const char *port)
{
	struct rpma_peer *peer = NULL;
	struct rpma_ep *ep = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_conn *conn = NULL;
	struct common_data data;
	int ret;

	char *mem = malloc_aligned(KILOBYTE);
	if (mem == NULL)
		return -1;
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, mem, KILOBYTE, RPMA_MR_USAGE_WRITE_DST |
			RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY, &mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = common_data_fill(&data, mr, NULL)))
		return ret;
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return report("rpma_ep_listen", ret);
	struct rpma_conn_private_data pdata = {&data, sizeof(data)};
	if ((ret = server_accept_connection(ep, NULL, &pdata, &conn)))
		return ret;
	ret = common_wait_for_conn_close_and_disconnect(&conn);
	printf("server: flag=%.8s payload=%s\n", mem + FLAG_OFFSET,
		mem + PAYLOAD_OFFSET);
	(void) rpma_mr_dereg(&mr);
	(void) rpma_ep_shutdown(&ep);
	(void) rpma_peer_delete(&peer);
	free(mem);
	return ret;
}

static int
client(const char *addr, const char *port)
{
	struct rpma_peer *peer = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_mr_local *src = NULL;
	struct rpma_mr_remote *dst = NULL;
	struct rpma_cq *cq = NULL;
	struct ibv_wc wc;
	const char flag[8] = "READY";
	int ret;

	char *buf = malloc_aligned(KILOBYTE);
	if (buf == NULL)
		return -1;
	strcpy(buf, PAYLOAD);
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, KILOBYTE, RPMA_MR_USAGE_WRITE_SRC,
			&src)))
		return report("rpma_mr_reg", ret);
	if ((ret = client_connect(peer, addr, port, NULL, NULL, &conn)))
		return ret;
	if ((ret = common_data_decode(conn, &dst)))
		return ret;
	if ((ret = rpma_write(conn, dst, PAYLOAD_OFFSET, src, 0,
			sizeof(PAYLOAD), RPMA_F_COMPLETION_ON_ERROR, NULL)))
		return report("rpma_write", ret);
	if ((ret = rpma_flush(conn, dst, PAYLOAD_OFFSET, sizeof(PAYLOAD),
			RPMA_FLUSH_TYPE_VISIBILITY, RPMA_F_COMPLETION_ON_ERROR,
			NULL)))
		return report("rpma_flush", ret);
	/* an unaligned offset is refused synchronously */
	if (rpma_atomic_write(conn, dst, FLAG_OFFSET + 1, flag,
			RPMA_F_COMPLETION_ALWAYS, NULL) != RPMA_E_INVAL) {
		fprintf(stderr, "unaligned atomic write accepted\n");
		return -1;
	}
	if ((ret = rpma_atomic_write(conn, dst, FLAG_OFFSET, flag,
			RPMA_F_COMPLETION_ALWAYS, NULL)))
		return report("rpma_atomic_write", ret);
	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return report("rpma_conn_get_cq", ret);
	if ((ret = wait_and_validate_completion(cq, IBV_WC_RDMA_WRITE, &wc)))
		return ret;
	printf("client: flag published\n");
	ret = common_disconnect_and_wait_for_conn_close(&conn);
	(void) rpma_mr_remote_delete(&dst);
	(void) rpma_mr_dereg(&src);
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
