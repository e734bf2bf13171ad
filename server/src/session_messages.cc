// Session message handlers: what each client message does and its reply.
#include <algorithm>
#include <cstring>

#include "kv/server_clock.h"
#include "log.h"
#include "message_parser.h"
#include "session.h"

namespace kv::server {
namespace {

constexpr size_t kPayloadCap = protocol::kMaxMessage - protocol::kHeaderSize;

// An INFO text that does not fit one reply is cut at a line boundary and
// says so in its last line (never cut silently).
std::string FitInfoText(std::string text) {
  constexpr size_t kCap = kPayloadCap - 1;  // one byte of status
  if (text.size() <= kCap) return text;
  const size_t total =
      static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  constexpr size_t kNoteRoom = 96;
  size_t cut = text.rfind('\n', kCap - kNoteRoom);
  cut = cut == std::string::npos ? 0 : cut + 1;
  const size_t kept = static_cast<size_t>(
      std::count(text.begin(), text.begin() + static_cast<long>(cut), '\n'));
  text.resize(cut);
  text += "(truncated: " + std::to_string(total - kept) + " of " +
          std::to_string(total) + " lines not shown; the reply holds at most " +
          std::to_string(kCap) + " bytes)\n";
  return text;
}

}  // namespace

void Session::HandleMessage(const uint8_t* data, size_t len) {
  using Kind = ClientMessage::Kind;
  const ClientMessage m = ParseClientMessage(data, len, hello_pending_);
  const protocol::Header& h = m.header;
  // Replies go out in request order; and a REFILL's seal, a BYE's return
  // of the segment, may only follow the commit point of its commits.
  if (m.kind != Kind::kCommit) FlushQueuedCommits();
  switch (m.kind) {
    case Kind::kError:
      Fail(h.request_id, StatusCode::kInvalidArgument, m.error);
      return;
    case Kind::kBadHello:
      env_.stats->Add(env_.stats->hellos);
      RefuseHello({protocol::Admit::kMalformed, m.error});
      return;
    case Kind::kHello:
      HandleHello(h, m.hello);
      return;
    case Kind::kCommit:
      HandleCommit(h, m.commit);
      return;
    case Kind::kRefill:
      HandleRefill(h, m.refill_for_delete);
      return;
    case Kind::kInfo:
      HandleInfo(h, m.topic);
      return;
    case Kind::kBye:
      EndWith(End::kBye);
      return;
  }
}

void Session::Fail(uint32_t request_id, StatusCode code,
                   const std::string& why) {
  env_.stats->Add(env_.stats->protocol_errors);
  Logf("session %llu: protocol error: %s", static_cast<unsigned long long>(id_),
       why.c_str());
  uint8_t payload[kPayloadCap];
  const size_t n = protocol::EncodeStatusText(code, why, payload, kPayloadCap);
  Send(protocol::Type::kError, request_id, payload, n);
  end_detail_ = why;
  EndWith(End::kError);
}

void Session::RefuseHello(const Refusal& r) {
  env_.stats->Add(env_.stats->refusals);
  Logf("session %llu refused after HELLO: %s: %s",
       static_cast<unsigned long long>(id_),
       std::string(protocol::AdmitName(r.admit)).c_str(), r.reason.c_str());
  uint8_t payload[protocol::kAcceptSize];
  const size_t n = protocol::EncodeAccept(RefusalAccept(r, id_), payload);
  Send(protocol::Type::kWelcome, 0, payload, n);
  end_detail_ = r.reason;
  EndWith(End::kError);
}

void Session::HandleHello(const protocol::Header& h,
                          const protocol::Hello& hello) {
  env_.stats->Add(env_.stats->hellos);
  Refusal r;
  const bool peer_node = hello.flags & protocol::kHelloPeer;
  OpenKeyspace* ks =
      peer_node ? env_.admission->ResolvePeer(hello.name, hello.access_key,
                                              h.map_epoch, &r)
                : env_.admission->Resolve(
                      hello.name, hello.flags & protocol::kConnectCreate,
                      std::string_view(hello.access_key), &r);
  if (ks == nullptr) {
    RefuseHello(r);
    return;
  }
  // This connection's queue pair lives in the listener's empty protection
  // domain and cannot move now: the client connects again with a
  // one-time ticket, and that connection is made in the keyspace's.
  protocol::Accept a;
  a.admit = protocol::Admit::kReconnect;
  a.session_id = id_;
  a.reason = "connect again with the ticket";
  Status st = env_.tickets->Issue(ks, a.ticket, peer_node);
  if (!st.ok()) {
    RefuseHello({protocol::Admit::kServerError, st.message()});
    return;
  }
  Logf("session %llu admitted after HELLO: %skeyspace '%s'; ticket issued",
       static_cast<unsigned long long>(id_),
       peer_node ? "peer node, copy of " : "", hello.name.c_str());
  uint8_t out[protocol::kAcceptSize];
  const size_t n = protocol::EncodeAccept(a, out);
  Send(protocol::Type::kWelcome, h.request_id, out, n);
  end_detail_ = "admitted: reconnects with its ticket";
  EndWith(End::kBye);
}

Status Session::CheckShard(uint32_t map_epoch) const {
  if (env_.shards == nullptr) return Status::Ok();
  // Decided only by the shard's owner at the map epoch the client routed
  // by (docs/cluster.md, "Serving shards"); a peer's copy only while this
  // node receives one at the epoch the peer writes at.
  return peer_node_
             ? env_.shards->CheckPeer(ks_->keyspace->name(), map_epoch)
             : env_.shards->CheckRequest(ks_->keyspace->name(), map_epoch);
}

void Session::HandleCommit(const protocol::Header& h,
                           const protocol::Commit& c) {
  // A client cannot write a record with a sequence of its choosing (a
  // replica's), and a peer writes nothing else: either is a protocol
  // violation, not a refused request.
  const bool replica = c.flags & protocol::kCommitReplica;
  if (replica != peer_node_) {
    Fail(h.request_id, StatusCode::kInvalidArgument,
         replica ? "COMMIT with the replica flag: only a peer kvserver "
                   "(HELLO with the peer flag) sends replica records"
                 : "a peer kvserver's COMMIT must carry the replica flag");
    return;
  }
  Status owned = CheckShard(h.map_epoch);
  if (!owned.ok()) {
    AckCommit(h.request_id, nullptr, owned);
    return;
  }
  const store::SegmentGrant& g = grant_->grant();
  if (!grant_->held() || c.segment != g.segment || c.grant_id != g.grant_id) {
    AckCommit(h.request_id, nullptr,
              Status::InvalidArgument("COMMIT names segment " +
                                      std::to_string(c.segment) + " grant " +
                                      std::to_string(c.grant_id) +
                                      ", not this connection's grant"));
    return;
  }
  store::CommitRequest req;
  req.segment = c.segment;
  req.grant_id = c.grant_id;
  req.offset = c.offset;
  req.length = c.length;
  req.key_hash = c.key_hash;
  req.condition = static_cast<store::Condition>(c.condition);
  req.expected_sequence = c.expected_sequence;
  // The op and the delete reserve's rule are checked by the store on the
  // record it verified and seals, never on bytes the client can change.
  req.op = c.op == 1 ? store::CommitOp::kDelete : store::CommitOp::kPut;
  req.deletes_only = grant_->reserve_only();
  req.replica = replica;
  // Once claimed, the record's bytes leave the client's write window.
  req.fence = grant_.get();
  if (!env_.group_commit) {
    AckCommit(h.request_id, &req, ks_->keyspace->Commit(req));
    return;
  }
  // Committed with the other sessions' COMMITs of this pass (the worker),
  // or alone before this session's next non-COMMIT message.
  queued_.push_back({h.request_id, req});
}

void Session::FlushQueuedCommits() {
  if (queued_.empty()) return;
  std::vector<store::CommitRequest> requests;
  requests.reserve(queued_.size());
  for (const QueuedCommit& q : queued_) requests.push_back(q.request);
  results_.clear();
  ks_->keyspace->pipeline().Commit(requests.data(), requests.size(), &results_);
  env_.stats->Add(env_.stats->commit_groups);
  CompleteCommits(results_.data());
}

void Session::CompleteCommits(const Result<store::CommitResult>* results) {
  // AckCommit may Send, and Send never handles a message (receives reaped
  // meanwhile are deferred), so queued_ does not change while it is walked.
  for (size_t i = 0; i < queued_.size(); i++) {
    acks_to_follow_ = queued_.size() - 1 - i;
    AckCommit(queued_[i].request_id, &queued_[i].request, results[i]);
  }
  acks_to_follow_ = 0;
  queued_.clear();  // keeps its capacity: no allocation per pass
  if (end_ != End::kNone) BeginEnd();  // a reply could not be sent
}

void Session::AckCommit(uint32_t request_id, const store::CommitRequest* req,
                        const Result<store::CommitResult>& r) {
  protocol::CommitAck ack;
  if (!r.ok()) {
    ack.status = r.status().code();
    ack.message = r.status().message();
    env_.stats->Add(env_.stats->commit_failures);
    if (env_.refusal_log != nullptr) env_.refusal_log->Note(ack.message);
  } else if (env_.shards != nullptr && !env_.shards->MayAcknowledge()) {
    // Decided and persisted, but the lease deadline passed meanwhile: a
    // fenced node acknowledges nothing. The client sees the connection
    // end (unavailable: outcome unknown), never an ok it cannot trust.
    end_detail_ = "fenced: lease deadline passed before the acknowledgement";
    EndWith(End::kError);
    return;
  } else {
    commits_++;
    const store::Version& v = r->committed;
    grant_->Committed(req->segment, uint64_t{req->offset} + req->length);
    env_.stats->Add(env_.stats->commits);
    env_.stats->Add(r->tombstone ? env_.stats->deletes : env_.stats->puts);
    env_.stats->Add(env_.stats->committed_bytes, v.length);
    ack.status = StatusCode::kOk;
    ack.flags = (r->had_previous ? protocol::kAckHadPrevious : 0) |
                (r->stale ? protocol::kAckStale : 0);
    ack.length = v.length;
    ack.sequence = v.sequence;
    ack.previous_sequence = r->had_previous ? r->previous.sequence : 0;
    ack.log_offset = v.log_offset;
  }
  uint8_t out[kPayloadCap];
  const size_t n = protocol::EncodeCommitAck(ack, out, kPayloadCap);
  Send(protocol::Type::kCommitAck, request_id, out, n);
}

void Session::HandleRefill(const protocol::Header& h, bool for_delete) {
  protocol::RefillAck ack;
  Status st = CheckShard(h.map_epoch);
  if (st.ok()) st = grant_->Acquire(for_delete);
  if (st.ok()) {
    env_.stats->Add(env_.stats->refills);
    ack.status = StatusCode::kOk;
    ack.grant = grant_->Describe();
  } else {
    ack.status = st.code();
    ack.message = st.IsNoSpace() ? "keyspace '" + ks_->keyspace->name() +
                                       "' is full: " + st.message()
                                 : st.message();
    ack.grant = grant_->Describe();  // the old grant stays
  }
  uint8_t out[kPayloadCap];
  const size_t n = protocol::EncodeRefillAck(ack, out, kPayloadCap);
  Send(protocol::Type::kRefillAck, h.request_id, out, n);
}

void Session::HandleInfo(const protocol::Header& h, protocol::InfoTopic topic) {
  env_.stats->Add(env_.stats->infos);
  std::string text;
  switch (topic) {
    case protocol::InfoTopic::kStats: {
      // Another tenant's keyspaces (names, key counts, bytes) are shown
      // only when the server is told so.
      std::vector<KeyspaceLine> lines;
      if (env_.info_all_keyspaces) {
        for (auto& [name, stats] : env_.keyspaces->AllStats()) {
          lines.push_back({name, stats});
        }
      } else if (ks_ != nullptr) {
        lines.push_back({ks_->keyspace->name(), ks_->keyspace->Stats()});
      }
      text = StatsText(*env_.stats, lines);
      break;
    }
    case protocol::InfoTopic::kKeyspaces:
      if (env_.info_all_keyspaces) {
        for (const std::string& name : env_.keyspaces->Names()) {
          text += name + "\n";
        }
      } else if (ks_ != nullptr) {
        text = ks_->keyspace->name() + "\n";
      }
      break;
    case protocol::InfoTopic::kServer:
      text = ServerText();
      break;
    case protocol::InfoTopic::kPing:
      // The server's clock, for clients judging expiries one-sided
      // (docs/protocol.md, "Server clock").
      text = protocol::PingText(UnixMillisNow());
      break;
  }
  uint8_t out[kPayloadCap];
  const size_t n = protocol::EncodeStatusText(
      StatusCode::kOk, FitInfoText(std::move(text)), out, kPayloadCap);
  Send(protocol::Type::kInfoAck, h.request_id, out, n);
}

}  // namespace kv::server
