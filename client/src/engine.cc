// Engine: the scheduler of in-flight operations and the message side of
// the put path. The get path's decisions are in get_path.cc.
#include "engine.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kv/index_format.h"
#include "kv/record_format.h"

namespace kv {
namespace {
namespace pr = kv::protocol;
namespace rf = kv::record_format;
namespace ix = kv::index_format;
using Clock = std::chrono::steady_clock;
}  // namespace

EngineHooksForTesting engine_hooks_for_testing;

Engine::Engine(Connection* conn, const ClientOptions& options)
    : conn_(conn), options_(options), geo_(conn->geometry()) {}

bool Engine::Allocate(size_t len, size_t* off) {
  const size_t aligned = (len + 63) / 64 * 64;
  if (arena_used_ + aligned > conn_->arena_size()) return false;
  *off = arena_used_;
  arena_used_ += aligned;
  return true;
}

bool Engine::CanSendRequest() const {
  return conn_->send_slots_free() > 0 && conn_->sq_free() >= 2 &&
         requests_out_ < conn_->max_inflight();
}

void Engine::Finish(Op* op, Status st) {
  op->status = std::move(st);
  op->done = true;
  holding_--;
  finished_++;
}

Status Engine::CheckArguments(const Op& op) const {
  if (op.kind == Op::Kind::kInfo) return Status::Ok();
  if (op.key.size() < rf::kMinKeySize || op.key.size() > rf::kMaxKeySize) {
    return Status::InvalidArgument("key must be 1..1024 bytes, got " +
                                   std::to_string(op.key.size()));
  }
  if (op.kind == Op::Kind::kGet) return Status::Ok();
  if (op.has_ttl) {
    if (op.kind != Op::Kind::kPut) {
      return Status::InvalidArgument("a delete takes no time to live");
    }
    KV_RETURN_IF_ERROR(rf::CheckTtl(op.ttl_ms));
    // A keyspace made before expiring keys may have a max_value_size
    // whose largest record fits its segment only without the expiry.
    if (rf::RecordSize(op.key.size(), op.value.size(), true) >
        geo_.segment_size) {
      return Status::InvalidArgument(
          "value of " + std::to_string(op.value.size()) +
          " bytes with a time to live does not fit the keyspace's " +
          std::to_string(geo_.segment_size) + "-byte segments");
    }
  }
  if (op.kind == Op::Kind::kPut &&
      op.value.size() > conn_->accept().max_value_size) {
    return Status::InvalidArgument(
        "value of " + std::to_string(op.value.size()) +
        " bytes exceeds the keyspace's limit of " +
        std::to_string(conn_->accept().max_value_size) + " bytes");
  }
  if (op.if_absent && op.if_version != 0) {
    return Status::InvalidArgument(
        "if_absent and if_version cannot be combined");
  }
  return Status::Ok();
}

Status Engine::Run(const std::vector<Op*>& ops) {
  holding_ = 0;
  arena_used_ = 0;
  finished_ = 0;
  for (Op* op : ops) {
    op->done = false;
    op->expiry = 0;
    op->state = Op::State::kReady;
    op->attempts = 0;
    // Arguments first: a bad one is invalid_argument whatever the
    // connection's state, and nothing is sent for it.
    Status st = CheckArguments(*op);
    if (!st.ok()) {
      op->status = std::move(st);
      op->done = true;
      finished_++;
      continue;
    }
    ready_.push_back(op);
  }
  // The timeout bounds a wait without progress, not the whole batch.
  auto deadline = Clock::now() + options_.op_timeout;
  std::vector<Connection::Event> events;
  if (ready_.empty()) return Status::Ok();  // every op refused its arguments
  if (Clock::now() - last_run_ > std::chrono::milliseconds(100)) {
    // After a pause, look for a message the server sent meanwhile (an
    // ERROR before it closed an idle connection) before writing anything:
    // one poll that does not wait.
    Status st = conn_->Wait(Clock::time_point::max(), &events, Clock::now());
    for (const Connection::Event& e : events) {
      if (e.kind == Connection::Event::kMessage) OnMessage(e);
    }
    events.clear();
    if (!st.ok() && !conn_->failed()) conn_->Fail(st);
  }
  while (true) {
    // Start what fits, in order.
    while (!ready_.empty() && !conn_->failed()) {
      Op* op = ready_.front();
      if (holding_ == 0) arena_used_ = 0;  // nothing in flight holds bytes
      holding_++;
      const Start s = StartOp(op);
      if (s == Start::kWait) {
        holding_--;
        break;
      }
      ready_.pop_front();
    }
    // Counted by Finish: no scan of the whole batch per wake-up.
    if (finished_ == ops.size()) break;
    if (conn_->failed()) break;
    events.clear();
    // A busy REFILL waits out its backoff: wake then to send it again.
    const auto wake = refill_retry_at_ > Clock::now() && refill_id_ == 0
                          ? refill_retry_at_
                          : Clock::time_point::max();
    Status st = conn_->Wait(deadline, &events, wake);
    if (!events.empty()) deadline = Clock::now() + options_.op_timeout;
    for (Connection::Event& e : events) {
      if (e.kind == Connection::Event::kMessage) {
        if (engine_hooks_for_testing.message) {
          engine_hooks_for_testing.message(&e);
        }
        OnMessage(e);
        continue;
      }
      Op* op = reinterpret_cast<Op*>(e.tag);
      if (--op->reads == 0) OnReadsDone(op);
    }
    if (!st.ok()) break;
  }
  if (conn_->failed()) {
    Status why = conn_->failure();
    for (Op* op : ops) {
      if (op->done) continue;
      const bool write =
          op->kind == Op::Kind::kPut || op->kind == Op::Kind::kDelete;
      const bool sent = op->state == Op::State::kAwaitAck;
      if (write && sent && !why.IsWrongShard()) {
        op->status = Status(why.code(), why.message() +
                                            " — the write may or may not "
                                            "have been applied");
      } else if (write && !sent && options_.map_epoch != 0 &&
                 why.code() == StatusCode::kUnavailable) {
        // A cluster shard's connection (a move's hand-off ends it): this
        // write's COMMIT never left, so it was not applied; wrong_shard
        // makes the cluster client re-read the map and send it again.
        op->status =
            Status::WrongShard(why.message() + " — the write was not sent");
      } else {
        op->status = why;
      }
      op->done = true;
    }
    ready_.clear();
    awaiting_.clear();
    requests_out_ = 0;
    return why;
  }
  last_run_ = Clock::now();
  return Status::Ok();
}

Engine::Start Engine::StartOp(Op* op) {
  switch (op->kind) {
    case Op::Kind::kGet:
      return StartGet(op);
    case Op::Kind::kPut:
    case Op::Kind::kDelete:
      return StartWrite(op);
    case Op::Kind::kInfo:
      return StartInfo(op);
  }
  return Start::kWait;
}

Engine::Start Engine::StartInfo(Op* op) {
  if (!CanSendRequest()) return Start::kWait;
  const uint32_t id = NextRequestId();
  const uint8_t topic = op->info_topic;
  Status st = conn_->Send(pr::Type::kInfo, id, &topic, 1);
  if (!st.ok()) {
    Finish(op, st);
    return Start::kFinished;
  }
  awaiting_[id] = op;
  requests_out_++;
  op->state = Op::State::kAwaitAck;
  return Start::kStarted;
}

Engine::Start Engine::RequestRefill(bool for_delete) {
  if (refill_id_ != 0) return Start::kWait;
  if (Clock::now() < refill_retry_at_) return Start::kWait;  // backoff
  if (!CanSendRequest()) return Start::kWait;
  refill_id_ = NextRequestId();
  const uint8_t flags = for_delete ? pr::kRefillForDelete : 0;
  Status st = conn_->Send(pr::Type::kRefill, refill_id_, &flags, 1);
  if (!st.ok()) {
    refill_id_ = 0;
    conn_->Fail(st);
    return Start::kWait;
  }
  requests_out_++;
  return Start::kWait;
}

Engine::Start Engine::StartWrite(Op* op) {
  const bool del = op->kind == Op::Kind::kDelete;  // arguments checked in Run
  // The record carries the time to live; the server stamps the absolute
  // expiry at commit with its own clock (SealRecord).
  const uint64_t ttl = op->has_ttl ? static_cast<uint64_t>(op->ttl_ms) : 0;
  const size_t size =
      rf::RecordSize(op->key.size(), del ? 0 : op->value.size(), ttl != 0);
  // A put never goes into the delete reserve (it could not commit there):
  // it asks for a normal grant instead.
  const bool deletes_only = (conn_->grant().flags & pr::kGrantDeletesOnly) != 0;
  if (conn_->tail() + size > conn_->grant().size || (deletes_only && !del)) {
    if (!refill_error_.ok() && refill_id_ == 0) {
      // The last refill failed (e.g. no_space): report it, try again on
      // the next operation.
      Status why = refill_error_;
      refill_error_ = Status::Ok();
      Finish(op, why);
      return Start::kFinished;
    }
    return RequestRefill(del);
  }
  if (!CanSendRequest()) return Start::kWait;
  size_t off = 0;
  if (!Allocate(size, &off)) return Start::kWait;
  rf::EncodeRecord(conn_->arena() + off, geo_.keyspace_id, 0, del, op->key,
                   del ? std::string_view() : op->value, ttl);
  op->hash = ix::HashKey(op->key);
  uint64_t seg_off = 0;
  Status st = conn_->PostAppend(off, size, &seg_off, /*more=*/true);
  if (!st.ok()) {
    conn_->Fail(st);
    return Start::kWait;
  }
  pr::Commit c;
  c.op = del ? 1 : 0;
  c.condition = op->if_absent ? 1 : (op->if_version != 0 ? 2 : 0);
  c.segment = conn_->grant().segment;
  c.grant_id = conn_->grant().grant_id;
  c.offset = seg_off;
  c.length = static_cast<uint32_t>(size);
  c.key_hash = op->hash;
  c.expected_sequence = op->if_version;
  uint8_t payload[pr::kCommitSize];
  const uint32_t id = NextRequestId();
  st =
      conn_->Send(pr::Type::kCommit, id, payload, pr::EncodeCommit(c, payload));
  if (!st.ok()) {
    conn_->Fail(st);
    return Start::kWait;
  }
  awaiting_[id] = op;
  requests_out_++;
  op->state = Op::State::kAwaitAck;
  return Start::kStarted;
}

void Engine::OnMessage(const Connection::Event& e) {
  const uint8_t* body = e.body.data();
  const size_t len = e.body.size();
  if (e.header.type == pr::Type::kError) {
    std::string text(body + (len > 0 ? 1 : 0), body + len);
    // wrong_shard: the shard moved away; the server answered everything
    // before this ERROR and processed nothing after it, so every request
    // still waiting was not applied (a retry elsewhere is safe).
    if (len > 0 && body[0] == static_cast<uint8_t>(StatusCode::kWrongShard)) {
      conn_->Fail(
          Status::WrongShard("server " + conn_->server() + ": " + text));
      return;
    }
    conn_->Fail(Status::Unavailable("server " + conn_->server() +
                                    " closed the connection: " + text));
    return;
  }
  if (requests_out_ > 0) requests_out_--;
  if (e.header.type == pr::Type::kRefillAck &&
      e.header.request_id == refill_id_) {
    refill_id_ = 0;
    pr::RefillAck a;
    Status st = pr::DecodeRefillAck(body, len, geo_.segment_size, &a);
    if (!st.ok()) {
      conn_->Fail(
          Status::Unavailable("server sent a bad REFILL_ACK: " + st.message()));
      return;
    }
    if (a.status == StatusCode::kBusy) {
      OnRefillBusy(a.message);
      return;
    }
    refill_busy_since_ = {};
    refill_backoff_ = std::chrono::milliseconds(0);
    if (a.status != StatusCode::kOk) {
      refill_error_ = Status(
          a.status, a.message.empty() ? "no log segment to grant" : a.message);
      return;
    }
    refill_error_ = Status::Ok();
    stats_.refills++;
    st = conn_->InstallGrant(a.grant);
    if (!st.ok()) conn_->Fail(st);
    return;
  }
  auto it = awaiting_.find(e.header.request_id);
  if (it == awaiting_.end()) {
    conn_->Fail(Status::Unavailable("server " + conn_->server() +
                                    " answered an unknown request"));
    return;
  }
  Op* op = it->second;
  awaiting_.erase(it);
  if (e.header.type == pr::Type::kInfoAck && op->kind == Op::Kind::kInfo) {
    StatusCode code = StatusCode::kOk;
    std::string text;
    if (!pr::DecodeStatusText(body, len, &code, &text).ok()) {
      conn_->Fail(Status::Unavailable("server sent a bad INFO_ACK"));
      return;
    }
    if (code != StatusCode::kOk) {
      Finish(op, Status(code, text));
      return;
    }
    op->out = std::move(text);
    Finish(op, Status::Ok());
    return;
  }
  if (e.header.type != pr::Type::kCommitAck) {
    conn_->Fail(Status::Unavailable("server sent an unexpected message"));
    return;
  }
  pr::CommitAck a;
  Status st = pr::DecodeCommitAck(body, len, &a);
  if (!st.ok()) {
    conn_->Fail(
        Status::Unavailable("server sent a bad COMMIT_ACK: " + st.message()));
    return;
  }
  if (a.status != StatusCode::kOk) {
    Finish(op, Status(a.status, a.message));
    return;
  }
  op->sequence = a.sequence;
  op->had_previous = (a.flags & pr::kAckHadPrevious) != 0;
  (op->kind == Op::Kind::kPut ? stats_.puts : stats_.deletes)++;
  if (op->kind == Op::Kind::kPut) {
    CacheSlot(op->key,
              ix::PackSlot({ix::Fingerprint(op->hash),
                            static_cast<uint16_t>(a.length / ix::kUnit),
                            static_cast<uint32_t>(a.log_offset / ix::kUnit)}));
  } else {
    ForgetSlot(op->key);
  }
  Finish(op, Status::Ok());
}

void Engine::OnRefillBusy(const std::string& message) {
  using std::chrono::milliseconds;
  const auto now = Clock::now();
  if (refill_busy_since_ == Clock::time_point{}) refill_busy_since_ = now;
  if (now - refill_busy_since_ >= options_.op_timeout) {
    refill_error_ = Status::Busy(
        "server " + conn_->server() + " kept refusing a grant for " +
        std::to_string(options_.op_timeout.count()) + " ms: " + message);
    refill_busy_since_ = {};
    refill_backoff_ = milliseconds(0);
    return;
  }
  // Backoff: doubling from 5 ms up to 500 ms, but never sooner than the
  // server's "retry in N ms".
  refill_backoff_ = refill_backoff_.count() == 0
                        ? milliseconds(5)
                        : std::min(milliseconds(500), refill_backoff_ * 2);
  milliseconds wait = refill_backoff_;
  const size_t at = message.find("retry in ");
  if (at != std::string::npos) {
    const long hint = std::strtol(message.c_str() + at + 9, nullptr, 10);
    if (hint > 0 && hint <= 10000) wait = std::max(wait, milliseconds(hint));
  }
  refill_retry_at_ = now + wait;
}

void Engine::CacheSlot(std::string_view key, uint64_t slot) {
  if (options_.slot_cache_entries == 0) return;
  if (cache_.size() >= options_.slot_cache_entries) cache_.clear();
  cache_[std::string(key)] = slot;
}

}  // namespace kv
