// Deliberately forbidden: store code including the rpma layer.
#include <librpma.h>
int kv_probe_store_rpma() { return RPMA_E_INVAL; }
