// Placeholder until the log API lands: errors to stderr.
#include <cstdarg>
#include <cstdio>

#include "log_internal.h"

namespace rpma {
void LogEmit(int level, const char* file, int line, const char* func,
             const char* fmt, ...) {
  if (level > kLogWarning) return;
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "%s: %d: %s: ", file, line, func);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
}
}  // namespace rpma
