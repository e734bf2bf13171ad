/*
 * common.c -- helpers shared by the example programs (public API only).
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
report(const char *what, int rc)
{
	fprintf(stderr, "%s: %s\n", what, rpma_err_2str(rc));
	return rc;
}

int
common_peer_via_address(const char *addr,
			enum rpma_util_ibv_context_type type,
			struct rpma_peer **peer_ptr)
{
	struct ibv_context *ctx = NULL;
	int ret = rpma_utils_get_ibv_context(addr, type, &ctx);
	if (ret)
		return report("rpma_utils_get_ibv_context", ret);
	ret = rpma_peer_new(ctx, peer_ptr);
	if (ret)
		return report("rpma_peer_new", ret);
	return 0;
}

int
client_connect(struct rpma_peer *peer, const char *addr, const char *port,
	       const struct rpma_conn_cfg *cfg,
	       const struct rpma_conn_private_data *pdata,
	       struct rpma_conn **conn_ptr)
{
	for (int attempt = 0; attempt < 50; attempt++) {
		struct rpma_conn_req *req = NULL;
		struct rpma_conn *conn = NULL;
		enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
		int ret = rpma_conn_req_new(peer, addr, port, cfg, &req);
		if (ret)
			return report("rpma_conn_req_new", ret);
		ret = rpma_conn_req_connect(&req, pdata, &conn);
		if (ret)
			return report("rpma_conn_req_connect", ret);
		ret = rpma_conn_next_event(conn, &event);
		if (ret) {
			(void) rpma_conn_delete(&conn);
			return report("rpma_conn_next_event", ret);
		}
		if (event == RPMA_CONN_ESTABLISHED) {
			*conn_ptr = conn;
			return 0;
		}
		(void) rpma_conn_delete(&conn);
		if (event != RPMA_CONN_REJECTED &&
		    event != RPMA_CONN_UNREACHABLE) {
			fprintf(stderr, "unexpected event: %s\n",
				rpma_utils_conn_event_2str(event));
			return -1;
		}
		usleep(100 * 1000); /* the server may not listen yet */
	}
	fprintf(stderr, "cannot connect to %s:%s\n", addr, port);
	return -1;
}

int
server_accept_connection(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg,
			 const struct rpma_conn_private_data *pdata,
			 struct rpma_conn **conn_ptr)
{
	struct rpma_conn_req *req = NULL;
	enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
	int ret = rpma_ep_next_conn_req(ep, cfg, &req);
	if (ret)
		return report("rpma_ep_next_conn_req", ret);
	ret = rpma_conn_req_connect(&req, pdata, conn_ptr);
	if (ret)
		return report("rpma_conn_req_connect", ret);
	ret = rpma_conn_next_event(*conn_ptr, &event);
	if (!ret && event != RPMA_CONN_ESTABLISHED) {
		fprintf(stderr, "unexpected event: %s\n",
			rpma_utils_conn_event_2str(event));
		ret = -1;
	}
	if (ret)
		(void) rpma_conn_delete(conn_ptr);
	return ret;
}

int
common_wait_for_conn_close_and_disconnect(struct rpma_conn **conn_ptr)
{
	enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
	int ret = rpma_conn_next_event(*conn_ptr, &event);
	if (ret)
		report("rpma_conn_next_event", ret);
	else if (event != RPMA_CONN_CLOSED)
		fprintf(stderr, "unexpected event: %s\n",
			rpma_utils_conn_event_2str(event));
	(void) rpma_conn_disconnect(*conn_ptr);
	(void) rpma_conn_delete(conn_ptr);
	return ret;
}

int
common_disconnect_and_wait_for_conn_close(struct rpma_conn **conn_ptr)
{
	enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
	int ret = rpma_conn_disconnect(*conn_ptr);
	if (!ret) {
		ret = rpma_conn_next_event(*conn_ptr, &event);
		if (!ret && event != RPMA_CONN_CLOSED)
			fprintf(stderr, "unexpected event: %s\n",
				rpma_utils_conn_event_2str(event));
	}
	(void) rpma_conn_delete(conn_ptr);
	return ret;
}

int
wait_and_validate_completion(struct rpma_cq *cq, enum ibv_wc_opcode expected,
			     struct ibv_wc *wc)
{
	int ret = wait_and_validate_any(cq, wc);
	if (ret)
		return ret;
	if (wc->opcode != expected) {
		fprintf(stderr, "unexpected opcode %d (expected %d)\n",
			(int)wc->opcode, (int)expected);
		return -1;
	}
	return 0;
}

int
wait_and_validate_any(struct rpma_cq *cq, struct ibv_wc *wc)
{
	int ret;
	for (;;) {
		ret = rpma_cq_get_wc(cq, 1, wc, NULL);
		if (ret == 0)
			break;
		if (ret != RPMA_E_NO_COMPLETION)
			return report("rpma_cq_get_wc", ret);
		ret = rpma_cq_wait(cq);
		if (ret)
			return report("rpma_cq_wait", ret);
	}
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "completion failed: %s\n",
			ibv_wc_status_str(wc->status));
		return -1;
	}
	return 0;
}

void *
malloc_aligned(size_t size)
{
	long pagesize = sysconf(_SC_PAGESIZE);
	void *mem = NULL;
	if (pagesize < 0 || posix_memalign(&mem, (size_t)pagesize, size))
		return NULL;
	memset(mem, 0, size);
	return mem;
}

int
common_data_fill(struct common_data *data, const struct rpma_mr_local *mr,
		 const struct rpma_peer_cfg *pcfg)
{
	size_t mr_size = 0, pcfg_size = 0;
	int ret;
	memset(data, 0, sizeof(*data));
	if ((ret = rpma_mr_get_descriptor_size(mr, &mr_size)))
		return report("rpma_mr_get_descriptor_size", ret);
	if (mr_size > DESCRIPTORS_MAX_SIZE)
		return -1;
	if ((ret = rpma_mr_get_descriptor(mr, data->descriptors)))
		return report("rpma_mr_get_descriptor", ret);
	data->mr_desc_size = (uint8_t)mr_size;
	if (pcfg) {
		if ((ret = rpma_peer_cfg_get_descriptor_size(pcfg, &pcfg_size)))
			return report("rpma_peer_cfg_get_descriptor_size", ret);
		if (pcfg_size > DESCRIPTORS_MAX_SIZE)
			return -1;
		if ((ret = rpma_peer_cfg_get_descriptor(pcfg,
				data->descriptors + mr_size)))
			return report("rpma_peer_cfg_get_descriptor", ret);
		data->pcfg_desc_size = (uint8_t)pcfg_size;
	}
	return 0;
}

int
common_data_decode(struct rpma_conn *conn, struct rpma_mr_remote **mr_ptr)
{
	struct rpma_conn_private_data pdata;
	struct common_data data;
	int ret;
	if ((ret = rpma_conn_get_private_data(conn, &pdata)))
		return report("rpma_conn_get_private_data", ret);
	if (pdata.ptr == NULL || pdata.len < sizeof(data)) {
		fprintf(stderr, "server sent no descriptors\n");
		return -1;
	}
	memcpy(&data, pdata.ptr, sizeof(data));
	if ((ret = rpma_mr_remote_from_descriptor(data.descriptors,
			data.mr_desc_size, mr_ptr)))
		return report("rpma_mr_remote_from_descriptor", ret);
	if (data.pcfg_desc_size) {
		struct rpma_peer_cfg *pcfg = NULL;
		if ((ret = rpma_peer_cfg_from_descriptor(
				data.descriptors + data.mr_desc_size,
				data.pcfg_desc_size, &pcfg)))
			return report("rpma_peer_cfg_from_descriptor", ret);
		ret = rpma_conn_apply_remote_peer_cfg(conn, pcfg);
		(void) rpma_peer_cfg_delete(&pcfg);
		if (ret)
			return report("rpma_conn_apply_remote_peer_cfg", ret);
	}
	return 0;
}
