/*
 * 09_epoll.c -- one thread serving many connections with epoll on
 * non-blocking endpoint and connection event fds.
 *
 *   09_epoll server <addr> <port> <clients>
 *   09_epoll client <addr> <port> <id>
 *
 * The server accepts connection requests as the endpoint fd becomes
 * readable (draining until RPMA_E_NO_EVENT), watches every connection's
 * event fd, and exits after <clients> connections were established and
 * closed. Each client connects with its id and disconnects shortly after.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common.h"

#define MAX_CLIENTS 16

static int
set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);
	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static int
server(const char *addr, const char *port, int clients)
{
	struct rpma_peer *peer = NULL;
	struct rpma_ep *ep = NULL;
	struct rpma_conn *conns[MAX_CLIENTS] = {NULL};
	int accepted = 0, established = 0, closed = 0;
	int epfd, ep_fd, ret;

	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
			&peer)))
		return ret;
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return report("rpma_ep_listen", ret);
	if ((ret = rpma_ep_get_fd(ep, &ep_fd)) || set_nonblock(ep_fd))
		return -1;
	/*
	 * No check that nothing is pending yet: a client started beside the
	 * server may already have connected. The drain below ends on
	 * RPMA_E_NO_EVENT, which is what a non-blocking fd reports.
	 */
	struct rpma_conn_req *req = NULL;
	epfd = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, ep_fd, &ev))
		return -1;

	while (closed < clients) {
		struct epoll_event events[8];
		int n = epoll_wait(epfd, events, 8, 10000);
		if (n <= 0) {
			fprintf(stderr, "server: timed out waiting\n");
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (events[i].data.ptr == NULL) {
				/* the endpoint: accept what is pending */
				while ((ret = rpma_ep_next_conn_req(ep, NULL,
						&req)) == 0) {
					struct rpma_conn *conn = NULL;
					int fd;
					if (accepted == MAX_CLIENTS ||
						(ret = rpma_conn_req_connect(
							&req, NULL, &conn)))
						return -1;
					conns[accepted++] = conn;
					if (rpma_conn_get_event_fd(conn, &fd) ||
							set_nonblock(fd))
						return -1;
					struct epoll_event cev = {
						.events = EPOLLIN,
						.data.ptr = conn};
					if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd,
							&cev))
						return -1;
				}
				if (ret != RPMA_E_NO_EVENT)
					return report("rpma_ep_next_conn_req",
						ret);
				continue;
			}
			struct rpma_conn *conn = events[i].data.ptr;
			enum rpma_conn_event event;
			while ((ret = rpma_conn_next_event(conn, &event)) == 0) {
				if (event == RPMA_CONN_ESTABLISHED) {
					established++;
				} else if (event == RPMA_CONN_CLOSED ||
						event == RPMA_CONN_LOST) {
					int fd;
					(void) rpma_conn_get_event_fd(conn, &fd);
					epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
					(void) rpma_conn_disconnect(conn);
					for (int c = 0; c < accepted; c++)
						if (conns[c] == conn)
							(void) rpma_conn_delete(
								&conns[c]);
					closed++;
					break;
				}
			}
			if (ret && ret != RPMA_E_NO_EVENT)
				return report("rpma_conn_next_event", ret);
		}
	}
	printf("server: %d established, %d closed\n", established, closed);
	close(epfd);
	(void) rpma_ep_shutdown(&ep);
	(void) rpma_peer_delete(&peer);
	return established == clients ? 0 : -1;
}

static int
client(const char *addr, const char *port, int id)
{
	struct rpma_peer *peer = NULL;
	struct rpma_conn *conn = NULL;
	int ret;

	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE,
			&peer)))
		return ret;
	struct rpma_conn_private_data pdata = {&id, sizeof(id)};
	if ((ret = client_connect(peer, addr, port, NULL, &pdata, &conn)))
		return ret;
	usleep(50 * 1000);
	ret = common_disconnect_and_wait_for_conn_close(&conn);
	printf("client %d: done\n", id);
	(void) rpma_peer_delete(&peer);
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
