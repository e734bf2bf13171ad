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

#endif  // RPMA_LOG_INTERNAL_H_
