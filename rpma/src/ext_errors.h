// How the rpkv extensions (rpma_ext.h) map a provider's -errno, in one
// place for every extension call (ext.cc, conn_group.cc).
#ifndef RPMA_EXT_ERRORS_H_
#define RPMA_EXT_ERRORS_H_

namespace rpma {

// -EOPNOTSUPP: RPMA_E_NOSUPP; -EINVAL: RPMA_E_INVAL; anything else is a
// provider failure (logged with `what`, RPMA_E_NOMEM for -ENOMEM).
int ExtFailed(int rc, const char* what);

// A failed recreation of a request's queue pair (CmId::MoveQp,
// CmId::ReplaceQp): -EIO means the request was left without one — said in
// the log, RPMA_E_PROVIDER —, anything else as ExtFailed.
int QpRecreateFailed(int rc, const char* what);

}  // namespace rpma

#endif  // RPMA_EXT_ERRORS_H_
