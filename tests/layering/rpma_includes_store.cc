// Deliberately forbidden: rpma code including store's formats.
#include "kv/status.h"
int kv_probe_rpma_store() { return 0; }
