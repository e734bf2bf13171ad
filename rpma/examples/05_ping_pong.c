/*
 * 05_ping_pong.c -- two-sided messages: the client sends a counter, the
 * server answers with counter + 1, for a number of rounds.
 *
 *   05_ping_pong server <addr> <port>
 *   05_ping_pong client <addr> <port> [rounds]
 *
 * The server posts its first receive with rpma_conn_req_recv() before
 * accepting, so the client's first message always finds a buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MSG_SIZE sizeof(uint64_t)
#define RECV_OFFSET 0
#define SEND_OFFSET 64
#define STOP UINT64_MAX

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
	uint64_t rounds = 0;
	int ret;

	char *buf = malloc_aligned(KILOBYTE);
	if (buf == NULL)
		return -1;
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, KILOBYTE,
			RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return report("rpma_ep_listen", ret);
	if ((ret = rpma_ep_next_conn_req(ep, NULL, &req)))
		return report("rpma_ep_next_conn_req", ret);
	if ((ret = rpma_conn_req_recv(req, mr, RECV_OFFSET, MSG_SIZE, NULL)))
		return report("rpma_conn_req_recv", ret);
	if ((ret = rpma_conn_req_connect(&req, NULL, &conn)))
		return report("rpma_conn_req_connect", ret);
	if ((ret = rpma_conn_next_event(conn, &event)) ||
			event != RPMA_CONN_ESTABLISHED)
		return -1;
	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return report("rpma_conn_get_cq", ret);
	for (;;) {
		uint64_t value;
		/* the receive completes; the previous send may complete too */
		do {
			if ((ret = wait_and_validate_any(cq, &wc)))
				return ret;
		} while (wc.opcode != IBV_WC_RECV);
		if (wc.byte_len != MSG_SIZE) {
			fprintf(stderr, "bad message size %u\n", wc.byte_len);
			return -1;
		}
		memcpy(&value, buf + RECV_OFFSET, MSG_SIZE);
		if (value == STOP)
			break;
		rounds++;
		value++;
		memcpy(buf + SEND_OFFSET, &value, MSG_SIZE);
		if ((ret = rpma_recv(conn, mr, RECV_OFFSET, MSG_SIZE, NULL)))
			return report("rpma_recv", ret);
		if ((ret = rpma_send(conn, mr, SEND_OFFSET, MSG_SIZE,
				RPMA_F_COMPLETION_ALWAYS, NULL)))
			return report("rpma_send", ret);
	}
	printf("server: %llu rounds\n", (unsigned long long)rounds);
	ret = common_wait_for_conn_close_and_disconnect(&conn);
	(void) rpma_mr_dereg(&mr);
	(void) rpma_ep_shutdown(&ep);
	(void) rpma_peer_delete(&peer);
	free(buf);
	return ret;
}

static int
client(const char *addr, const char *port, uint64_t rounds)
{
	struct rpma_peer *peer = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_cq *cq = NULL;
	struct ibv_wc wc;
	uint64_t value = 0;
	int ret;

	char *buf = malloc_aligned(KILOBYTE);
	if (buf == NULL)
		return -1;
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, KILOBYTE,
			RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = client_connect(peer, addr, port, NULL, NULL, &conn)))
		return ret;
	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return report("rpma_conn_get_cq", ret);
	for (uint64_t i = 0; i < rounds; i++) {
		memcpy(buf + SEND_OFFSET, &value, MSG_SIZE);
		if ((ret = rpma_recv(conn, mr, RECV_OFFSET, MSG_SIZE, NULL)))
			return report("rpma_recv", ret);
		if ((ret = rpma_send(conn, mr, SEND_OFFSET, MSG_SIZE,
				RPMA_F_COMPLETION_ALWAYS, NULL)))
			return report("rpma_send", ret);
		do {
			if ((ret = wait_and_validate_any(cq, &wc)))
				return ret;
		} while (wc.opcode != IBV_WC_RECV);
		uint64_t answer;
		memcpy(&answer, buf + RECV_OFFSET, MSG_SIZE);
		if (answer != value + 1) {
			fprintf(stderr, "round %llu: got %llu\n",
				(unsigned long long)i,
				(unsigned long long)answer);
			return -1;
		}
		value = answer;
	}
	value = STOP;
	memcpy(buf + SEND_OFFSET, &value, MSG_SIZE);
	if ((ret = rpma_send(conn, mr, SEND_OFFSET, MSG_SIZE,
			RPMA_F_COMPLETION_ALWAYS, NULL)))
		return report("rpma_send", ret);
	do {
		if ((ret = wait_and_validate_any(cq, &wc)))
			return ret;
	} while (wc.opcode != IBV_WC_SEND);
	printf("client: %llu rounds, last value %llu\n",
		(unsigned long long)rounds, (unsigned long long)(rounds));
	ret = common_disconnect_and_wait_for_conn_close(&conn);
	(void) rpma_mr_dereg(&mr);
	(void) rpma_peer_delete(&peer);
	free(buf);
	return ret;
}

int
main(int argc, char *argv[])
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s server|client <addr> <port> [rounds]\n",
			argv[0]);
		return 2;
	}
	uint64_t rounds = argc > 4 ? strtoull(argv[4], NULL, 10) : 100;
	int ret = strcmp(argv[1], "server") == 0
			? server(argv[2], argv[3])
			: client(argv[2], argv[3], rounds);
	return ret ? 1 : 0;
}
