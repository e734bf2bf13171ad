// struct rpma_conn_cfg: parameters read when a connection request is made.
#ifndef RPMA_CONN_CFG_H_
#define RPMA_CONN_CFG_H_

#include <cstdint>

#include "librpma.h"

struct rpma_conn_cfg {
  int timeout_ms = RPMA_DEFAULT_TIMEOUT_MS;
  uint32_t cq_size = 10;
  uint32_t rcq_size = 0;  // 0: receive completions go to the main CQ
  uint32_t sq_size = 10;
  uint32_t rq_size = 10;
  bool shared_channel = false;
  struct rpma_srq* srq = nullptr;  // not owned
};

namespace rpma {
// What a NULL cfg means in rpma_conn_req_new / rpma_ep_next_conn_req.
const rpma_conn_cfg& DefaultConnCfg();
}  // namespace rpma

#endif  // RPMA_CONN_CFG_H_
