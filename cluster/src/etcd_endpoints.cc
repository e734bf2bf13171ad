#include "kv/cluster/etcd_endpoints.h"

#include <algorithm>

namespace kv::cluster {
namespace {

Status Bad(std::string_view text, std::string_view why) {
  return Status::InvalidArgument(
      "etcd endpoints '" + std::string(text) + "': " + std::string(why) +
      " (expected etcd://host:port[,host:port...], e.g. "
      "etcd://127.0.0.1:2379)");
}

}  // namespace

Result<std::vector<Endpoint>> ParseEtcdEndpoints(std::string_view text) {
  if (!text.starts_with(kEtcdScheme)) {
    return text.find("://") != std::string_view::npos
               ? Bad(text, "the scheme must be etcd://")
               : Bad(text, "missing the etcd:// scheme");
  }
  std::string_view rest = text.substr(kEtcdScheme.size());
  if (rest.empty()) return Bad(text, "no endpoint after etcd://");
  std::vector<Endpoint> out;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    if (item.empty()) return Bad(text, "empty endpoint between commas");
    Result<Endpoint> ep = Endpoint::Parse(item);
    if (!ep.ok()) return Bad(text, ep.status().message());
    auto same = [&](const Endpoint& e) {
      return e.host == ep->host && e.port == ep->port;
    };
    if (std::any_of(out.begin(), out.end(), same)) {
      return Bad(text, "endpoint " + ep->ToString() + " is listed twice");
    }
    out.push_back(std::move(ep.value()));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return out;
}

std::string FormatEtcdEndpoints(const std::vector<Endpoint>& endpoints) {
  std::string s(kEtcdScheme);
  for (size_t i = 0; i < endpoints.size(); ++i) {
    if (i > 0) s += ',';
    s += endpoints[i].ToString();
  }
  return s;
}

}  // namespace kv::cluster
