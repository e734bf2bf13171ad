// rpma_conn_cfg_*: getters and setters with librpma's defaults and checks.

#include "conn_cfg.h"

#include <new>

#include "export.h"

namespace rpma {
const rpma_conn_cfg& DefaultConnCfg() {
  static const rpma_conn_cfg kDefault;
  return kDefault;
}
}  // namespace rpma

RPMA_EXPORT int rpma_conn_cfg_new(struct rpma_conn_cfg** cfg_ptr) {
  if (cfg_ptr == nullptr) return RPMA_E_INVAL;
  auto* cfg = new (std::nothrow) rpma_conn_cfg();
  if (cfg == nullptr) return RPMA_E_NOMEM;
  *cfg_ptr = cfg;
  return 0;
}

RPMA_EXPORT int rpma_conn_cfg_delete(struct rpma_conn_cfg** cfg_ptr) {
  if (cfg_ptr == nullptr) return RPMA_E_INVAL;
  delete *cfg_ptr;
  *cfg_ptr = nullptr;
  return 0;
}

RPMA_EXPORT int rpma_conn_cfg_set_timeout(struct rpma_conn_cfg* cfg,
                                          int timeout_ms) {
  if (cfg == nullptr || timeout_ms < 0) return RPMA_E_INVAL;
  cfg->timeout_ms = timeout_ms;
  return 0;
}

RPMA_EXPORT int rpma_conn_cfg_get_timeout(const struct rpma_conn_cfg* cfg,
                                          int* timeout_ms) {
  if (cfg == nullptr || timeout_ms == nullptr) return RPMA_E_INVAL;
  *timeout_ms = cfg->timeout_ms;
  return 0;
}

// The four queue sizes share one shape; any value (including 0) is
// accepted, as in librpma.
#define RPMA_CONN_CFG_SIZE(name)                                            \
  RPMA_EXPORT int rpma_conn_cfg_set_##name(struct rpma_conn_cfg* cfg,       \
                                           uint32_t name) {                 \
    if (cfg == nullptr) return RPMA_E_INVAL;                                \
    cfg->name = name;                                                       \
    return 0;                                                               \
  }                                                                         \
  RPMA_EXPORT int rpma_conn_cfg_get_##name(const struct rpma_conn_cfg* cfg, \
                                           uint32_t* name) {                \
    if (cfg == nullptr || name == nullptr) return RPMA_E_INVAL;             \
    *name = cfg->name;                                                      \
    return 0;                                                               \
  }

RPMA_CONN_CFG_SIZE(cq_size)
RPMA_CONN_CFG_SIZE(rcq_size)
RPMA_CONN_CFG_SIZE(sq_size)
RPMA_CONN_CFG_SIZE(rq_size)
#undef RPMA_CONN_CFG_SIZE

RPMA_EXPORT int rpma_conn_cfg_set_compl_channel(struct rpma_conn_cfg* cfg,
                                                bool shared) {
  if (cfg == nullptr) return RPMA_E_INVAL;
  cfg->shared_channel = shared;
  return 0;
}

RPMA_EXPORT int rpma_conn_cfg_get_compl_channel(const struct rpma_conn_cfg* cfg,
                                                bool* shared) {
  if (cfg == nullptr || shared == nullptr) return RPMA_E_INVAL;
  *shared = cfg->shared_channel;
  return 0;
}

RPMA_EXPORT int rpma_conn_cfg_set_srq(struct rpma_conn_cfg* cfg,
                                      struct rpma_srq* srq) {
  // librpma refuses a NULL srq too (so an SRQ cannot be cleared).
  if (cfg == nullptr || srq == nullptr) return RPMA_E_INVAL;
  cfg->srq = srq;
  return 0;
}

RPMA_EXPORT int rpma_conn_cfg_get_srq(const struct rpma_conn_cfg* cfg,
                                      struct rpma_srq** srq_ptr) {
  if (cfg == nullptr || srq_ptr == nullptr) return RPMA_E_INVAL;
  *srq_ptr = cfg->srq;
  return 0;
}
