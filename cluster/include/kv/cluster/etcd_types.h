// The values that cross the kv::cluster::Etcd interface (etcd.h): a key's
// stored version, a range read, a transaction's compares and operations, a
// lease, a watch event. Plain data, no behaviour beyond named constructors.
//
// Revisions are etcd's: one counter for the whole store, bumped by every
// write that changes something; a key's mod_revision is the revision of
// its last change, create_revision the one that created it (0: absent).
// Thread-safety: values; copy freely.
#ifndef KV_CLUSTER_ETCD_TYPES_H_
#define KV_CLUSTER_ETCD_TYPES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kv::cluster {

// One key as etcd stores it.
struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;  // 0: no lease
};

// The answer to Get / GetPrefix: the keys (sorted by key) and the store's
// revision when they were read. The revision is there even when no key
// matched, so a caller can watch from revision + 1 without missing a write.
struct Range {
  int64_t revision = 0;
  std::vector<KeyValue> kvs;
};

// The answer to Delete.
struct DeleteResult {
  int64_t revision = 0;  // the store's revision after the delete
  bool deleted = false;  // false: the key was absent (nothing changed)
};

// One condition of a transaction. Every compare is an equality; a
// transaction's compares all have to hold for its success branch to run.
struct Compare {
  enum class Target { kModRevision, kCreateRevision, kValue };
  Target target = Target::kModRevision;
  std::string key;
  int64_t revision = 0;  // kModRevision, kCreateRevision
  std::string value;     // kValue

  // The key's last change is revision `r` (the revision the writer saw).
  static Compare ModRevisionIs(std::string key, int64_t r) {
    return {Target::kModRevision, std::move(key), r, {}};
  }
  // The key does not exist (its create_revision is 0).
  static Compare Absent(std::string key) {
    return {Target::kCreateRevision, std::move(key), 0, {}};
  }
  // The key exists and holds exactly `value`.
  static Compare ValueIs(std::string key, std::string value) {
    return {Target::kValue, std::move(key), 0, std::move(value)};
  }
};

// One write of a transaction branch.
struct TxnOp {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  std::string key;
  std::string value;  // kPut
  int64_t lease = 0;  // kPut; 0: no lease

  static TxnOp Put(std::string key, std::string value, int64_t lease = 0) {
    return {Type::kPut, std::move(key), std::move(value), lease};
  }
  static TxnOp Delete(std::string key) {
    return {Type::kDelete, std::move(key), {}, 0};
  }
};

// The answer to Txn.
struct TxnResult {
  bool succeeded = false;  // true: all compares held, success ops ran
  int64_t revision = 0;    // the store's revision after the transaction
};

// The answer to LeaseGrant.
struct Lease {
  int64_t id = 0;
  int64_t ttl_s = 0;  // as granted: may exceed the TTL asked for
};

// One change seen by a watch.
struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  std::string key;
  std::string value;  // kPut: the new value; kDelete: empty
  int64_t mod_revision = 0;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_ETCD_TYPES_H_
