// kv::cluster::NodeRegistration: what a node writes under
// /rpkv/<cluster>/nodes/<id> (etcd_keys.h) on its lease while it is a
// member (membership.h). The value is a small JSON object:
//
//   {"node_id": 3, "address": "10.0.0.7:7000", "started_ms": 1718000000000}
//
// address: where clients connect (host:port, kv/endpoint.h); started_ms:
// when the node's process started (wall clock, ms since the epoch; only
// for people and logs — nothing orders by it).
//
// Thread-safety: a value.
#ifndef KV_CLUSTER_NODE_REGISTRATION_H_
#define KV_CLUSTER_NODE_REGISTRATION_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv::cluster {

struct NodeRegistration {
  static constexpr size_t kMaxJsonBytes = 4096;

  uint32_t node_id = 0;  // 1..
  std::string address;   // "host:port"
  int64_t started_ms = 0;

  // invalid_argument naming the problem: node id 0, an address that is
  // not host:port, a negative start time.
  Status Validate() const;

  // The JSON form. Precondition: Validate() is ok.
  std::string Encode() const;

  // Parses a value read from etcd, trusting nothing. corruption naming the
  // problem for anything but a JSON object with the three fields of the
  // right types and a valid registration (size above kMaxJsonBytes,
  // nesting, types, bounds). Unknown members are ignored.
  static Result<NodeRegistration> Decode(std::string_view json);

  bool operator==(const NodeRegistration&) const = default;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_NODE_REGISTRATION_H_
