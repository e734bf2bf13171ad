#include "log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <string>

namespace kv::server {

void Log(std::string_view text) {
  std::string line = "kvserver: ";
  line.append(text);
  line.push_back('\n');
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(2, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void Logf(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  Log(buf);
}

}  // namespace kv::server
