#include "kv/client/rpma_status.h"

#include <librpma.h>

namespace kv::client {

Status StatusFromRpma(int rc, const std::string& what) {
  if (rc == 0) return Status::Ok();
  std::string msg = what + ": " + rpma_err_2str(rc);
  switch (rc) {
    case RPMA_E_INVAL:
    case RPMA_E_NOSUPP:
      return Status::InvalidArgument(std::move(msg));
    case RPMA_E_NOMEM:
      return Status::NoSpace(std::move(msg));
    case RPMA_E_NO_COMPLETION:
    case RPMA_E_NO_EVENT:
    case RPMA_E_AGAIN:
      return Status::Busy(std::move(msg));
    default:
      return Status::Unavailable(std::move(msg));
  }
}

}  // namespace kv::client
