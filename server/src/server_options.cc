#include "kv/server/server_options.h"

#include <cctype>
#include <charconv>

namespace kv::server {

constexpr uint64_t kMinPoolSize = 16ull << 20;

Result<uint64_t> ParseByteSize(const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || p == text.data()) {
    return Status::InvalidArgument("'" + text +
                                   "' is not a size (e.g. 4096, 4M, 1G)");
  }
  std::string suffix(p, end);
  for (char& c : suffix) c = static_cast<char>(std::toupper(c));
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "KB" || suffix == "KIB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "MB" || suffix == "MIB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "GB" || suffix == "GIB") {
    shift = 30;
  } else if (suffix == "T" || suffix == "TB" || suffix == "TIB") {
    shift = 40;
  } else {
    return Status::InvalidArgument("'" + text + "': unknown size suffix '" +
                                   std::string(p, end) + "' (K, M, G or T)");
  }
  if (shift != 0 && value > (~uint64_t{0} >> shift)) {
    return Status::InvalidArgument("'" + text + "' is too large");
  }
  return value << shift;
}

Result<ServerOptions> MakeServerOptions(const std::string& pool_path,
                                        uint64_t pool_size,
                                        const std::string& listen) {
  if (pool_path.empty()) {
    return Status::InvalidArgument(
        "--pool is required (path of the pool file)");
  }
  if (pool_size < kMinPoolSize) {
    return Status::InvalidArgument("--pool_size must be at least 16 MiB");
  }
  Result<Endpoint> ep = Endpoint::Parse(listen);
  if (!ep.ok()) return ep.status();
  ServerOptions o;
  o.pool_path = pool_path;
  o.pool_size = pool_size;
  o.listen = std::move(ep).value();
  return o;
}

Status ValidateServerOptions(const ServerOptions& o) {
  if (o.provider != "auto" && o.provider != "tcp" && o.provider != "verbs") {
    return Status::InvalidArgument(
        "--provider must be auto, tcp or verbs, not '" + o.provider + "'");
  }
  if (o.segment_size < 4096 || o.segment_size % 4096 != 0) {
    return Status::InvalidArgument(
        "--segment_size must be a multiple of 4096 (4K .. 1G)");
  }
  if (o.pool_size % 4096 != 0) {
    return Status::InvalidArgument("--pool_size must be a multiple of 4096");
  }
  if (o.index_capacity == 0) {
    return Status::InvalidArgument("--index_capacity must be at least 1");
  }
  if (o.max_connections == 0 || o.max_connections > 65536) {
    return Status::InvalidArgument("--max_connections must be 1..65536");
  }
  if (!(o.cleaner_threshold > 0.0 && o.cleaner_threshold <= 1.0)) {
    return Status::InvalidArgument("--cleaner_threshold must be in (0, 1]");
  }
  if (o.max_inflight == 0 || o.max_inflight > 1024) {
    return Status::InvalidArgument("--max_inflight must be 1..1024");
  }
  if (o.hello_timeout.count() <= 0 || o.hello_timeout.count() > 60000) {
    return Status::InvalidArgument("--hello_timeout_ms must be 1..60000");
  }
  if (o.max_pending_hello == 0) {
    return Status::InvalidArgument("--max_pending_hello must be at least 1");
  }
  if (o.refill_rate == 0 || o.refill_burst == 0) {
    return Status::InvalidArgument(
        "--refill_rate and --refill_burst must be at least 1");
  }
  if (o.grant_share_percent == 0 || o.grant_share_percent > 100) {
    return Status::InvalidArgument("--grant_share_percent must be 1..100");
  }
  if (o.auth_delay > o.auth_delay_max || o.auth_delay_max.count() > 10000) {
    return Status::InvalidArgument(
        "--auth_delay_ms must be at most --auth_delay_max_ms (at most 10000)");
  }
  return Status::Ok();
}

}  // namespace kv::server
