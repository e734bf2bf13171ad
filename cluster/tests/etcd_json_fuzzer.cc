// libFuzzer target: every decoder EtcdHttp runs on bytes etcd sends (the
// JSON gateway's answers, error bodies, watch stream lines) and base64.
// Nothing may crash, throw, leak or loop; what decodes must satisfy the
// invariants the decoders promise (etcd_json.h).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "base64.h"
#include "etcd_json.h"

namespace ej = kv::cluster::etcd_json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto r = ej::DecodeRange(in); r.ok()) {
    for (size_t i = 0; i < r->kvs.size(); ++i) {
      const kv::cluster::KeyValue& kv = r->kvs[i];
      if (kv.key.empty() || kv.create_revision <= 0 ||
          kv.mod_revision < kv.create_revision ||
          kv.mod_revision > r->revision ||
          (i > 0 && r->kvs[i - 1].key >= kv.key)) {
        std::abort();
      }
    }
  }
  (void)ej::DecodePut(in);
  (void)ej::DecodeDeleteRange(in);
  (void)ej::DecodeTxn(in);
  if (auto l = ej::DecodeLeaseGrant(in);
      l.ok() && (l->id <= 0 || l->ttl_s <= 0)) {
    std::abort();
  }
  if (auto t = ej::DecodeLeaseKeepAlive(in, 1); t.ok() && *t <= 0) std::abort();
  (void)ej::DecodeHeaderOnly(in);
  if (ej::DecodeError("fuzz", 500, in).ok()) std::abort();
  if (auto m = ej::DecodeWatchLine(in); m.ok()) {
    for (size_t i = 0; i < m->events.size(); ++i) {
      if (m->events[i].key.empty() || m->events[i].mod_revision <= 0 ||
          (i > 0 &&
           m->events[i].mod_revision < m->events[i - 1].mod_revision)) {
        std::abort();
      }
    }
  }
  if (auto b = kv::cluster::Base64Decode(in); b.ok()) {
    if (kv::cluster::Base64Encode(*b) != in) std::abort();  // canonical
  }
  return 0;
}
