/*
 * 03_write_flush.c -- one-sided write made durable by a persistent flush,
 * into a file mapping on the server.
 *
 *   03_write_flush server <addr> <port> <file>
 *   03_write_flush client <addr> <port>
 *
 * The server maps <file> (MAP_SHARED), registers it WRITE_DST |
 * FLUSH_TYPE_PERSISTENT and declares direct_write_to_pmem in its peer
 * configuration, so the client may use RPMA_FLUSH_TYPE_PERSISTENT. The
 * client writes a message, flushes it and prints "flushed" only after the
 * flush completed: from then on the message is in the file even if the
 * server dies.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

#define FILE_SIZE (64 * KILOBYTE)
#define MESSAGE "durable hello written by the client"

static int
server(const char *addr, const char *port, const char *path)
{
	struct rpma_peer *peer = NULL;
	struct rpma_ep *ep = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_peer_cfg *pcfg = NULL;
	struct common_data data;
	int ret;

	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, FILE_SIZE)) {
		perror(path);
		return -1;
	}
	char *mem = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			fd, 0);
	close(fd);
	if (mem == MAP_FAILED)
		return -1;
	if ((ret = common_peer_via_address(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
			&peer)))
		return ret;
	if ((ret = rpma_mr_reg(peer, mem, FILE_SIZE, RPMA_MR_USAGE_WRITE_DST |
			RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT, &mr)))
		return report("rpma_mr_reg", ret);
	if ((ret = rpma_peer_cfg_new(&pcfg)))
		return report("rpma_peer_cfg_new", ret);
	if ((ret = rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true)))
		return report("rpma_peer_cfg_set_direct_write_to_pmem", ret);
	if ((ret = common_data_fill(&data, mr, pcfg)))
		return ret;
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return report("rpma_ep_listen", ret);
	printf("server: listening\n");
	fflush(stdout);
	struct rpma_conn_private_data pdata = {&data, sizeof(data)};
	if ((ret = server_accept_connection(ep, NULL, &pdata, &conn)))
		return ret;
	ret = common_wait_for_conn_close_and_disconnect(&conn);
	printf("server: file holds: %s\n", mem);
	(void) rpma_peer_cfg_delete(&pcfg);
	(void) rpma_mr_dereg(&mr);
	(void) rpma_ep_shutdown(&ep);
	(void) rpma_peer_delete(&peer);
	munmap(mem, FILE_SIZE);
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
	int flush_type = 0;
	int ret;

	char *buf = malloc_aligned(KILOBYTE);
	if (buf == NULL)
		return -1;
	strcpy(buf, MESSAGE);
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
	if ((ret = rpma_mr_remote_get_flush_type(dst, &flush_type)))
		return report("rpma_mr_remote_get_flush_type", ret);
	if (!(flush_type & RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT)) {
		fprintf(stderr, "remote region is not persistent\n");
		return -1;
	}
	if ((ret = rpma_write(conn, dst, 0, src, 0, sizeof(MESSAGE),
			RPMA_F_COMPLETION_ON_ERROR, NULL)))
		return report("rpma_write", ret);
	if ((ret = rpma_flush(conn, dst, 0, sizeof(MESSAGE),
			RPMA_FLUSH_TYPE_PERSISTENT, RPMA_F_COMPLETION_ALWAYS,
			NULL)))
		return report("rpma_flush", ret);
	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return report("rpma_conn_get_cq", ret);
	if ((ret = wait_and_validate_completion(cq, IBV_WC_RDMA_READ, &wc)))
		return ret;
	printf("client: flushed\n");
	fflush(stdout);
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
	if (argc < 4 || (strcmp(argv[1], "server") == 0 && argc < 5)) {
		fprintf(stderr,
			"usage: %s server <addr> <port> <file> | client <addr> <port>\n",
			argv[0]);
		return 2;
	}
	int ret = strcmp(argv[1], "server") == 0
			? server(argv[2], argv[3], argv[4])
			: client(argv[2], argv[3]);
	return ret ? 1 : 0;
}
