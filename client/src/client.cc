// kv::Client and kv::Batch: the public face over Connection + Engine.
#include "kv/client/client.h"

#include <mutex>

#include "client_state.h"
#include "kv/protocol.h"
#include "router.h"

namespace kv {

Status ClientState::Judge(uint64_t expiry_ms, bool* visible, int64_t* ttl_ms) {
  *visible = true;
  *ttl_ms = -1;
  if (expiry_ms == 0) return Status::Ok();
  if (clock.NeedsSync()) {
    Op op;
    op.kind = Op::Kind::kInfo;
    op.info_topic = static_cast<uint8_t>(protocol::InfoTopic::kPing);
    const int64_t sent = ServerClock::LocalMs();
    (void)engine.Run({&op});
    const int64_t received = ServerClock::LocalMs();
    KV_RETURN_IF_ERROR(op.status);
    uint64_t server_ms = 0;
    Status st = protocol::ParsePingText(op.out, &server_ms);
    if (!st.ok()) {
      return Status::Unavailable("server " + conn->server() +
                                 " did not publish its clock, needed to "
                                 "judge an expiring key: " +
                                 st.message());
    }
    clock.AddSample(sent, received, server_ms);
  }
  const int64_t left = clock.RemainingMs(expiry_ms);
  *visible = left > 0;
  *ttl_ms = left;
  return Status::Ok();
}

namespace {

Status RunOne(ClientState* s, Op* op) {
  std::lock_guard<std::mutex> lock(s->mu);
  // A failed connection fails the op in Run, after its argument checks.
  (void)s->engine.Run({op});
  return op->status;
}

Op WriteOp(Op::Kind kind, std::string_view key, std::string_view value,
           const WriteOptions& o) {
  Op op;
  op.kind = kind;
  op.key = key;
  op.value = value;
  op.if_absent = o.if_absent;
  op.if_version = o.if_version;
  op.has_ttl = o.ttl.has_value();
  op.ttl_ms = o.ttl ? o.ttl->count() : 0;
  return op;
}

}  // namespace

Client::Client(ClientOptions options, std::unique_ptr<Connection> conn)
    : options_(std::move(options)),
      state_(std::make_unique<ClientState>(std::move(conn), options_)) {}

Client::Client(ClientOptions options, std::unique_ptr<Router> router)
    : options_(std::move(options)), router_(std::move(router)) {}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  if (options.max_inflight == 0) {
    return Status::InvalidArgument("max_inflight must be at least 1");
  }
  if (!options.cluster.empty()) {
    Result<std::unique_ptr<Router>> r = Router::Open(options);
    if (!r.ok()) return r.status();
    return std::unique_ptr<Client>(new Client(options, std::move(*r)));
  }
  Result<std::unique_ptr<Connection>> c = Connection::Open(options);
  if (!c.ok()) return c.status();
  return std::unique_ptr<Client>(new Client(options, std::move(*c)));
}

ClientStats Client::stats() const {
  if (router_) return router_->stats();
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->engine.stats();
}

uint32_t Client::max_value_size() const {
  if (router_) return router_->max_value_size();
  return state_->conn->accept().max_value_size;
}

Status Client::Put(std::string_view key, std::string_view value,
                   const WriteOptions& options) {
  if (router_) {
    return router_->OnKey(
        key, [&](Client& c) { return c.Put(key, value, options); });
  }
  Op op = WriteOp(Op::Kind::kPut, key, value, options);
  Status st = RunOne(state_.get(), &op);
  if (st.ok() && options.version != nullptr) {
    options.version->sequence = op.sequence;
  }
  return st;
}

Status Client::Delete(std::string_view key, const WriteOptions& options,
                      bool* had_previous) {
  if (router_) {
    return router_->OnKey(
        key, [&](Client& c) { return c.Delete(key, options, had_previous); });
  }
  Op op = WriteOp(Op::Kind::kDelete, key, {}, options);
  Status st = RunOne(state_.get(), &op);
  if (st.ok() && had_previous != nullptr) *had_previous = op.had_previous;
  if (st.ok() && options.version != nullptr) {
    options.version->sequence = op.sequence;
  }
  return st;
}

Status Client::Get(std::string_view key, std::string* value,
                   KeyVersion* version) {
  if (router_) {
    return router_->OnKey(
        key, [&](Client& c) { return c.Get(key, value, version); },
        /*read_only=*/true);
  }
  Op op;
  op.kind = Op::Kind::kGet;
  op.key = key;
  std::lock_guard<std::mutex> lock(state_->mu);
  (void)state_->engine.Run({&op});
  if (!op.status.ok()) return op.status;
  bool visible = true;
  int64_t ttl_ms = -1;
  KV_RETURN_IF_ERROR(state_->Judge(op.expiry, &visible, &ttl_ms));
  if (!visible) return Status::NotFound("key not found");
  *value = std::move(op.out);
  if (version != nullptr) {
    version->sequence = op.sequence;
    version->expires_at_ms = op.expiry;
    version->ttl_ms = ttl_ms;
  }
  return Status::Ok();
}

Result<int64_t> Client::Ttl(std::string_view key) {
  std::string value;
  KeyVersion version;
  Status st = Get(key, &value, &version);
  if (st.IsNotFound()) return kTtlAbsent;
  if (!st.ok()) return st;
  return version.ttl_ms;
}

Result<bool> Client::Exists(std::string_view key) {
  std::string ignored;
  Status st = Get(key, &ignored);
  if (st.ok()) return true;
  if (st.IsNotFound()) return false;
  return st;
}

Result<std::string> Client::Info(InfoTopic topic) {
  if (router_) return router_->Info(topic);
  Op op;
  op.kind = Op::Kind::kInfo;
  op.info_topic = static_cast<uint8_t>(topic);
  Status st = RunOne(state_.get(), &op);
  if (!st.ok()) return st;
  return std::move(op.out);
}

Result<std::chrono::nanoseconds> Client::Ping() {
  if (router_) return router_->Ping();
  Op op;
  op.kind = Op::Kind::kInfo;
  op.info_topic = static_cast<uint8_t>(protocol::InfoTopic::kPing);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = RunOne(state_.get(), &op);
  if (!st.ok()) return st;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - t0);
}

Status Client::Execute(Batch* batch) {
  if (router_) return router_->Execute(batch);
  std::vector<Op> ops(batch->ops_.size());
  std::vector<Op*> ptrs;
  ptrs.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); i++) {
    const Batch::Entry& e = batch->ops_[i];
    Op& op = ops[i];
    op.kind =
        e.op == Batch::Op::kPut
            ? Op::Kind::kPut
            : (e.op == Batch::Op::kGet ? Op::Kind::kGet : Op::Kind::kDelete);
    op.key = e.key;
    op.value = e.value;
    op.if_absent = e.if_absent;
    op.if_version = e.if_version;
    op.has_ttl = e.ttl.has_value();
    op.ttl_ms = e.ttl ? e.ttl->count() : 0;
    ptrs.push_back(&op);
  }
  Status run;
  std::lock_guard<std::mutex> lock(state_->mu);
  // A failed connection fails each op in Run, after its argument checks.
  run = state_->engine.Run(ptrs);
  for (size_t i = 0; i < ops.size(); i++) {
    Batch::Result& r = batch->ops_[i].result;
    r.status = ops[i].status;
    r.value = std::move(ops[i].out);
    r.version = KeyVersion{};
    r.version.sequence = ops[i].sequence;
    r.had_previous = ops[i].had_previous;
    if (ops[i].kind != Op::Kind::kGet || !r.status.ok()) continue;
    // Expiries are judged after the run (no read in flight for the ping).
    bool visible = true;
    Status st = state_->Judge(ops[i].expiry, &visible, &r.version.ttl_ms);
    if (!st.ok()) {
      r.status = st;
      r.value.clear();
    } else if (!visible) {
      r.status = Status::NotFound("key not found");
      r.value.clear();
      r.version = KeyVersion{};
    } else {
      r.version.expires_at_ms = ops[i].expiry;
    }
  }
  return run;
}

void Batch::Put(std::string_view key, std::string_view value,
                const WriteOptions& options) {
  ops_.push_back(Entry{Op::kPut,
                       std::string(key),
                       std::string(value),
                       options.if_absent,
                       options.if_version,
                       {},
                       options.ttl});
}

void Batch::Get(std::string_view key) {
  ops_.push_back(Entry{Op::kGet, std::string(key), {}, false, 0, {}, {}});
}

void Batch::Delete(std::string_view key, const WriteOptions& options) {
  ops_.push_back(Entry{Op::kDelete,
                       std::string(key),
                       {},
                       options.if_absent,
                       options.if_version,
                       {},
                       options.ttl});
}

void Batch::Clear() { ops_.clear(); }

}  // namespace kv
