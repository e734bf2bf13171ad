// Parsing the etcd endpoint list a node or client is given:
//
//   etcd://127.0.0.1:2379,127.0.0.1:22379,[::1]:32379
//
// One scheme, then one or more host:port separated by commas (kv::Endpoint
// syntax: IPv6 in brackets). The order is the order EtcdHttp tries them
// in. Pure functions; thread-safe.
#ifndef KV_CLUSTER_ETCD_ENDPOINTS_H_
#define KV_CLUSTER_ETCD_ENDPOINTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "kv/endpoint.h"
#include "kv/status.h"

namespace kv::cluster {

inline constexpr std::string_view kEtcdScheme = "etcd://";

// Parses an endpoint list.
// Errors: invalid_argument naming the problem: the scheme is missing or
// another one ("http://"), the list is empty, an element is empty (",,"
// or a trailing comma), an element is not host:port, or an endpoint
// appears twice.
Result<std::vector<Endpoint>> ParseEtcdEndpoints(std::string_view text);

// The canonical text of a list: "etcd://" + the endpoints joined by ",".
// ParseEtcdEndpoints(FormatEtcdEndpoints(list)) gives back `list`.
std::string FormatEtcdEndpoints(const std::vector<Endpoint>& endpoints);

}  // namespace kv::cluster

#endif  // KV_CLUSTER_ETCD_ENDPOINTS_H_
