/*
 * 08_rcq_channel.c -- a separate receive CQ on one shared completion
 * channel, waited on with rpma_conn_wait().
 *
 *   08_rcq_channel server <addr> <port>
 *   08_rcq_channel client <addr> <port>
 *
 * The client's connection has rcq_size > 0 and a shared completion
 * channel: its send completion arrives on the main CQ, the server's answer
 * on the receive CQ, and rpma_conn_wait() says which one fired. The server
 * answers every message with the same text in upper case.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MSG "ping over a shared channel"
#define MSG_SIZE 64

static int
server(const char *addr, const char *port)
{
	struct rpma_peer *peer = NULL;
	struct rpma_ep *ep = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_cq *cq = NULL;
	enum rpma_conn_event event;
	struct ibv_wc wc;
	int ret;

	char *buf = malloc_aligned(2 * MSG_SIZE);
	if (buf == NULL)
		return -1;
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, 2 * MSG_SIZE,
			RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return report("rpma_ep_listen", ret);
	if ((ret = rpma_ep_next_conn_req(ep, NULL, &req)))
		return report("rpma_ep_next_conn_req", ret);
	if ((ret = rpma_conn_req_recv(req, mr, 0, MSG_SIZE, NULL)))
		return report("rpma_conn_req_recv", ret);
	if ((ret = rpma_conn_req_connect(&req, NULL, &conn)))
		return report("rpma_conn_req_connect", ret);
	if ((ret = rpma_conn_next_event(conn, &event)) ||
			event != RPMA_CONN_ESTABLISHED)
		return -1;
	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return report("rpma_conn_get_cq", ret);
	if ((ret = wait_and_validate_completion(cq, IBV_WC_RECV, &wc)))
		return ret;
	for (uint32_t i = 0; i < wc.byte_len && i < MSG_SIZE; i++)
		buf[MSG_SIZE + i] = (char)toupper((unsigned char)buf[i]);
	if ((ret = rpma_send(conn, mr, MSG_SIZE, wc.byte_len,
			RPMA_F_COMPLETION_ALWAYS, NULL)))
		return report("rpma_send", ret);
	if ((ret = wait_and_validate_completion(cq, IBV_WC_SEND, &wc)))
		return ret;
	ret = common_wait_for_conn_close_and_disconnect(&conn);
	printf("server: answered\n");
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
	struct rpma_conn_cfg *cfg = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_cq *main_cq = NULL, *rcq = NULL, *fired = NULL;
	struct ibv_wc wc;
	bool is_rcq = false;
	int fd = -1, ret;
	int got_send = 0, got_recv = 0;

	char *buf = malloc_aligned(2 * MSG_SIZE);
	if (buf == NULL)
		return -1;
	strcpy(buf, MSG);
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, 2 * MSG_SIZE,
			RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = rpma_conn_cfg_new(&cfg)) ||
			(ret = rpma_conn_cfg_set_rcq_size(cfg, 10)) ||
			(ret = rpma_conn_cfg_set_compl_channel(cfg, true)))
		return report("rpma_conn_cfg", ret);
	if ((ret = client_connect(peer, addr, port, cfg, NULL, &conn)))
		return ret;
	if ((ret = rpma_conn_get_compl_fd(conn, &fd)) || fd < 0)
		return report("rpma_conn_get_compl_fd", ret);
	if ((ret = rpma_conn_get_cq(conn, &main_cq)) ||
			(ret = rpma_conn_get_rcq(conn, &rcq)) || rcq == NULL)
		return report("rpma_conn_get_rcq", ret);
	if (rpma_cq_wait(main_cq) != RPMA_E_SHARED_CHANNEL) {
		fprintf(stderr, "rpma_cq_wait on a shared channel accepted\n");
		return -1;
	}
	if ((ret = rpma_recv(conn, mr, MSG_SIZE, MSG_SIZE, NULL)))
		return report("rpma_recv", ret);
	if ((ret = rpma_send(conn, mr, 0, sizeof(MSG),
			RPMA_F_COMPLETION_ALWAYS, NULL)))
		return report("rpma_send", ret);
	while (!got_send || !got_recv) {
		if ((ret = rpma_conn_wait(conn, 0, &fired, &is_rcq)))
			return report("rpma_conn_wait", ret);
		if (is_rcq != (fired == rcq))
			return -1;
		while (rpma_cq_get_wc(fired, 1, &wc, NULL) == 0) {
			if (wc.status != IBV_WC_SUCCESS)
				return -1;
			if (is_rcq && wc.opcode == IBV_WC_RECV)
				got_recv = 1;
			else if (!is_rcq && wc.opcode == IBV_WC_SEND)
				got_send = 1;
			else
				return -1;
		}
	}
	printf("client: send on the main CQ, answer on the receive CQ: %s\n",
		buf + MSG_SIZE);
	ret = common_disconnect_and_wait_for_conn_close(&conn);
	(void) rpma_conn_cfg_delete(&cfg);
	(void) rpma_mr_dereg(&mr);
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
