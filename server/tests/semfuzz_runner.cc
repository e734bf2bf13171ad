#include "semfuzz_runner.h"

#include <cstring>

#include "kv/index_format.h"
#include "kv/store/pool.h"

namespace kv::semfuzz {
namespace {

namespace rf = record_format;
using std::chrono::milliseconds;

// Generous: a slow CI machine must not look like a hung server.
constexpr milliseconds kWait(10000);
constexpr uint64_t kUnit = index_format::kUnit;

std::string ValueFor(uint8_t seed, uint32_t key, size_t len) {
  std::string v(len, 'a');
  uint32_t x = seed * 2654435761u + key * 40503u + 1;
  for (size_t i = 0; i < len; i++) {
    x = x * 1103515245u + 12345u;
    v[i] = static_cast<char>('a' + (x >> 16) % 26);
  }
  return v;
}

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

std::string KeyName(uint32_t i) {
  i %= kKeys;
  if (i < 6) return "k" + std::to_string(i);
  return "long-key-" + std::to_string(i) + std::string(100, 'x');
}

Runner::Runner(SemServer* server, const std::vector<e2e::RawClient*>& clients)
    : server_(server) {
  for (int i = 0; i < kClients; i++) conns_[i].rc = clients[i];
}

void Runner::Ensure(int c) {
  if (!conns_[c].connected) Connect(c);
}

void Runner::Connect(int c) {
  Conn& k = conns_[c];
  Status st = k.rc->ConnectTo("127.0.0.1", server_->port(), "default");
  if (!st.ok())
    Violation("client " + std::to_string(c) +
              " cannot connect: " + st.ToString());
  protocol::Accept a;
  st = k.rc->accept(&a);
  if (!st.ok() || a.admit != protocol::Admit::kOk) {
    Violation("client " + std::to_string(c) +
              " not admitted: " + st.ToString() + " " + a.reason);
  }
  if (!geometry_known_) {
    geometry_known_ = true;
    model_.keyspace_id = a.keyspace_id;
    model_.segment_size = a.segment_size;
    model_.max_value_size = a.max_value_size;
    model_.segment_count = static_cast<uint32_t>(a.log_size / a.segment_size);
    Trace("keyspace: " + std::to_string(model_.segment_count) +
          " segments of " + std::to_string(a.segment_size) + " bytes");
  } else if (a.keyspace_id != model_.keyspace_id ||
             a.segment_size != model_.segment_size) {
    Violation("accept geometry changed between connections");
  }
  std::vector<const GrantModel*> others;
  for (int i = 0; i < kClients; i++) {
    if (i != c && conns_[i].connected) others.push_back(&conns_[i].g);
  }
  const std::string bad = model_.CheckNewGrant(a.grant, others);
  if (!bad.empty())
    Violation("accept of client " + std::to_string(c) + ": " + bad);
  k.connected = true;
  k.g.Reset(a.grant, model_.segment_size);
  k.pending = Written{};
  k.next_request = 1;
  Trace("client " + std::to_string(c) + " connected: segment " +
        std::to_string(a.grant.segment) + " grant " +
        std::to_string(a.grant.grant_id) + " start " +
        std::to_string(a.grant.start) + " size " +
        std::to_string(a.grant.size));
}

void Runner::Gone(int c) {
  Conn& k = conns_[c];
  k.rc->Disconnect();
  k.connected = false;
  k.g.held = false;
  k.pending = Written{};
}

bool Runner::Exchange(int c, protocol::Type type, const std::string& payload,
                      protocol::Header* h, std::string* reply) {
  Conn& k = conns_[c];
  const uint32_t id = k.next_request++;
  Status st = k.rc->SendMessage(type, payload, id);
  if (st.ok()) st = k.rc->ReceiveMessage(h, reply, kWait);
  if (st.code() == StatusCode::kTimedOut) {
    Violation("client " + std::to_string(c) +
              ": no reply from the server: " + st.ToString());
  }
  if (!st.ok()) {
    Gone(c);
    return false;
  }
  if (h->type != protocol::Type::kError && h->request_id != id) {
    Violation("reply carries request id " + std::to_string(h->request_id) +
              ", expected " + std::to_string(id));
  }
  return true;
}

bool Runner::WriteRecord(int c, const std::string& key,
                         const std::string& value, bool tombstone) {
  Conn& k = conns_[c];
  const size_t len = rf::RecordSize(key.size(), value.size());
  const uint64_t size = k.g.grant.size;
  if (!k.g.held || len > size || k.g.tail > size - len) return false;
  const uint64_t off = k.g.tail;
  uint8_t* dst = k.g.shadow.data() + off;
  rf::EncodeRecord(dst, model_.keyspace_id, 0, tombstone, key, value);
  Status st =
      k.rc->Write(k.g.grant.write_desc, off - k.g.grant.start,
                  std::string_view(reinterpret_cast<char*>(dst), len), kWait);
  if (!st.ok()) {
    Violation("one-sided write into the own grant failed: " + st.ToString());
  }
  k.pending = Written{true,
                      k.g.grant.segment,
                      off,
                      static_cast<uint32_t>(len),
                      index_format::HashKey(key),
                      tombstone,
                      key};
  return true;
}

std::string Runner::Describe(int c, const protocol::Commit& cm) const {
  const GrantModel& g = conns_[c].g;
  return "client " + std::to_string(c) + " COMMIT{op " + std::to_string(cm.op) +
         ", cond " + std::to_string(cm.condition) + ", flags " +
         std::to_string(cm.flags) + ", segment " + std::to_string(cm.segment) +
         ", grant " + std::to_string(cm.grant_id) + ", offset " +
         Hex(cm.offset) + ", length " + Hex(cm.length) + ", hash " +
         Hex(cm.key_hash) + "} with grant{segment " +
         std::to_string(g.grant.segment) + ", id " +
         std::to_string(g.grant.grant_id) + ", start " +
         std::to_string(g.grant.start) + ", tail " + std::to_string(g.tail) +
         ", held " + std::to_string(g.held) + "}";
}

void Runner::Commit(int c, const protocol::Commit& cm) {
  Conn& k = conns_[c];
  const Prediction p = model_.Predict(k.g, cm);
  const bool wire_bad = cm.op > 1 || cm.condition > 2 || cm.flags != 0;
  uint8_t payload[protocol::kCommitSize];
  protocol::EncodeCommit(cm, payload);
  protocol::Header h;
  std::string reply;
  Trace("step " + std::to_string(step_) + ": " + Describe(c, cm) +
        (p.ok ? " -> must be ok" : " -> must fail: " + p.why));
  if (!Exchange(c, protocol::Type::kCommit,
                std::string(reinterpret_cast<char*>(payload), sizeof(payload)),
                &h, &reply)) {
    if (!wire_bad) Violation("connection ended on " + Describe(c, cm));
    return;
  }
  if (h.type == protocol::Type::kError) {
    if (!wire_bad) Violation("ERROR reply to a well-formed " + Describe(c, cm));
    k.rc->WaitClosed(kWait);
    Gone(c);
    return;
  }
  if (wire_bad) {
    Violation("a COMMIT with a bad op/condition/flags got no ERROR");
  }
  protocol::CommitAck ack;
  if (h.type != protocol::Type::kCommitAck ||
      !protocol::DecodeCommitAck(reinterpret_cast<const uint8_t*>(reply.data()),
                                 reply.size(), &ack)
           .ok()) {
    Violation("no COMMIT_ACK for " + Describe(c, cm));
  }
  if (p.advances_tail) k.g.tail = cm.offset + cm.length;
  if (ack.status == StatusCode::kOk) {
    if (!p.ok) {
      Violation("server acknowledged a COMMIT it must refuse (" + p.why +
                "): " + Describe(c, cm));
    }
    const std::string bad = model_.Apply(&k.g, cm, p, ack);
    if (!bad.empty()) Violation(bad + ": " + Describe(c, cm));
    k.last_acked = Written{true,
                           cm.segment,
                           cm.offset,
                           cm.length,
                           cm.key_hash,
                           cm.op == 1,
                           std::string(p.view.key)};
    if (k.pending.valid && k.pending.offset == cm.offset) k.pending = Written{};
    return;
  }
  if (p.ok && ack.status != StatusCode::kNoSpace) {
    Violation("server refused a valid COMMIT (" +
              std::string(StatusCodeName(ack.status)) + ": " + ack.message +
              "): " + Describe(c, cm));
  }
  if (p.condition_failed && ack.status != StatusCode::kConditionFailed) {
    Violation("expected condition_failed, got " +
              std::string(StatusCodeName(ack.status)) + ": " + ack.message +
              ": " + Describe(c, cm));
  }
}

void Runner::Refill(int c, bool for_delete) {
  Ensure(c);
  Conn& k = conns_[c];
  const std::string payload(1, for_delete ? protocol::kRefillForDelete : 0);
  protocol::Header h;
  std::string reply;
  if (!Exchange(c, protocol::Type::kRefill, payload, &h, &reply)) {
    Violation("connection ended on REFILL");
  }
  protocol::RefillAck ack;
  if (h.type != protocol::Type::kRefillAck ||
      !protocol::DecodeRefillAck(reinterpret_cast<const uint8_t*>(reply.data()),
                                 reply.size(), model_.segment_size, &ack)
           .ok()) {
    Violation("no valid REFILL_ACK");
  }
  if (ack.status == StatusCode::kNoSpace || ack.status == StatusCode::kBusy) {
    Trace("client " + std::to_string(c) + " refill: " + ack.message);
    return;  // the old grant stays
  }
  if (ack.status != StatusCode::kOk) {
    Violation("REFILL failed: " + ack.message);
  }
  std::vector<const GrantModel*> others;
  for (int i = 0; i < kClients; i++) {
    if (i != c && conns_[i].connected) others.push_back(&conns_[i].g);
  }
  const std::string bad = model_.CheckNewGrant(ack.grant, others);
  if (!bad.empty())
    Violation("REFILL of client " + std::to_string(c) + ": " + bad);
  k.g.Reset(ack.grant, model_.segment_size);
  k.pending = Written{};
  Trace("client " + std::to_string(c) + " refilled: segment " +
        std::to_string(ack.grant.segment) + " grant " +
        std::to_string(ack.grant.grant_id) + " start " +
        std::to_string(ack.grant.start));
}

void Runner::Put(int c, Input* in, bool tombstone) {
  Ensure(c);
  Conn& k = conns_[c];
  const uint32_t key_index = in->U8();
  const uint8_t len_byte = tombstone ? 0 : in->U8();
  const uint8_t seed = tombstone ? 0 : in->U8();
  const uint8_t cond = in->U8();
  const std::string key = KeyName(key_index);
  size_t vlen = tombstone ? 0 : size_t{len_byte} * 12;
  if (!tombstone && len_byte == 255 && k.g.held) {
    // Fill the grant exactly: the record ends at the segment's end.
    const uint64_t room = k.g.grant.size - k.g.tail;
    vlen = room > rf::kHeaderSize + key.size()
               ? room - rf::kHeaderSize - key.size()
               : 0;
  }
  if (vlen > model_.max_value_size) vlen = model_.max_value_size;
  const std::string value = ValueFor(seed, key_index, vlen);
  const size_t len = rf::RecordSize(key.size(), value.size());
  if (!k.g.held || k.g.tail + len > k.g.grant.size ||
      (k.g.reserve() && !tombstone)) {
    Refill(c, tombstone);
  }
  if (k.g.reserve() && !tombstone) return;  // a client never puts there
  if (!WriteRecord(c, key, value, tombstone)) return;
  protocol::Commit cm;
  cm.op = tombstone ? 1 : 0;
  cm.condition = cond % 3;
  cm.segment = k.g.grant.segment;
  cm.grant_id = k.g.grant.grant_id;
  cm.offset = k.pending.offset;
  cm.length = k.pending.length;
  cm.key_hash = k.pending.key_hash;
  auto it = model_.keys.find(key);
  cm.expected_sequence = (cond & 4) || it == model_.keys.end()
                             ? uint64_t{cond} << 3
                             : it->second.sequence;
  Commit(c, cm);
}

void Runner::FuzzCommit(int c, Input* in) {
  Ensure(c);
  Conn& k = conns_[c];
  const uint8_t subject = in->U8();
  const uint8_t ids = in->U8();
  const uint8_t off_mode = in->U8();
  const uint64_t off_arg = in->U64();
  const uint8_t len_mode = in->U8();
  const uint32_t len_arg = in->U32();
  const uint8_t hash_mode = in->U8();
  const uint8_t opcond = in->U8();
  const uint64_t expected = in->U64();
  const Conn& other = conns_[(c + 1 + (subject >> 2) % 2) % kClients];
  Written t;
  switch (subject % 4) {
    case 0: {  // a fresh record of our own, written now
      const uint32_t key_index = subject >> 3;
      const bool tombstone = opcond & 0x80;
      if (WriteRecord(c, KeyName(key_index),
                      tombstone
                          ? ""
                          : ValueFor(off_mode, key_index, (len_arg & 0xff) * 4),
                      tombstone)) {
        t = k.pending;
      }
      break;
    }
    case 1:  // another connection's record (committed or not)
      t = other.pending.valid ? other.pending : other.last_acked;
      break;
    case 2:  // our own last acknowledged record
      t = k.last_acked;
      break;
    default:
      break;
  }
  const uint64_t seg = model_.segment_size;
  const uint64_t mine = uint64_t{k.g.grant.segment} * seg;
  // The target's position relative to our segment (wraps when below).
  const uint64_t rel =
      t.valid ? uint64_t{t.segment} * seg + t.offset - mine : k.g.tail;
  protocol::Commit cm;
  switch (ids & 7) {
    case 5:
      cm.segment = other.g.grant.segment;
      break;
    case 6:
      cm.segment = k.g.grant.segment + 1;
      break;
    case 7:
      cm.segment = ids >> 3;
      break;
    default:
      cm.segment = k.g.grant.segment;
      break;
  }
  switch ((ids >> 3) & 7) {
    case 5:
      cm.grant_id = other.g.grant.grant_id;
      break;
    case 6:
      cm.grant_id = k.g.grant.grant_id - 1;
      break;
    case 7:
      cm.grant_id = k.g.grant.grant_id + 1;
      break;
    default:
      cm.grant_id = k.g.grant.grant_id;
      break;
  }
  switch (off_mode % 11) {
    case 0:
      cm.offset = rel;
      break;
    case 1:
      cm.offset = rel + kUnit * (off_arg % 16);
      break;
    case 2:
      cm.offset = 0 - kUnit * (1 + off_arg % 1024);
      break;
    case 3:
      cm.offset = 0 - (off_arg & ~(kUnit - 1));
      break;
    case 4:
      cm.offset = k.g.tail - kUnit * (1 + off_arg % 8);
      break;
    case 5:
      cm.offset = k.g.grant.start - kUnit * (1 + off_arg % 4);
      break;
    case 6:
      cm.offset = seg - kUnit * (off_arg % 8);
      break;
    case 7:
      cm.offset = off_arg;
      break;
    case 8:
      cm.offset = (off_arg % seg) & ~(kUnit - 1);
      break;
    case 9:  // just below 2^64, any alignment
      cm.offset = 0 - (off_arg % 4096);
      break;
    default:
      cm.offset = k.last_acked.valid ? uint64_t{k.last_acked.segment} * seg +
                                           k.last_acked.offset - mine
                                     : rel;
      break;
  }
  switch (len_mode % 6) {
    case 0:
      cm.length = t.valid ? t.length : kUnit;
      break;
    case 1:
      cm.length = static_cast<uint32_t>(kUnit * (len_arg % 130));
      break;
    case 2:
      cm.length = len_arg;
      break;
    case 3:
      cm.length = static_cast<uint32_t>(seg - cm.offset);
      break;
    case 4:  // makes offset + length wrap to a small number
      cm.length = static_cast<uint32_t>(0 - cm.offset + kUnit * (len_arg % 4));
      break;
    default:
      cm.length = 0;
      break;
  }
  switch (hash_mode % 4) {
    case 2:
      cm.key_hash = expected;
      break;
    case 3:
      cm.key_hash = index_format::HashKey(KeyName(hash_mode >> 2));
      break;
    default:
      cm.key_hash = t.valid ? t.key_hash : expected;
      break;
  }
  cm.op = (t.valid && t.tombstone) ? 1 : 0;
  if (opcond & 1) cm.op ^= 1;
  cm.condition = (opcond >> 1) % 3;
  if ((opcond & 0x7c) == 0x7c) cm.op = 2;         // the parser's ERROR
  if ((opcond & 0x7c) == 0x78) cm.condition = 3;  // likewise
  // A client's replica record (a sequence of its choosing): a protocol
  // error (only peer kvservers send them); an unknown flag: the parser's.
  if ((opcond & 0x7c) == 0x74) cm.flags = protocol::kCommitReplica;
  if ((opcond & 0x7c) == 0x70) cm.flags = 2;
  auto it = t.valid ? model_.keys.find(t.key) : model_.keys.end();
  cm.expected_sequence = (opcond & 0x40) || it == model_.keys.end()
                             ? expected
                             : it->second.sequence;
  Commit(c, cm);
}

void Runner::Info(int c, uint8_t topic) {
  Ensure(c);
  uint8_t payload[protocol::kInfoSize];
  protocol::EncodeInfo(static_cast<protocol::InfoTopic>(topic % 4), payload);
  protocol::Header h;
  std::string reply;
  if (!Exchange(c, protocol::Type::kInfo,
                std::string(reinterpret_cast<char*>(payload), sizeof(payload)),
                &h, &reply)) {
    Violation("connection ended on INFO");
  }
  if (h.type != protocol::Type::kInfoAck || reply.empty() || reply[0] != 0) {
    Violation("INFO " + std::to_string(topic % 4) + " not answered ok");
  }
  Trace("INFO " + std::to_string(topic % 4) + ":\n" + reply.substr(1));
}

void Runner::Bye(int c) {
  Conn& k = conns_[c];
  if (!k.connected) return;
  Status st = k.rc->SendMessage(protocol::Type::kBye, "", k.next_request++);
  if (st.ok() && !k.rc->WaitClosed(kWait)) {
    Violation("BYE did not end the connection");
  }
  Gone(c);
}

void Runner::Op(Input* in) {
  const uint8_t op = in->U8();
  const int c = ((op >> 3) & 3) % kClients;
  step_++;
  std::string what;
  switch (op & 7) {
    case 0:
      what = "put";
      Put(c, in, false);
      break;
    case 1:
      what = "delete";
      Put(c, in, true);
      break;
    case 2:
      what = "fuzzed commit";
      FuzzCommit(c, in);
      break;
    case 3:
      what = "refill";
      Refill(c, in->U8() & 1);
      break;
    case 4:
      what = "info";
      Info(c, in->U8());
      break;
    case 5:
      what = "bye + reconnect";
      Bye(c);
      Connect(c);
      break;
    case 6:
      what = "vanish + reconnect";
      if (conns_[c].connected) {
        conns_[c].rc->Abandon();
        conns_[c].connected = false;
        conns_[c].g.held = false;
      }
      Connect(c);
      break;
    default: {
      what = "write only";
      Ensure(c);
      const uint32_t key_index = in->U8();
      const uint8_t len_byte = in->U8();
      WriteRecord(c, KeyName(key_index),
                  ValueFor(len_byte, key_index, size_t{len_byte} * 12),
                  len_byte & 1);
      break;
    }
  }
  CheckStore("step " + std::to_string(step_) + " (" + what + " by client " +
             std::to_string(c) + ")");
}

void Runner::Finish() {
  for (int c = 0; c < kClients; c++) {
    if (!conns_[c].connected) continue;
    Info(c, static_cast<uint8_t>(protocol::InfoTopic::kPing));
    Bye(c);
  }
}

void Runner::CheckKeys(store::Keyspace* ks, const std::string& when) {
  for (uint32_t i = 0; i < kKeys; i++) {
    const std::string key = KeyName(i);
    auto it = model_.keys.find(key);
    const bool present = it != model_.keys.end() && it->second.present;
    std::string value;
    Status st = ks->Get(key, &value);
    if (present && (!st.ok() || value != it->second.value)) {
      Violation(when + ": acknowledged key '" + key.substr(0, 16) +
                "' reads back " +
                (st.ok() ? "a different value" : st.ToString()));
    }
    if (!present && !st.IsNotFound()) {
      Violation(when + ": key '" + key.substr(0, 16) +
                "' (deleted or never acknowledged) reads back " +
                (st.ok() ? "a value" : st.ToString()));
    }
  }
  size_t live = 0;
  Status st = ks->ForEach([&](const rf::RecordView& r) {
    auto it = model_.keys.find(std::string(r.key));
    if (it == model_.keys.end() || !it->second.present) {
      Violation(when + ": unacknowledged key '" + std::string(r.key) +
                "' is live");
    }
    live++;
    return true;
  });
  if (!st.ok()) Violation(when + ": ForEach: " + st.ToString());
  size_t acknowledged = 0;
  for (const auto& [key, k] : model_.keys) acknowledged += k.present;
  if (live != acknowledged) {
    Violation(when + ": " + std::to_string(live) + " live keys, " +
              std::to_string(acknowledged) + " acknowledged");
  }
}

void Runner::CheckStore(const std::string& after) {
  Result<std::unique_ptr<StoreView>> v = StoreView::Open(server_->pool_path());
  if (!v.ok()) Violation(after + ": pool view: " + v.status().ToString());
  store::CheckReport r = (*v)->Check();
  if (!r.ok()) Violation(after + ": Pool::Check: " + r.problems.front());
  CheckKeys((*v)->keyspace(), after);
}

void Runner::CheckReopened(const std::string& pool_path) {
  Result<std::unique_ptr<store::Pool>> pool = store::Pool::Open(pool_path);
  if (!pool.ok()) Violation("reopening the pool: " + pool.status().ToString());
  store::CheckReport r = (*pool)->Check();
  if (!r.ok()) Violation("reopened pool: Pool::Check: " + r.problems.front());
  Result<std::shared_ptr<store::Keyspace>> ks = (*pool)->GetKeyspace("default");
  if (!ks.ok()) Violation("reopened pool: " + ks.status().ToString());
  CheckKeys(ks->get(), "after a clean restart");
}

}  // namespace kv::semfuzz
