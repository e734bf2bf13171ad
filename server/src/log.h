// kvserver's log: one line per event on stderr, "kvserver: <text>".
// Thread-safe (one write(2) per line, so lines never interleave).
#ifndef KV_SERVER_LOG_H_
#define KV_SERVER_LOG_H_

#include <string_view>

namespace kv::server {

// Writes "kvserver: " + text + "\n" to stderr in one write.
void Log(std::string_view text);

// printf-style convenience.
void Logf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace kv::server

#endif  // KV_SERVER_LOG_H_
