/*
 * 01_connection.c -- connection with private data both ways.
 *
 *   01_connection server <addr> <port>
 *   01_connection client <addr> <port>
 *
 * The client connects with "hello from client" as private data; the server
 * reads it on the request and on the connection, accepts with "hello from
 * server", which the client reads after RPMA_CONN_ESTABLISHED. The client
 * then disconnects; both sides see RPMA_CONN_CLOSED.
 */
#include <string.h>
#include <stdlib.h>

#include "common.h"

static int
server(const char *addr, const char *port)
{
	struct rpma_peer *peer = NULL;
	struct rpma_ep *ep = NULL;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_conn_private_data pdata;
	enum rpma_conn_event event;
	const char *msg = "hello from server";
	int ret;

	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
			&peer)))
		return ret;
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return report("rpma_ep_listen", ret);
	if ((ret = rpma_ep_next_conn_req(ep, NULL, &req)))
		return report("rpma_ep_next_conn_req", ret);
	if ((ret = rpma_conn_req_get_private_data(req, &pdata)))
		return report("rpma_conn_req_get_private_data", ret);
	printf("server: request private data: %.*s\n", (int)pdata.len,
		(char *)pdata.ptr);

	struct rpma_conn_private_data reply = {(void *)msg, strlen(msg) + 1};
	if ((ret = rpma_conn_req_connect(&req, &reply, &conn)))
		return report("rpma_conn_req_connect", ret);
	if ((ret = rpma_conn_next_event(conn, &event)))
		return report("rpma_conn_next_event", ret);
	printf("server: %s\n", rpma_utils_conn_event_2str(event));
	if ((ret = rpma_conn_get_private_data(conn, &pdata)))
		return report("rpma_conn_get_private_data", ret);
	printf("server: connection private data: %.*s\n", (int)pdata.len,
		(char *)pdata.ptr);

	if ((ret = rpma_conn_next_event(conn, &event)))
		return report("rpma_conn_next_event", ret);
	printf("server: %s\n", rpma_utils_conn_event_2str(event));
	(void) rpma_conn_disconnect(conn);
	(void) rpma_conn_delete(&conn);
	(void) rpma_ep_shutdown(&ep);
	(void) rpma_peer_delete(&peer);
	return event == RPMA_CONN_CLOSED ? 0 : -1;
}

static int
client(const char *addr, const char *port)
{
	struct rpma_peer *peer = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_conn_private_data pdata;
	const char *msg = "hello from client";
	int ret;

	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE,
			&peer)))
		return ret;
	struct rpma_conn_private_data hello = {(void *)msg, strlen(msg) + 1};
	if ((ret = client_connect(peer, addr, port, NULL, &hello, &conn)))
		return ret;
	printf("client: %s\n",
		rpma_utils_conn_event_2str(RPMA_CONN_ESTABLISHED));
	if ((ret = rpma_conn_get_private_data(conn, &pdata)))
		return report("rpma_conn_get_private_data", ret);
	printf("client: server private data: %.*s\n", (int)pdata.len,
		(char *)pdata.ptr);
	ret = common_disconnect_and_wait_for_conn_close(&conn);
	printf("client: %s\n", rpma_utils_conn_event_2str(RPMA_CONN_CLOSED));
	(void) rpma_peer_delete(&peer);
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
