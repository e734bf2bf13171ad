// kv::Endpoint: a "host:port" address as given on command lines
// (`--listen=127.0.0.1:7400`, `--server=...`). Header-only; thread-safe.
#ifndef KV_ENDPOINT_H_
#define KV_ENDPOINT_H_

#include <charconv>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv {

struct Endpoint {
  std::string host;  // name or IPv4 address; "[v6]" brackets removed
  std::string port;  // decimal, 1..65535

  std::string ToString() const {
    return host.find(':') != std::string::npos ? "[" + host + "]:" + port
                                               : host + ":" + port;
  }

  // Parses "host:port" or "[ipv6]:port".
  // Errors: invalid_argument naming what is wrong with `text`.
  static Result<Endpoint> Parse(std::string_view text) {
    auto bad = [&](const char* why) {
      return Status::InvalidArgument("address '" + std::string(text) +
                                     "': " + why + " (expected host:port)");
    };
    std::string_view host, port;
    if (!text.empty() && text.front() == '[') {
      size_t close = text.find(']');
      if (close == std::string_view::npos) return bad("missing ']'");
      host = text.substr(1, close - 1);
      if (close + 1 >= text.size() || text[close + 1] != ':') {
        return bad("missing port");
      }
      port = text.substr(close + 2);
    } else {
      size_t colon = text.rfind(':');
      if (colon == std::string_view::npos) return bad("missing port");
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
      if (host.find(':') != std::string_view::npos) {
        return bad("IPv6 addresses need brackets");
      }
    }
    if (host.empty()) return bad("empty host");
    unsigned value = 0;
    auto [end, ec] =
        std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() ||
        value == 0 || value > 65535) {
      return bad("port must be a number from 1 to 65535");
    }
    return Endpoint{std::string(host), std::string(port)};
  }
};

}  // namespace kv

#endif  // KV_ENDPOINT_H_
