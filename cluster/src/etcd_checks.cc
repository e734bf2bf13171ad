#include "etcd_checks.h"

#include <set>
#include <string>

namespace kv::cluster {
namespace {

Status Bad(const std::string& m) { return Status::InvalidArgument(m); }

Status CheckBranch(const char* name, const std::vector<TxnOp>& ops) {
  std::set<std::string_view> keys;
  for (const TxnOp& op : ops) {
    KV_RETURN_IF_ERROR(CheckKey(op.key));
    if (op.type == TxnOp::Type::kPut)
      KV_RETURN_IF_ERROR(CheckPutLease(op.lease));
    if (!keys.insert(op.key).second) {
      return Bad(std::string("txn: the ") + name + " branch writes key '" +
                 op.key + "' twice");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckKey(std::string_view key) {
  if (key.empty()) return Bad("etcd keys cannot be empty");
  return Status::Ok();
}

Status CheckLeaseId(int64_t id) {
  if (id <= 0) return Bad("lease id " + std::to_string(id) + " (ids are > 0)");
  return Status::Ok();
}

Status CheckPutLease(int64_t lease) {
  if (lease < 0) return Bad("lease " + std::to_string(lease) + " (0: none)");
  return Status::Ok();
}

Status CheckTtl(int64_t ttl_s) {
  if (ttl_s < 1 || ttl_s > kMaxLeaseTtlS) {
    return Bad("lease TTL " + std::to_string(ttl_s) + " s (1 to " +
               std::to_string(kMaxLeaseTtlS) + ")");
  }
  return Status::Ok();
}

Status CheckCompactRevision(int64_t revision) {
  if (revision < 1) {
    return Bad("compaction revision " + std::to_string(revision) +
               " (revisions start at 1)");
  }
  return Status::Ok();
}

Status CheckStartRevision(int64_t revision) {
  if (revision < 0) {
    return Bad("watch start revision " + std::to_string(revision) +
               " (0: from now)");
  }
  return Status::Ok();
}

Status CheckTxn(const std::vector<Compare>& compares,
                const std::vector<TxnOp>& success,
                const std::vector<TxnOp>& failure) {
  for (const Compare& c : compares) {
    KV_RETURN_IF_ERROR(CheckKey(c.key));
    if (c.revision < 0) {
      return Bad("txn: compare of '" + c.key + "' with revision " +
                 std::to_string(c.revision));
    }
  }
  KV_RETURN_IF_ERROR(CheckBranch("success", success));
  return CheckBranch("failure", failure);
}

}  // namespace kv::cluster
