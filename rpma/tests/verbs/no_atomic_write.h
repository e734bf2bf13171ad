// Force-included (-include) into a build of the verbs provider with
// RPMA_HAVE_IBV_ATOMIC_WRITE=0: after libibverbs' header, the names that
// only rdma-core >= 44 has are poisoned, so the build fails if any of them
// is used outside its guard (what a build on Ubuntu 22.04 / RHEL 8 does).
#include <infiniband/verbs.h>
#pragma GCC poison IBV_QP_EX_WITH_ATOMIC_WRITE IBV_WC_ATOMIC_WRITE
#pragma GCC poison ibv_wr_atomic_write
