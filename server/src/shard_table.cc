#include "shard_table.h"

#include <utility>

namespace kv::server {

ShardTable::ShardTable(uint32_t node_id) : node_id_(node_id) {}

void ShardTable::SetLeaseCheck(std::function<bool()> lease_alive) {
  std::lock_guard<std::mutex> lock(mu_);
  lease_alive_ = std::move(lease_alive);
}

std::vector<std::string> ShardTable::Set(Owned owned) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> lost;
  if (fenced_) return lost;
  for (auto it = owned.begin(); it != owned.end();) {
    it = released_.count(it->first) ? owned.erase(it) : std::next(it);
  }
  for (const auto& [name, epoch] : owned_) {
    if (owned.find(name) == owned.end()) lost.push_back(name);
  }
  owned_ = std::move(owned);
  return lost;
}

Status ShardTable::Look(const Owned& table, std::string_view missing,
                        std::string_view name, uint32_t* epoch) const {
  // Strings only on a refusal: this runs for every COMMIT.
  auto node = [this] { return "node " + std::to_string(node_id_); };
  bool alive = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fenced_) {
      return Status::WrongShard(node() + " is fenced (its cluster lease " +
                                "lapsed): it serves no shard");
    }
    auto it = table.find(name);
    if (it == table.end()) {
      return Status::WrongShard(node() + std::string(missing) + " shard '" +
                                std::string(name) + "'");
    }
    if (epoch != nullptr) *epoch = it->second;
    alive = lease_alive_ && lease_alive_();
  }
  if (!alive) {
    return Status::WrongShard(node() +
                              " is past its lease deadline: it serves "
                              "no shard until the lease is renewed");
  }
  return Status::Ok();
}

Status ShardTable::CheckAdmit(std::string_view name, uint32_t* epoch) const {
  return Look(owned_, " does not serve", name, epoch);
}

namespace {
Status SameEpoch(std::string_view name, uint32_t epoch,
                 uint32_t request_epoch) {
  if (request_epoch == epoch) return Status::Ok();
  return Status::WrongShard(
      "shard '" + std::string(name) + "' is at map epoch " +
      std::to_string(epoch) + ", the request names epoch " +
      std::to_string(request_epoch) + ": re-read the map");
}
}  // namespace

Status ShardTable::CheckRequest(std::string_view name,
                                uint32_t request_epoch) const {
  uint32_t epoch = 0;
  KV_RETURN_IF_ERROR(CheckAdmit(name, &epoch));
  return SameEpoch(name, epoch, request_epoch);
}

Status ShardTable::CheckPeer(std::string_view name,
                             uint32_t request_epoch) const {
  uint32_t epoch = 0;
  Status st = Look(incoming_, " receives no copy of", name, &epoch);
  if (st.IsWrongShard() && BackupEpoch(name) != 0) {
    st = Look(backups_, " is no backup of", name, &epoch);
  }
  KV_RETURN_IF_ERROR(st);
  return SameEpoch(name, epoch, request_epoch);
}

void ShardTable::SetBackups(Owned backups) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fenced_) return;
  backups_ = std::move(backups);
}

uint32_t ShardTable::BackupEpoch(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = backups_.find(name);
  return it == backups_.end() ? 0 : it->second;
}

ShardTable::Owned ShardTable::backups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backups_;
}

void ShardTable::SetIncoming(Owned incoming) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fenced_) return;
  incoming_ = std::move(incoming);
}

void ShardTable::AddIncoming(const std::string& name, uint32_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fenced_) return;
  incoming_[name] = epoch;
}

void ShardTable::RemoveIncoming(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = incoming_.find(name);
  if (it != incoming_.end()) incoming_.erase(it);
}

uint32_t ShardTable::IncomingEpoch(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = incoming_.find(name);
  return it == incoming_.end() ? 0 : it->second;
}

ShardTable::Owned ShardTable::incoming() const {
  std::lock_guard<std::mutex> lock(mu_);
  return incoming_;
}

void ShardTable::Release(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  released_.insert(name);
  auto it = owned_.find(name);
  if (it != owned_.end()) owned_.erase(it);
}

void ShardTable::Unrelease(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = released_.find(name);
  if (it != released_.end()) released_.erase(it);
}

bool ShardTable::released(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return released_.count(name) != 0;
}

bool ShardTable::MayAcknowledge() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !fenced_ && lease_alive_ && lease_alive_();
}

void ShardTable::Fence() {
  std::lock_guard<std::mutex> lock(mu_);
  fenced_ = true;
  owned_.clear();
  incoming_.clear();
  backups_.clear();
}

bool ShardTable::fenced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fenced_;
}

ShardTable::Owned ShardTable::owned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return owned_;
}

}  // namespace kv::server
