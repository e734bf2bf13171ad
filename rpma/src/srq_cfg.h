// struct rpma_srq_cfg: parameters of rpma_srq_new().
#ifndef RPMA_SRQ_CFG_H_
#define RPMA_SRQ_CFG_H_

#include <cstdint>

// librpma's code uses 20/20 (RPMA_DEFAULT_SRQ_SIZE); its header says 100.
struct rpma_srq_cfg {
  uint32_t rq_size = 20;
  uint32_t rcq_size = 20;  // 0: no receive CQ of the SRQ's own
};

#endif  // RPMA_SRQ_CFG_H_
