// Router: the cluster forms of Client::Execute, Scan, ScanPage, Info and
// Ping (router.h). Single-key calls go through Router::OnKey.
#include <chrono>
#include <thread>

#include "router.h"

namespace kv {
namespace {

// Batch rounds: a part refused with wrong_shard goes again after the map
// is re-read, at most this many times in all.
constexpr int kMaxRounds = 8;

// The high bits of a cluster ScanPage cursor name the shard (its index in
// the map's order), the low bits the cursor within it.
constexpr int kShardCursorShift = 52;
constexpr uint64_t kInShardMask = (uint64_t{1} << kShardCursorShift) - 1;

}  // namespace

Status Router::Execute(Batch* batch) {
  std::vector<size_t> pending(batch->ops_.size());
  for (size_t i = 0; i < pending.size(); i++) pending[i] = i;
  Status run;
  for (int round = 0; !pending.empty(); round++) {
    std::vector<std::string_view> keys;
    for (size_t i : pending) keys.push_back(batch->ops_[i].key);
    std::vector<Part> parts = Split(keys);
    for (Part& p : parts) {
      for (size_t& op : p.ops) op = pending[op];  // into the batch
    }
    std::vector<Status> part_status(parts.size());
    std::vector<char> never_sent(parts.size(), 0);
    // Each shard's part on its own thread: every part is in flight at
    // once, each on its shard's connection.
    auto run_part = [&](size_t k) {
      const Part& p = parts[k];
      const Result<Route> before = RouteOfShard(p.shard);
      Result<std::shared_ptr<Client>> c =
          p.shard.empty() ? Result<std::shared_ptr<Client>>(Status::NotFound(
                                "keyspace '" + options_.keyspace +
                                "' is no longer in the cluster map"))
                          : ClientOf(p.shard);
      if (!c.ok()) {
        for (size_t i : p.ops) batch->ops_[i].result.status = c.status();
        part_status[k] = c.status();
        never_sent[k] = !p.shard.empty();
        return;
      }
      Batch sub;
      for (size_t i : p.ops) sub.ops_.push_back(batch->ops_[i]);
      part_status[k] = (*c)->Execute(&sub);
      for (size_t j = 0; j < p.ops.size(); j++) {
        batch->ops_[p.ops[j]].result = std::move(sub.ops_[j].result);
      }
      // As OnKey's gets: a one-sided read is kept only if the map names
      // the same primary and epoch after it (a deposed primary, resumed,
      // may still serve it); else it goes again at the new one.
      if (before.ok() && ChangedHands(before.value())) {
        for (size_t i : p.ops) {
          Batch::Entry& e = batch->ops_[i];
          if (e.op != Batch::Op::kGet) continue;
          if (!e.result.status.ok() && !e.result.status.IsNotFound()) continue;
          e.result.value.clear();
          e.result.status =
              Status::WrongShard("the shard changed hands during the read");
        }
      }
    };
    std::vector<std::thread> threads;
    for (size_t k = 1; k < parts.size(); k++) threads.emplace_back(run_part, k);
    if (!parts.empty()) run_part(0);
    for (std::thread& t : threads) t.join();

    pending.clear();
    run = Status::Ok();
    for (size_t k = 0; k < parts.size(); k++) {
      const Part& p = parts[k];
      const bool retry_part =
          never_sent[k] && (part_status[k].IsWrongShard() ||
                            part_status[k].code() == StatusCode::kUnavailable ||
                            part_status[k].code() == StatusCode::kTimedOut);
      bool again = false;
      for (size_t i : p.ops) {
        // Refused before any decision, or never sent: safe to send again.
        if (retry_part || batch->ops_[i].result.status.IsWrongShard()) {
          again = true;
          pending.push_back(i);
        }
      }
      if (again || part_status[k].code() == StatusCode::kUnavailable ||
          part_status[k].code() == StatusCode::kTimedOut) {
        Invalidate(p.shard);
      }
      if (!part_status[k].ok() && !retry_part && run.ok()) {
        run = part_status[k];
      }
    }
    if (pending.empty()) break;
    if (round + 1 >= kMaxRounds) {
      // What is still refused keeps its wrong_shard / unavailable status.
      if (run.ok()) run = batch->ops_[pending.front()].result.status;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 << round));
  }
  return run;
}

Status Router::Scan(
    std::string_view prefix, size_t limit,
    const std::function<bool(std::string_view, std::string_view)>& fn) {
  size_t emitted = 0;
  bool stopped = false;
  for (const std::string& shard : Shards()) {
    Result<std::shared_ptr<Client>> c = ClientOf(shard);
    if (!c.ok()) return c.status();
    Status st =
        (*c)->Scan(prefix, 0, [&](std::string_view k, std::string_view v) {
          if (!fn(k, v) || (limit != 0 && ++emitted >= limit)) {
            stopped = true;
            return false;
          }
          return true;
        });
    if (!st.ok()) return st;
    if (stopped) break;
  }
  return Status::Ok();
}

Result<uint64_t> Router::ScanPage(
    uint64_t cursor, std::string_view prefix, size_t count,
    const std::function<void(std::string_view, std::string_view)>& fn) {
  const std::vector<std::string> shards = Shards();
  size_t index = static_cast<size_t>(cursor >> kShardCursorShift);
  uint64_t in_shard = cursor & kInShardMask;
  if (index >= shards.size()) {
    return Status::InvalidArgument(
        "scan cursor " + std::to_string(cursor) +
        " is not a cursor of this keyspace (0 starts a scan; use the cursor "
        "the previous page returned)");
  }
  Result<std::shared_ptr<Client>> c = ClientOf(shards[index]);
  if (!c.ok()) return c.status();
  Result<uint64_t> next = (*c)->ScanPage(in_shard, prefix, count, fn);
  if (!next.ok()) return next.status();
  if (*next > kInShardMask) {
    return Status::Corruption("shard '" + shards[index] +
                              "' returned a scan cursor too large for a "
                              "cluster cursor");
  }
  if (*next != 0) return (uint64_t{index} << kShardCursorShift) | *next;
  // This shard is done: the next page starts the next shard (0 at the end).
  if (index + 1 >= shards.size()) return uint64_t{0};
  return uint64_t{index + 1} << kShardCursorShift;
}

Result<std::string> Router::Info(Client::InfoTopic topic) {
  std::string text;
  for (const std::string& shard : Shards()) {
    Result<std::shared_ptr<Client>> c = ClientOf(shard);
    if (!c.ok()) {
      text += "# shard " + shard + ": " + c.status().ToString() + "\n";
      continue;
    }
    Result<std::string> part = (*c)->Info(topic);
    text += "# shard " + shard + " at " + (*c)->options().server + "\n";
    text += part.ok() ? *part : part.status().ToString() + "\n";
  }
  return text;
}

Result<std::chrono::nanoseconds> Router::Ping() {
  const std::vector<std::string> shards = Shards();
  if (shards.empty()) {
    return Status::NotFound("keyspace '" + options_.keyspace +
                            "' is no longer in the cluster map");
  }
  Result<std::shared_ptr<Client>> c = ClientOf(shards.front());
  if (!c.ok()) return c.status();
  return (*c)->Ping();
}

}  // namespace kv
