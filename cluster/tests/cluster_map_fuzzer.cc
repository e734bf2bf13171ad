// libFuzzer target: the decoders of what rpkv reads from etcd's cluster
// prefix besides the gateway's answers (etcd_json_fuzzer) — ClusterMap::
// Decode, KeyspaceSpec::Decode (a desired keyspace's value) and
// EtcdKeys::KeyspaceNameOf (its key), NodeRegistration::Decode (a node's
// registration, which clients read for addresses) and EtcdKeys::NodeIdOf
// — on arbitrary bytes: anyone with etcd
// access can write them. Nothing may crash, throw or recurse away; a map
// that decodes must encode to JSON that decodes to an equal map and route
// every slot to a shard with a primary; a spec that decodes must validate
// and round-trip; a name taken from a key must name that same key; a
// registration that decodes must validate and round-trip; an id taken
// from a node key must name that same key. The same for the moves:
// MoveRecord::Decode (as the record of 'users'/3) and MoveProgress::Decode
// must give values that validate and round-trip, EtcdKeys::MoveOf and
// DrainNodeOf ids that name the same key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/keyspace_spec.h"
#include "kv/cluster/move_record.h"
#include "kv/cluster/node_registration.h"

namespace {

void FuzzMap(std::string_view in) {
  using kv::cluster::ClusterMap;
  kv::Result<ClusterMap> m = ClusterMap::Decode(in);
  if (!m.ok()) return;
  kv::Result<ClusterMap> again = ClusterMap::Decode(m->Encode());
  if (!again.ok() || !(*again == *m)) std::abort();
  for (const auto& ks : m->keyspaces()) {
    if (!kv::cluster::ValidateClusterKeyspaceName(ks.name).ok() ||
        ks.id > kv::kMaxClusterKeyspaceId) {
      std::abort();
    }
    for (uint64_t slot = 0; slot < kv::kSlotCount; slot++) {
      const auto* shard = m->ShardFor(ks, slot << kv::kSlotShift);
      if (shard == nullptr || shard->replicas.empty() ||
          shard->id > kv::kMaxShardId) {
        std::abort();
      }
    }
  }
}

void FuzzSpec(std::string_view in) {
  using kv::cluster::KeyspaceSpec;
  kv::Result<KeyspaceSpec> spec = KeyspaceSpec::Decode("k", in);
  if (spec.ok()) {
    if (!spec->Validate().ok()) std::abort();
    kv::Result<KeyspaceSpec> again = KeyspaceSpec::Decode("k", spec->Encode());
    if (!again.ok() || !(*again == *spec)) std::abort();
  }
  static const kv::cluster::EtcdKeys keys =
      kv::cluster::EtcdKeys::ForCluster("c").value();
  const std::string key = keys.keyspaces_prefix() + std::string(in);
  kv::Result<std::string> name = keys.KeyspaceNameOf(key);
  if (name.ok() && keys.keyspace(*name) != key) std::abort();
}

void FuzzNode(std::string_view in) {
  using kv::cluster::NodeRegistration;
  kv::Result<NodeRegistration> reg = NodeRegistration::Decode(in);
  if (reg.ok()) {
    if (!reg->Validate().ok()) std::abort();
    kv::Result<NodeRegistration> again =
        NodeRegistration::Decode(reg->Encode());
    if (!again.ok() || !(*again == *reg)) std::abort();
  }
  static const kv::cluster::EtcdKeys keys =
      kv::cluster::EtcdKeys::ForCluster("c").value();
  const std::string key = keys.nodes_prefix() + std::string(in);
  kv::Result<uint32_t> id = keys.NodeIdOf(key);
  if (id.ok() && (*id == 0 || keys.node(*id) != key)) std::abort();
}

void FuzzMove(std::string_view in) {
  using kv::cluster::MoveProgress;
  using kv::cluster::MoveRecord;
  kv::Result<MoveRecord> r = MoveRecord::Decode("users", 3, in);
  if (r.ok()) {
    if (!r->Validate().ok() || r->keyspace != "users" || r->shard != 3) {
      std::abort();
    }
    const std::string encoded = r->Encode();
    if (encoded.size() > MoveRecord::kMaxJsonBytes) std::abort();
    kv::Result<MoveRecord> again = MoveRecord::Decode("users", 3, encoded);
    if (!again.ok() || !(*again == *r)) std::abort();
  }
  kv::Result<MoveProgress> p = MoveProgress::Decode(in);
  if (p.ok()) {
    kv::Result<MoveProgress> again = MoveProgress::Decode(p->Encode());
    if (!again.ok() || !(*again == *p)) std::abort();
  }
  static const kv::cluster::EtcdKeys keys =
      kv::cluster::EtcdKeys::ForCluster("c").value();
  const std::string move_key = keys.moves_prefix() + std::string(in);
  kv::Result<kv::cluster::ShardRef> ref = keys.MoveOf(move_key);
  if (ref.ok() && (ref->shard > kv::kMaxShardId ||
                   keys.move(ref->keyspace, ref->shard) != move_key)) {
    std::abort();
  }
  const std::string drain_key = keys.drain_prefix() + std::string(in);
  kv::Result<uint32_t> drained = keys.DrainNodeOf(drain_key);
  if (drained.ok() && (*drained == 0 || keys.drain(*drained) != drain_key)) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  FuzzMap(in);
  FuzzSpec(in);
  FuzzNode(in);
  FuzzMove(in);
  return 0;
}
