// Engine's get path: one-sided reads of the key's neighbourhood and of the
// records its slots name, decided by the reader algorithm the store uses
// (kv/index_lookup.h).
//
//   warm (slot cached): neighbourhood + cached record read together — one
//        round trip, used only if the neighbourhood still holds exactly
//        that slot as the key's only candidate;
//   cold: neighbourhood, then every candidate's record — two round trips;
//   not found: the neighbourhood is read again and, posted after it on
//        the same queue pair, the index header (the readers' fence,
//        kv/index_format.h). A header showing another bucket count means
//        the index grew since the op's reads: the connection adopts the
//        new geometry and the get starts over there. A changed
//        neighbourhood means the first copy may be torn across an update
//        (new slot unseen, old cleared), so the get starts over. Only an
//        unchanged neighbourhood under an unchanged header is absence.
// A found record needs no header: growth moves a slot only forward and
// clears its old place after publishing the header, and no commit is
// acknowledged while a growth runs, so a match under the old geometry is
// still the key's current version.
// Any record that fails verification (moved by the cleaner, segment
// reused, slot changing) restarts from the neighbourhood, at most
// kMaxAttempts times, then corruption.
#include <cstring>

#include "engine.h"
#include "kv/index_format.h"
#include "kv/record_format.h"

namespace kv {
namespace {
namespace ix = kv::index_format;
namespace il = kv::index_lookup;
namespace rf = kv::record_format;
constexpr int kMaxAttempts = 8;
// Arena bytes for the index header read (16 bytes; 64 keep the next
// read aligned).
constexpr size_t kHeaderRoom = 64;
static_assert(ix::kIndexHeaderSize <= kHeaderRoom);
}  // namespace

Engine::Start Engine::StartGet(Op* op) {  // arguments checked in Run
  op->hash = ix::HashKey(op->key);
  op->warm = false;
  auto it =
      op->attempts == 0 ? cache_.find(std::string(op->key)) : cache_.end();
  if (it != cache_.end() &&
      ix::SlotInBounds(it->second, geo_.log_size, geo_.segment_size)) {
    op->warm = true;
    op->cached_slot = it->second;
  }
  const uint32_t reads = op->warm ? 2 : 1;
  if (conn_->sq_free() < reads) return Start::kWait;
  const size_t record_len = op->warm ? ix::SlotRecordBytes(op->cached_slot) : 0;
  size_t off = 0;
  if (!Allocate(il::kNeighbourhoodBytes + kHeaderRoom + record_len, &off)) {
    return Start::kWait;
  }
  op->bucket_count = geo_.bucket_count;
  op->neigh_off = off;
  op->header_off = off + il::kNeighbourhoodBytes;
  op->warm_off = op->header_off + kHeaderRoom;
  const uint64_t tag = reinterpret_cast<uint64_t>(op);
  op->reads = static_cast<int>(reads);
  op->state = Op::State::kNeighbourhood;
  Status st =
      conn_->PostRead(off,
                      conn_->accept().index_offset +
                          il::NeighbourhoodOffset(op->hash, op->bucket_count),
                      il::kNeighbourhoodBytes, tag, /*more=*/op->warm);
  if (st.ok() && op->warm) {
    st = conn_->PostRead(
        op->warm_off,
        conn_->accept().log_offset + ix::SlotLogOffset(op->cached_slot),
        record_len, tag);
    if (!st.ok()) op->reads = 1;  // the first read is in flight
  }
  if (!st.ok()) {
    conn_->Fail(st);
    if (op->reads == static_cast<int>(reads)) op->reads = 0;
  }
  return Start::kStarted;
}

void Engine::RetryGet(Op* op, const char* why) {
  stats_.get_retries++;
  if (++op->attempts >= kMaxAttempts) {
    Finish(op, Status::Corruption("get: " + std::string(why) + " after " +
                                  std::to_string(kMaxAttempts) +
                                  " attempts (keyspace on " + conn_->server() +
                                  ")"));
    return;
  }
  RestartGet(op);
}

void Engine::RestartGet(Op* op) {
  holding_--;
  op->state = Op::State::kReady;
  ready_.push_back(op);
}

void Engine::OnReadsDone(Op* op) {
  if (engine_hooks_for_testing.reads_done) {
    engine_hooks_for_testing.reads_done(*op, conn_->arena());
  }
  switch (op->state) {
    case Op::State::kNeighbourhood:
      std::memcpy(op->neigh, conn_->arena() + op->neigh_off,
                  il::kNeighbourhoodBytes);
      GetFromNeighbourhood(op);
      return;
    case Op::State::kRecords:
      GetFromRecords(op);
      return;
    case Op::State::kConfirm:
      OnConfirmed(op);
      return;
    default:
      return;
  }
}

void Engine::GetFromNeighbourhood(Op* op) {
  if (op->warm) {
    int candidates = 0;
    bool only_cached = true;
    for (size_t i = 0; i < il::kNeighbourhoodSlots; i++) {
      if (!il::MayHold(op->neigh[i], op->hash)) continue;
      candidates++;
      only_cached &= op->neigh[i] == op->cached_slot;
    }
    if (candidates == 1 && only_cached) {
      const uint8_t* rec = conn_->arena() + op->warm_off;
      const il::Choice c =
          il::ChooseNewest(op->neigh, geo_, op->key, op->hash,
                           [&](size_t, uint64_t) { return rec; });
      if (c.found()) {
        op->out.assign(c.view.value.data(), c.view.value.size());
        op->sequence = c.view.header.sequence;
        op->expiry = c.view.expiry;
        stats_.gets_one_round_trip++;
        Finish(op, Status::Ok());
        return;
      }
    }
    ForgetSlot(op->key);  // stale: fall through to the cold path
  }
  stats_.gets_cold++;
  // Candidates whose record must be read (out-of-bounds ones are judged
  // without a read).
  auto needs_read = [&](uint64_t s) {
    return il::MayHold(s, op->hash) &&
           ix::SlotInBounds(s, geo_.log_size, geo_.segment_size);
  };
  size_t bytes = 0;
  int reads = 0;
  for (size_t i = 0; i < il::kNeighbourhoodSlots; i++) {
    const uint64_t s = op->neigh[i];
    if (!needs_read(s)) continue;
    bytes += (ix::SlotRecordBytes(s) + 63) / 64 * 64;
    reads++;
  }
  if (reads == 0) {
    bool any_bad = false;
    for (size_t i = 0; i < il::kNeighbourhoodSlots; i++) {
      any_bad |= il::MayHold(op->neigh[i], op->hash);
    }
    if (any_bad) {
      // Only out-of-bounds candidates: let the algorithm name the problem.
      const il::Choice c = il::ChooseNewest(
          op->neigh, geo_, op->key, op->hash,
          [](size_t, uint64_t) -> const uint8_t* { return nullptr; });
      RetryGet(op, c.bad_why.c_str());
      return;
    }
    ConfirmAbsent(op);
    return;
  }
  size_t off = 0;
  if (bytes > conn_->arena_size() / 2) {
    Finish(op, Status::Busy("get: the key's candidate records (" +
                            std::to_string(bytes) +
                            " bytes) do not fit the client's read buffer"));
    return;
  }
  if (conn_->sq_free() < static_cast<uint32_t>(reads) ||
      !Allocate(bytes, &off)) {
    // Out of room now: start over once in-flight work drains.
    op->attempts--;
    RetryGet(op, "client buffers full");
    return;
  }
  op->state = Op::State::kRecords;
  op->reads = reads;
  const uint64_t tag = reinterpret_cast<uint64_t>(op);
  int posted = 0;
  for (size_t i = 0; i < il::kNeighbourhoodSlots; i++) {
    const uint64_t s = op->neigh[i];
    if (!needs_read(s)) continue;
    op->record_off[i] = off;
    Status st =
        conn_->PostRead(off, conn_->accept().log_offset + ix::SlotLogOffset(s),
                        ix::SlotRecordBytes(s), tag);
    if (!st.ok()) {
      conn_->Fail(st);
      op->reads = posted;
      return;
    }
    posted++;
    off += (ix::SlotRecordBytes(s) + 63) / 64 * 64;
  }
}

void Engine::GetFromRecords(Op* op) {
  const il::Choice c =
      il::ChooseNewest(op->neigh, geo_, op->key, op->hash,
                       [&](size_t pos, uint64_t) -> const uint8_t* {
                         return conn_->arena() + op->record_off[pos];
                       });
  if (c.found()) {
    // The newest version, expired or not: the Client judges its expiry
    // (an older version is never taken instead).
    op->out.assign(c.view.value.data(), c.view.value.size());
    op->sequence = c.view.header.sequence;
    op->expiry = c.view.expiry;
    CacheSlot(op->key, c.slot);
    Finish(op, Status::Ok());
    return;
  }
  if (c.bad_pos >= 0) {
    RetryGet(op, c.bad_why.c_str());
    return;
  }
  // Only other keys' records: confirm absence like an empty neighbourhood.
  ConfirmAbsent(op);
}

void Engine::ConfirmAbsent(Op* op) {
  if (conn_->sq_free() < 2) {
    op->attempts--;
    RetryGet(op, "send queue full");
    return;
  }
  // The same neighbourhood as the op's first read (its bucket count, not
  // one another op adopted meanwhile), then the header: RC serves the two
  // in posting order, so the header is read after the neighbourhood.
  op->state = Op::State::kConfirm;
  op->reads = 2;
  const uint64_t tag = reinterpret_cast<uint64_t>(op);
  Status st =
      conn_->PostRead(op->neigh_off,
                      conn_->accept().index_offset +
                          il::NeighbourhoodOffset(op->hash, op->bucket_count),
                      il::kNeighbourhoodBytes, tag);
  if (!st.ok()) {
    op->reads = 0;
    conn_->Fail(st);
    return;
  }
  st = conn_->PostRead(op->header_off, 0, ix::kIndexHeaderSize, tag);
  if (!st.ok()) {
    op->reads = 1;  // the neighbourhood read is in flight
    conn_->Fail(st);
  }
}

void Engine::OnConfirmed(Op* op) {
  ix::IndexHeader header;
  if (!ix::DecodeIndexHeader(conn_->arena() + op->header_off, &header)) {
    // Torn across a growth's header update: read again. A header that
    // never decodes is a damaged index (a protocol-3 server writes one
    // before it admits anyone).
    RetryGet(op, "the keyspace's index header did not decode");
    return;
  }
  if (header.bucket_count != op->bucket_count) {
    // The index grew since the op's reads: they prove nothing. Adopt the
    // new geometry (unless another op already adopted a newer one) and
    // start over there. A header behind the op's geometry (the accept
    // data had a growth the header did not show yet) is not adopted: the
    // get starts over and reads the header again. Growths are rare and
    // each adoption takes the newest, so the bound only stops a server
    // whose header keeps disagreeing.
    const uint64_t before = geo_.bucket_count;
    Status st = conn_->AdoptIndexHeader(header);
    if (!st.ok()) {
      Finish(op, std::move(st));
      return;
    }
    if (geo_.bucket_count != before) stats_.index_refreshes++;
    if (++op->attempts >= kMaxAttempts) {
      Finish(op, Status::Busy("get: the keyspace's index header kept "
                              "disagreeing with the index read (growing); "
                              "retry"));
      return;
    }
    RestartGet(op);
    return;
  }
  uint64_t again[il::kNeighbourhoodSlots];
  std::memcpy(again, conn_->arena() + op->neigh_off, il::kNeighbourhoodBytes);
  if (std::memcmp(again, op->neigh, sizeof(again)) == 0) {
    ForgetSlot(op->key);
    Finish(op, Status::NotFound("key not found"));
    return;
  }
  // Changed between the reads: start over (not a corruption).
  if (op->attempts + 1 >= kMaxAttempts) {
    Finish(op, Status::Busy("get: the key's index slots kept changing; "
                            "retry"));
    return;
  }
  RetryGet(op, "slots kept changing");
}

}  // namespace kv
