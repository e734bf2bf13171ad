// The librpma log module: thresholds, the log-function hook, the default
// function (syslog always, stderr up to the aux threshold), and LogEmit()
// behind the RPMA_LOG_* macros of log_internal.h.

#include <sys/syscall.h>
#include <sys/time.h>
#include <syslog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "export.h"
#include "log_internal.h"

namespace rpma {
namespace {

void DefaultLogFunction(enum rpma_log_level level, const char* file_name,
                        const int line_no, const char* function_name,
                        const char* message_format, ...)
    __attribute__((format(printf, 5, 6)));

// C11-atomic in librpma too, so set/get never return RPMA_E_AGAIN here.
std::atomic<int> g_threshold[RPMA_LOG_THRESHOLD_MAX] = {
    {RPMA_LOG_LEVEL_WARNING}, {RPMA_LOG_DISABLED}};
std::atomic<rpma_log_function*> g_function{&DefaultLogFunction};

constexpr const char* kLevelTag[] = {"*FATAL* ", "*ERROR* ", "*WARN*  ",
                                     "*NOTE*  ", "*INFO*  ", "*DEBUG* "};
constexpr int kSyslogPriority[] = {LOG_CRIT,   LOG_ERR,  LOG_WARNING,
                                   LOG_NOTICE, LOG_INFO, LOG_DEBUG};

// "<Mon DD HH:MM:SS.uuuuuu> " as librpma's default function prints it.
void Timestamp(char* buf, size_t size) {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  char date[32];
  if (strftime(date, sizeof(date), "%b %d %H:%M:%S", &tm) == 0) date[0] = 0;
  std::snprintf(buf, size, "%s.%06ld", date, static_cast<long>(tv.tv_usec));
}

void DefaultLogFunction(enum rpma_log_level level, const char* file_name,
                        const int line_no, const char* function_name,
                        const char* message_format, ...) {
  const int lvl = EnumValue(&level);
  if (lvl < RPMA_LOG_LEVEL_FATAL || lvl > RPMA_LOG_LEVEL_DEBUG) return;
  char message[1024];
  va_list ap;
  va_start(ap, message_format);
  std::vsnprintf(message, sizeof(message), message_format, ap);
  va_end(ap);
  // The messages carry no newline; one is added on stderr only.
  size_t n = std::strlen(message);
  if (n > 0 && message[n - 1] == '\n') message[n - 1] = '\0';

  char file_info[512] = "";
  if (file_name != nullptr) {
    std::snprintf(file_info, sizeof(file_info), "%s: %d: %s: ", file_name,
                  line_no, function_name != nullptr ? function_name : "");
  }
  if (lvl <= g_threshold[RPMA_LOG_THRESHOLD_AUX].load()) {
    char ts[64];
    Timestamp(ts, sizeof(ts));
    std::fprintf(stderr, "%s [%ld] %s%s%s\n", ts,
                 static_cast<long>(syscall(SYS_gettid)), kLevelTag[lvl],
                 file_info, message);
  }
  syslog(kSyslogPriority[lvl], "%s%s%s", kLevelTag[lvl], file_info, message);
}

// As librpma's library constructor/destructor: syslog opened once, and no
// logging through a function pointer after the library is unloaded.
__attribute__((constructor)) void LogInit() {
  openlog("rpma", LOG_PID, LOG_LOCAL7);
}
__attribute__((destructor)) void LogFini() {
  g_function.store(nullptr);
  closelog();
}

const char* BaseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

}  // namespace

void LogEmit(int level, const char* file, int line, const char* func,
             const char* fmt, ...) {
  if (level > g_threshold[RPMA_LOG_THRESHOLD].load()) return;
  rpma_log_function* fn = g_function.load();
  if (fn == nullptr) return;
  char message[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(message, sizeof(message), fmt, ap);
  va_end(ap);
  fn(static_cast<enum rpma_log_level>(level),
     file != nullptr ? BaseName(file) : nullptr, line, func, "%s", message);
}

int ProviderFailed(const char* file, int line, const char* func, int rc,
                   bool nomem, const char* fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  LogEmit(kLogError, file, line, func, "%s failed: %s", what,
          std::strerror(rc < 0 ? -rc : rc));
  return nomem && rc == -ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
}

}  // namespace rpma

RPMA_EXPORT int rpma_log_set_threshold(enum rpma_log_threshold threshold,
                                       enum rpma_log_level level) {
  int t = rpma::EnumValue(&threshold);
  int l = rpma::EnumValue(&level);
  if (t != RPMA_LOG_THRESHOLD && t != RPMA_LOG_THRESHOLD_AUX)
    return RPMA_E_INVAL;
  if (l < RPMA_LOG_DISABLED || l > RPMA_LOG_LEVEL_DEBUG) return RPMA_E_INVAL;
  rpma::g_threshold[t].store(l);
  return 0;
}

RPMA_EXPORT int rpma_log_get_threshold(enum rpma_log_threshold threshold,
                                       enum rpma_log_level* level) {
  if (threshold != RPMA_LOG_THRESHOLD && threshold != RPMA_LOG_THRESHOLD_AUX)
    return RPMA_E_INVAL;
  if (level == nullptr) return RPMA_E_INVAL;
  *level =
      static_cast<enum rpma_log_level>(rpma::g_threshold[threshold].load());
  return 0;
}

RPMA_EXPORT int rpma_log_set_function(rpma_log_function* log_function) {
  rpma::g_function.store(log_function != RPMA_LOG_USE_DEFAULT_FUNCTION
                             ? log_function
                             : &rpma::DefaultLogFunction);
  return 0;
}
