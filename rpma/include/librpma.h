/*
 * librpma.h -- the librpma 1.3 C API, implemented by rpkv's rpma/ layer.
 *
 * Foundation stage: error codes and rpma_err_2str(). The rest of the API
 * arrives with the connection and data-path issues.
 */
#ifndef LIBRPMA_H
#define LIBRPMA_H 1

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* error codes (see rpma_err_2str() for their texts) */
#define RPMA_E_UNKNOWN (-100000)
#define RPMA_E_NOSUPP (-100001)
#define RPMA_E_PROVIDER (-100002)
#define RPMA_E_NOMEM (-100003)
#define RPMA_E_INVAL (-100004)
#define RPMA_E_NO_COMPLETION (-100005)
#define RPMA_E_NO_EVENT (-100006)
#define RPMA_E_AGAIN (-100007)
#define RPMA_E_SHARED_CHANNEL (-100008)
#define RPMA_E_NOT_SHARED_CHNL (-100009)

/*
 * rpma_err_2str -- return a constant, human-readable description of an
 * rpma error code (any unknown value gives "Unknown error").
 */
const char *rpma_err_2str(int ret);

#ifdef __cplusplus
}
#endif

#endif /* LIBRPMA_H */
