// Internal logging of the rpma layer (semantic layer and providers).
//
// Messages go through the librpma log machinery (rpma_log_set_threshold,
// rpma_log_set_function; default: syslog, plus stderr above the aux
// threshold). Levels are librpma's enum rpma_log_level values.
// Thread-safe.
#ifndef RPMA_LOG_INTERNAL_H_
#define RPMA_LOG_INTERNAL_H_

namespace rpma {

// Same values as enum rpma_log_level in librpma.h.
enum LogLevel : int {
  kLogFatal = 0,
  kLogError = 1,
  kLogWarning = 2,
  kLogNotice = 3,
  kLogInfo = 4,
  kLogDebug = 5,
};

// Emits one message if `level` passes the main threshold.
void LogEmit(int level, const char* file, int line, const char* func,
             const char* fmt, ...) __attribute__((format(printf, 5, 6)));

// The one rule for a failed provider call (librpma's): log "<what> failed:
// <errno text>" as an error and return RPMA_E_PROVIDER — or RPMA_E_NOMEM
// for -ENOMEM when `nomem` (where librpma maps an allocation failure).
// Use through RPMA_PROVIDER_FAILED / RPMA_PROVIDER_FAILED_NOMEM.
int ProviderFailed(const char* file, int line, const char* func, int rc,
                   bool nomem, const char* fmt, ...)
    __attribute__((format(printf, 6, 7)));

}  // namespace rpma

#define RPMA_LOG_FATAL(...) \
  ::rpma::LogEmit(::rpma::kLogFatal, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define RPMA_LOG_ERROR(...) \
  ::rpma::LogEmit(::rpma::kLogError, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define RPMA_LOG_WARNING(...)                                        \
  ::rpma::LogEmit(::rpma::kLogWarning, __FILE__, __LINE__, __func__, \
                  __VA_ARGS__)
#define RPMA_LOG_NOTICE(...) \
  ::rpma::LogEmit(::rpma::kLogNotice, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define RPMA_LOG_INFO(...) \
  ::rpma::LogEmit(::rpma::kLogInfo, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define RPMA_LOG_DEBUG(...) \
  ::rpma::LogEmit(::rpma::kLogDebug, __FILE__, __LINE__, __func__, __VA_ARGS__)

// return RPMA_PROVIDER_FAILED(rc, "creating a CQ of %d entries", cqe);
#define RPMA_PROVIDER_FAILED(rc, ...) \
  ::rpma::ProviderFailed(__FILE__, __LINE__, __func__, (rc), false, __VA_ARGS__)
#define RPMA_PROVIDER_FAILED_NOMEM(rc, ...) \
  ::rpma::ProviderFailed(__FILE__, __LINE__, __func__, (rc), true, __VA_ARGS__)

#endif  // RPMA_LOG_INTERNAL_H_
