/*
 * 07_srq.c -- a shared receive queue serving several connections.
 *
 *   07_srq server <addr> <port> <clients>
 *   07_srq client <addr> <port> <id>
 *
 * The server creates an SRQ with its own receive CQ and accepts <clients>
 * connections on it. Each client connects with its id as private data and
 * sends two messages carrying that id. The server tells the senders apart
 * only by wc.qp_num == rpma_conn_get_qp_num() and checks each message came
 * from the connection that announced that id.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAX_CLIENTS 8
#define MSGS_PER_CLIENT 2
#define MSG_SIZE 64

static int
server(const char *addr, const char *port, int clients)
{
	struct rpma_peer *peer = NULL;
	struct rpma_ep *ep = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_srq_cfg *srq_cfg = NULL;
	struct rpma_srq *srq = NULL;
	struct rpma_cq *rcq = NULL;
	struct rpma_conn_cfg *cfg = NULL;
	struct rpma_conn *conns[MAX_CLIENTS] = {NULL};
	uint32_t qp_nums[MAX_CLIENTS];
	int ids[MAX_CLIENTS];
	struct ibv_wc wc;
	int ret;
	const int total = clients * MSGS_PER_CLIENT;

	char *buf = malloc_aligned((size_t)total * MSG_SIZE);
	if (buf == NULL)
		return -1;
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, (size_t)total * MSG_SIZE,
			RPMA_MR_USAGE_RECV, &mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = rpma_srq_cfg_new(&srq_cfg)) ||
			(ret = rpma_srq_cfg_set_rq_size(srq_cfg, 32)) ||
			(ret = rpma_srq_cfg_set_rcq_size(srq_cfg, 32)))
		return report("rpma_srq_cfg", ret);
	if ((ret = rpma_srq_new(peer, srq_cfg, &srq)))
		return report("rpma_srq_new", ret);
	if ((ret = rpma_srq_get_rcq(srq, &rcq)) || rcq == NULL)
		return report("rpma_srq_get_rcq", ret);
	for (int i = 0; i < total; i++)
		if ((ret = rpma_srq_recv(srq, mr, (size_t)i * MSG_SIZE,
				MSG_SIZE, (void *)(uintptr_t)i)))
			return report("rpma_srq_recv", ret);
	if ((ret = rpma_conn_cfg_new(&cfg)) ||
			(ret = rpma_conn_cfg_set_srq(cfg, srq)))
		return report("rpma_conn_cfg", ret);
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return report("rpma_ep_listen", ret);
	for (int c = 0; c < clients; c++) {
		struct rpma_conn_private_data pdata;
		if ((ret = server_accept_connection(ep, cfg, NULL, &conns[c])))
			return ret;
		if ((ret = rpma_conn_get_private_data(conns[c], &pdata)) ||
				pdata.len < sizeof(int))
			return -1;
		memcpy(&ids[c], pdata.ptr, sizeof(int));
		if ((ret = rpma_conn_get_qp_num(conns[c], &qp_nums[c])))
			return report("rpma_conn_get_qp_num", ret);
	}
	for (int m = 0; m < total; m++) {
		int id = -1, c;
		if ((ret = wait_and_validate_completion(rcq, IBV_WC_RECV, &wc)))
			return ret;
		for (c = 0; c < clients && qp_nums[c] != wc.qp_num; c++)
			;
		if (c == clients) {
			fprintf(stderr, "unknown qp_num %u\n", wc.qp_num);
			return -1;
		}
		/* op_context of the receive names its buffer */
		sscanf(buf + (size_t)wc.wr_id * MSG_SIZE, "from client %d", &id);
		if (id != ids[c]) {
			fprintf(stderr, "message of client %d on the QP of %d\n",
				id, ids[c]);
			return -1;
		}
	}
	printf("server: %d messages from %d connections, every qp_num matched\n",
		total, clients);
	for (int c = 0; c < clients; c++)
		(void) common_wait_for_conn_close_and_disconnect(&conns[c]);
	(void) rpma_conn_cfg_delete(&cfg);
	(void) rpma_srq_delete(&srq);
	(void) rpma_srq_cfg_delete(&srq_cfg);
	(void) rpma_mr_dereg(&mr);
	(void) rpma_ep_shutdown(&ep);
	(void) rpma_peer_delete(&peer);
	free(buf);
	return 0;
}

static int
client(const char *addr, const char *port, int id)
{
	struct rpma_peer *peer = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_cq *cq = NULL;
	struct ibv_wc wc;
	int ret;

	char *buf = malloc_aligned(MSG_SIZE);
	if (buf == NULL)
		return -1;
	snprintf(buf, MSG_SIZE, "from client %d", id);
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, MSG_SIZE, RPMA_MR_USAGE_SEND, &mr)))
		return report("rpma_mr_reg", ret);
	struct rpma_conn_private_data pdata = {&id, sizeof(id)};
	if ((ret = client_connect(peer, addr, port, NULL, &pdata, &conn)))
		return ret;
	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return report("rpma_conn_get_cq", ret);
	for (int i = 0; i < MSGS_PER_CLIENT; i++) {
		if ((ret = rpma_send(conn, mr, 0, MSG_SIZE,
				RPMA_F_COMPLETION_ALWAYS, NULL)))
			return report("rpma_send", ret);
		if ((ret = wait_and_validate_completion(cq, IBV_WC_SEND, &wc)))
			return ret;
	}
	printf("client %d: sent %d messages\n", id, MSGS_PER_CLIENT);
	ret = common_disconnect_and_wait_for_conn_close(&conn);
	(void) rpma_mr_dereg(&mr);
	(void) rpma_peer_delete(&peer);
	free(buf);
	return ret;
}

int
main(int argc, char *argv[])
{
	if (argc < 5) {
		fprintf(stderr,
			"usage: %s server <addr> <port> <clients> | client <addr> <port> <id>\n",
			argv[0]);
		return 2;
	}
	int n = atoi(argv[4]);
	if (strcmp(argv[1], "server") == 0 && (n < 1 || n > MAX_CLIENTS)) {
		fprintf(stderr, "clients must be 1..%d\n", MAX_CLIENTS);
		return 2;
	}
	int ret = strcmp(argv[1], "server") == 0
			? server(argv[2], argv[3], n)
			: client(argv[2], argv[3], n);
	return ret ? 1 : 0;
}
