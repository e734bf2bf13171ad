/*
 * 06_imm.c -- send with immediate data and write with immediate data.
 *
 *   06_imm server <addr> <port>
 *   06_imm client <addr> <port>
 *
 * The server posts two receives before accepting. The client sends a
 * message with immediate 0x1234, then writes into the server's region with
 * immediate 0x5678; the server checks both completions (opcode, the
 * IBV_WC_WITH_IMM flag, the immediate in network byte order, the data).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define SEND_IMM 0x1234u
#define WRITE_IMM 0x5678u
#define MSG "message with immediate"
#define WRITE_OFFSET 256
#define WRITTEN "written with immediate"

static int
check_wc(const struct ibv_wc *wc, enum ibv_wc_opcode opcode, uint32_t imm)
{
	if (wc->opcode != opcode || !(wc->wc_flags & IBV_WC_WITH_IMM) ||
			ntohl(wc->imm_data) != imm) {
		fprintf(stderr, "bad completion: opcode %d flags %d imm 0x%x\n",
			(int)wc->opcode, (int)wc->wc_flags,
			ntohl(wc->imm_data));
		return -1;
	}
	return 0;
}

static int
server(const char *addr, const char *port)
{
	struct rpma_peer *peer = NULL;
	struct rpma_ep *ep = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_cq *cq = NULL;
	struct common_data data;
	enum rpma_conn_event event;
	struct ibv_wc wc;
	int ret;

	char *buf = malloc_aligned(KILOBYTE);
	if (buf == NULL)
		return -1;
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, KILOBYTE,
			RPMA_MR_USAGE_RECV | RPMA_MR_USAGE_WRITE_DST, &mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = common_data_fill(&data, mr, NULL)))
		return ret;
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return report("rpma_ep_listen", ret);
	if ((ret = rpma_ep_next_conn_req(ep, NULL, &req)))
		return report("rpma_ep_next_conn_req", ret);
	if ((ret = rpma_conn_req_recv(req, mr, 0, 64, NULL)) ||
			(ret = rpma_conn_req_recv(req, mr, 64, 64, NULL)))
		return report("rpma_conn_req_recv", ret);
	struct rpma_conn_private_data pdata = {&data, sizeof(data)};
	if ((ret = rpma_conn_req_connect(&req, &pdata, &conn)))
		return report("rpma_conn_req_connect", ret);
	if ((ret = rpma_conn_next_event(conn, &event)) ||
			event != RPMA_CONN_ESTABLISHED)
		return -1;
	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return report("rpma_conn_get_cq", ret);
	if ((ret = wait_and_validate_any(cq, &wc)) ||
			(ret = check_wc(&wc, IBV_WC_RECV, SEND_IMM)))
		return -1;
	printf("server: send with imm 0x%x: %.*s (%u bytes)\n",
		ntohl(wc.imm_data), (int)wc.byte_len, buf, wc.byte_len);
	if ((ret = wait_and_validate_any(cq, &wc)) ||
			(ret = check_wc(&wc, IBV_WC_RECV_RDMA_WITH_IMM,
					WRITE_IMM)))
		return -1;
	printf("server: write with imm 0x%x: %s\n", ntohl(wc.imm_data),
		buf + WRITE_OFFSET);
	ret = common_wait_for_conn_close_and_disconnect(&conn);
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
	struct rpma_mr_local *mr = NULL;
	struct rpma_mr_remote *dst = NULL;
	struct rpma_cq *cq = NULL;
	struct ibv_wc wc;
	int ret;

	char *buf = malloc_aligned(KILOBYTE);
	if (buf == NULL)
		return -1;
	strcpy(buf, MSG);
	strcpy(buf + 512, WRITTEN);
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, buf, KILOBYTE,
			RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_WRITE_SRC, &mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = client_connect(peer, addr, port, NULL, NULL, &conn)))
		return ret;
	if ((ret = common_data_decode(conn, &dst)))
		return ret;
	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return report("rpma_conn_get_cq", ret);
	if ((ret = rpma_send_with_imm(conn, mr, 0, sizeof(MSG),
			RPMA_F_COMPLETION_ALWAYS, SEND_IMM, NULL)))
		return report("rpma_send_with_imm", ret);
	if ((ret = wait_and_validate_completion(cq, IBV_WC_SEND, &wc)))
		return ret;
	if ((ret = rpma_write_with_imm(conn, dst, WRITE_OFFSET, mr, 512,
			sizeof(WRITTEN), RPMA_F_COMPLETION_ALWAYS, WRITE_IMM,
			NULL)))
		return report("rpma_write_with_imm", ret);
	if ((ret = wait_and_validate_completion(cq, IBV_WC_RDMA_WRITE, &wc)))
		return ret;
	printf("client: sent both\n");
	ret = common_disconnect_and_wait_for_conn_close(&conn);
	(void) rpma_mr_remote_delete(&dst);
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
