// libFuzzer target: ClusterMap::Decode on arbitrary bytes (the map comes
// from etcd, which anyone with etcd access can write). Nothing may crash,
// throw or recurse away; a map that decodes must encode to JSON that
// decodes to an equal map, and route every slot to a shard with a primary.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kv/cluster/cluster_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kv::cluster::ClusterMap;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  kv::Result<ClusterMap> m = ClusterMap::Decode(in);
  if (!m.ok()) return 0;
  kv::Result<ClusterMap> again = ClusterMap::Decode(m->Encode());
  if (!again.ok() || !(*again == *m)) std::abort();
  for (const auto& ks : m->keyspaces()) {
    for (uint64_t slot = 0; slot < kv::kSlotCount; slot++) {
      const auto* shard = m->ShardFor(ks, slot << kv::kSlotShift);
      if (shard == nullptr || shard->replicas.empty()) std::abort();
    }
  }
  return 0;
}
