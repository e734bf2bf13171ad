#include "keyspace_table.h"

#include <librpma.h>

#include "kv/record_format.h"
#include "kv/store/commit_pipeline.h"
#include "kv/store/keyspace_sizing.h"
#include "log.h"

namespace kv::server {

KeyspaceTable::KeyspaceTable(store::Pool* pool, ibv_context* device,
                             CreateOptions create)
    : pool_(pool), device_(device), create_(create) {}

KeyspaceTable::~KeyspaceTable() { Close(); }

Status KeyspaceTable::CreateIn(store::Pool* pool, std::string_view name,
                               const CreateOptions& create, uint32_t id,
                               uint32_t share) {
  store::PoolInfo info = pool->Info();
  store::KeyspaceOptions o;
  o.id = id;
  o.segment_size = create.segment_size;
  o.index_capacity = create.index_capacity;
  // The default value limit, or what a segment holds next to the largest
  // key (small segments).
  const uint64_t fits = create.segment_size - record_format::kHeaderSize -
                        record_format::kMaxKeySize - 64;
  if (fits < o.max_value_size) o.max_value_size = static_cast<uint32_t>(fits);
  // Half of what is left (store/keyspace_sizing.h, as kvadmin), or of
  // this keyspace's share of it.
  o.log_size = store::DefaultLogSize(info.largest_free / share, o);
  if (o.log_size == 0) {
    return Status::NoSpace("pool has no room for another keyspace (" +
                           std::to_string(info.largest_free) + " bytes free)");
  }
  Result<std::shared_ptr<store::Keyspace>> ks = pool->CreateKeyspace(name, o);
  return ks.status();
}

Result<OpenKeyspace*> KeyspaceTable::Get(std::string_view name, bool create,
                                         bool* created) {
  if (created != nullptr) *created = false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(name);
  if (it != open_.end()) return it->second.get();
  Result<std::shared_ptr<store::Keyspace>> ks = pool_->GetKeyspace(name);
  if (!ks.ok() && ks.status().IsNotFound() && create) {
    Status st = CreateIn(pool_, name, create_);
    if (!st.ok()) return st;
    if (created != nullptr) *created = true;
    ks = pool_->GetKeyspace(name);
  }
  if (!ks.ok()) return ks.status();
  return Register(std::move(ks).value());
}

Status KeyspaceTable::EnsureShard(std::string_view name, uint32_t id,
                                  uint32_t share, bool create) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<std::shared_ptr<store::Keyspace>> ks = pool_->GetKeyspace(name);
  if (ks.ok() && (*ks)->id() != id) {
    return Status::Corruption(
        "the pool's keyspace '" + std::string(name) + "' has id " +
        std::to_string((*ks)->id()) + ", the cluster map's shard has id " +
        std::to_string(id) + ": this pool holds another cluster's data");
  }
  if (!ks.ok()) {
    if (!ks.status().IsNotFound()) return ks.status();
    if (!create) {
      return Status::NotFound("this pool has no keyspace '" +
                              std::string(name) + "'");
    }
    KV_RETURN_IF_ERROR(
        CreateIn(pool_, name, create_, id, share == 0 ? 1 : share));
    ks = pool_->GetKeyspace(name);
    if (!ks.ok()) return ks.status();
  }
  if (commit_points_.find(name) == commit_points_.end()) {
    store::Keyspace& k = **ks;
    auto point = std::make_unique<ForwardingCommitPoint>(
        k.persister(), k.log_base(), k.region().log_size);
    k.pipeline().set_commit_point(point.get());
    commit_points_.emplace(std::string(name), std::move(point));
  }
  return Status::Ok();
}

ForwardingCommitPoint* KeyspaceTable::ShardCommitPoint(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = commit_points_.find(name);
  return it == commit_points_.end() ? nullptr : it->second.get();
}

Result<OpenKeyspace*> KeyspaceTable::Register(
    std::shared_ptr<store::Keyspace> ks) {
  auto open = std::make_unique<OpenKeyspace>();
  open->keyspace = std::move(ks);
  open->region = open->keyspace->region();
  int rc = rpma_peer_new(device_, &open->peer);
  if (rc) {
    return Status::Unavailable("a protection domain for keyspace '" +
                               open->keyspace->name() +
                               "': rpma_peer_new: " + rpma_err_2str(rc));
  }
  rc = rpma_mr_reg(open->peer, open->region.base, open->region.size,
                   RPMA_MR_USAGE_READ_SRC, &open->read_mr);
  if (rc == 0) {
    rc = rpma_mr_get_descriptor(open->read_mr, open->read_desc);
    if (rc) rpma_mr_dereg(&open->read_mr);
  }
  if (rc) {
    rpma_peer_delete(&open->peer);
    return Status::Unavailable("registering the read region of keyspace '" +
                               open->keyspace->name() +
                               "' failed: " + rpma_err_2str(rc));
  }
  OpenKeyspace* raw = open.get();
  open_.emplace(open->keyspace->name(), std::move(open));
  return raw;
}

std::vector<std::shared_ptr<store::Keyspace>> KeyspaceTable::All() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<store::Keyspace>> out;
  for (auto& [name, open] : open_) out.push_back(open->keyspace);
  return out;
}

std::vector<std::string> KeyspaceTable::Names() {
  std::vector<std::string> out;
  for (const store::KeyspaceInfo& k : pool_->ListKeyspaces()) {
    out.push_back(k.name);
  }
  return out;
}

std::vector<std::pair<std::string, store::KeyspaceStats>>
KeyspaceTable::AllStats() {
  std::vector<std::pair<std::string, store::KeyspaceStats>> out;
  for (const store::KeyspaceInfo& k : pool_->ListKeyspaces()) {
    Result<std::shared_ptr<store::Keyspace>> ks = pool_->GetKeyspace(k.name);
    if (ks.ok()) out.emplace_back(k.name, (*ks)->Stats());
  }
  return out;
}

Status KeyspaceTable::DropShard(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto open = open_.find(name);
  if (open != open_.end()) {
    OpenKeyspace& ks = *open->second;
    if (ks.sessions.load(std::memory_order_acquire) != 0) {
      return Status::Busy(std::to_string(ks.sessions.load()) +
                          " sessions are bound to '" + std::string(name) + "'");
    }
    if (ks.read_mr != nullptr) (void)rpma_mr_dereg(&ks.read_mr);
    if (ks.peer != nullptr) (void)rpma_peer_delete(&ks.peer);
    open_.erase(open);
  }
  Result<std::shared_ptr<store::Keyspace>> ks = pool_->GetKeyspace(name);
  if (!ks.ok()) return ks.status();
  (*ks)->pipeline().set_commit_point(nullptr);
  ks = Status::NotFound("released");  // our handle goes before the drop
  auto point = commit_points_.find(name);
  if (point != commit_points_.end()) commit_points_.erase(point);
  return pool_->DropKeyspace(name);
}

void KeyspaceTable::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, open] : open_) {
    if (open->read_mr != nullptr) {
      int rc = rpma_mr_dereg(&open->read_mr);
      if (rc) {
        Logf("deregistering the read region of '%s': %s", name.c_str(),
             rpma_err_2str(rc));
      }
    }
    if (open->peer != nullptr) {
      int rc = rpma_peer_delete(&open->peer);
      if (rc) {
        Logf("deleting the protection domain of '%s': %s", name.c_str(),
             rpma_err_2str(rc));
      }
    }
  }
  open_.clear();
  // Nothing commits any more; the pipelines go back to their own commit
  // point before these go (the pool's keyspaces may outlive the table).
  for (auto& [name, point] : commit_points_) {
    Result<std::shared_ptr<store::Keyspace>> ks = pool_->GetKeyspace(name);
    if (ks.ok()) (*ks)->pipeline().set_commit_point(nullptr);
  }
}

}  // namespace kv::server
