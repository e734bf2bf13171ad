// Client::Scan and Client::ScanPage — iterate a keyspace by one-sided
// reads: the index in chunks, then the records its slots name, many reads
// in flight. The cursor is a slot number of the index, kept by the client:
// no server state, and the server's CPU stays off this path too.
//
// The index may grow during a scan (it doubles in place: slot positions
// keep their numbers, new buckets are appended, and a moved slot only
// moves forward, to bucket + the old bucket count). So a scan that reaches
// the end of the geometry it knows reads the index header — a later round
// trip than every index read before it — and, when the index grew,
// continues to the new end: a key present throughout is never missed, and
// one that moved from behind the scan to ahead of it is given twice (Scan
// dedupes; a ScanPage caller may see it on two pages). Within one chunk
// a moved slot's old place (lower) and new place (higher) are read by the
// same read; the argument needs it to read lower addresses no later than
// higher ones, as the tcp provider does (one ascending copy) and an RNIC
// does in practice (ascending packets).
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "client_state.h"
#include "kv/client/client.h"
#include "kv/index_format.h"
#include "kv/record_format.h"
#include "router.h"

namespace kv {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;
constexpr size_t kChunk = 64 << 10;    // index bytes per read
constexpr size_t kBatch = 32;          // record reads in flight
constexpr size_t kDefaultCount = 100;  // ScanPage's count 0 (as SCAN's 10)
constexpr int kHeaderAttempts = 8;     // reads of a header that tears

// Posts the reads and waits for all of them. Never posts more than the
// send queue has room for (the caller sizes batches by sq_free()), and
// never returns while a read it posted is still outstanding: a late
// completion would reach the engine with a tag that is not an operation.
Status ReadAll(Connection* c,
               const std::vector<std::pair<size_t, uint64_t>>&
                   reads /* arena off, remote off */,
               const std::vector<size_t>& lens,
               std::chrono::milliseconds timeout) {
  size_t posted = 0;
  Status post;
  for (; posted < reads.size() && post.ok(); posted++) {
    if (c->sq_free() == 0) {
      post = Status::Busy("scan: send queue full");
      break;
    }
    post = c->PostRead(reads[posted].first, reads[posted].second, lens[posted],
                       posted + 1);
    if (!post.ok()) break;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t done = 0;
  std::vector<Connection::Event> events;
  while (done < posted) {
    events.clear();
    // A timeout fails the connection: nothing posted on it is reaped later.
    KV_RETURN_IF_ERROR(c->Wait(deadline, &events));
    for (const auto& e : events) done += e.kind == Connection::Event::kRead;
  }
  return post;
}

// Slots in the index of the geometry the connection knows now.
uint64_t SlotCount(const Connection* c) {
  return ix::PhysicalBuckets(c->geometry().bucket_count) * ix::kSlotsPerBucket;
}

// Reads the index header (into the arena's first bytes, after every read
// posted before it) and adopts it; *grew says whether the connection's
// bucket count changed. A header that tears across a growth's update is
// read again, kHeaderAttempts times at most. Errors: corruption (the
// header never decodes, or names an index that cannot be), and those of
// ReadAll.
Status RefreshGeometry(Connection* c, std::chrono::milliseconds timeout,
                       bool* grew) {
  const uint64_t before = c->geometry().bucket_count;
  for (int attempt = 0; attempt < kHeaderAttempts; attempt++) {
    KV_RETURN_IF_ERROR(ReadAll(c, {{0, 0}}, {ix::kIndexHeaderSize}, timeout));
    ix::IndexHeader h;
    if (!ix::DecodeIndexHeader(c->arena(), &h)) continue;
    KV_RETURN_IF_ERROR(c->AdoptIndexHeader(h));
    *grew = c->geometry().bucket_count != before;
    return Status::Ok();
  }
  return Status::Corruption(
      "scan: the keyspace's index header did not decode "
      "after " +
      std::to_string(kHeaderAttempts) + " reads (on " + c->server() + ")");
}

// At position `at`, the end of the index as last known: whether the
// index grew past it meanwhile (the header says; the geometry is adopted).
Status GrewPast(Connection* c, std::chrono::milliseconds timeout, uint64_t at,
                uint64_t* refreshes, bool* more) {
  bool grew = false;
  KV_RETURN_IF_ERROR(RefreshGeometry(c, timeout, &grew));
  if (grew) (*refreshes)++;
  *more = at < SlotCount(c);
  return Status::Ok();
}

// Examines the index's slots from `first` on and calls fn for each live
// record whose key has the prefix (and, with `seen`, was not given
// before) and that has not expired (s->Judge), until fn returns false or —
// count non-zero — a read batch has
// brought the keys given to `count` or more. *next: the first slot not
// examined, 0 when the whole index was (the header read after the last
// index read showed no growth past it). *refreshes counts growths seen.
Status ScanSlots(
    ClientState* s, std::chrono::milliseconds timeout, uint64_t first,
    std::string_view prefix, size_t count,
    std::unordered_set<std::string>* seen,
    const std::function<bool(std::string_view, std::string_view)>& fn,
    uint64_t* next, uint64_t* refreshes) {
  Connection* const c = s->conn.get();
  const protocol::Accept& a = c->accept();
  const index_lookup::Geometry& g = c->geometry();
  const size_t chunk_slots =
      (c->arena_size() / 2 < kChunk ? c->arena_size() / 2 : kChunk) / 8;
  const size_t records_at = chunk_slots * 8;  // arena: [index chunk | records]
  size_t emitted = 0;
  *next = 0;
  for (uint64_t at = first;;) {
    uint64_t slot_count = SlotCount(c);
    if (at >= slot_count) {
      bool more = false;
      KV_RETURN_IF_ERROR(GrewPast(c, timeout, at, refreshes, &more));
      if (!more) return Status::Ok();
      slot_count = SlotCount(c);
    }
    const size_t n_slots =
        slot_count - at < chunk_slots ? slot_count - at : chunk_slots;
    KV_RETURN_IF_ERROR(
        ReadAll(c, {{0, a.index_offset + at * 8}}, {n_slots * 8}, timeout));
    std::vector<uint64_t> slots(n_slots);
    std::memcpy(slots.data(), c->arena(), n_slots * 8);
    for (size_t i = 0; i < slots.size();) {
      // Gather a batch of in-bounds slots, read their records together.
      std::vector<std::pair<size_t, uint64_t>> reads;
      std::vector<size_t> lens;
      size_t off = records_at;
      const size_t batch =
          c->sq_free() < kBatch ? (c->sq_free() ? c->sq_free() : 1) : kBatch;
      for (; i < slots.size() && reads.size() < batch; i++) {
        const uint64_t s = slots[i];
        if (s == 0 || !ix::SlotInBounds(s, g.log_size, g.segment_size))
          continue;
        const size_t n = ix::SlotRecordBytes(s);
        if (off + n > c->arena_size()) break;
        reads.push_back({off, a.log_offset + ix::SlotLogOffset(s)});
        lens.push_back(n);
        off += (n + 63) / 64 * 64;
      }
      if (reads.empty()) continue;
      KV_RETURN_IF_ERROR(ReadAll(c, reads, lens, timeout));
      for (size_t r = 0; r < reads.size(); r++) {
        rf::RecordView v;
        // A record failing verification belonged to a slot that changed
        // while we read: skip it, as a scan promises no snapshot.
        if (!rf::VerifyRecord(c->arena() + reads[r].first, lens[r],
                              g.keyspace_id, &v)
                 .ok() ||
            v.tombstone()) {
          continue;
        }
        if (v.key.substr(0, prefix.size()) != prefix) continue;
        // Every read of this batch has completed: a ping (the clock's
        // first sample) may run on the connection here.
        bool visible = true;
        int64_t ttl_ms = -1;
        KV_RETURN_IF_ERROR(s->Judge(v.expiry, &visible, &ttl_ms));
        if (!visible) continue;
        if (seen != nullptr && !seen->insert(std::string(v.key)).second) {
          continue;
        }
        if (!fn(v.key, v.value)) return Status::Ok();
        emitted++;
      }
      if (count != 0 && emitted >= count) {
        const uint64_t resume = at + i;
        bool more = resume < slot_count;
        if (!more) {
          KV_RETURN_IF_ERROR(GrewPast(c, timeout, resume, refreshes, &more));
        }
        *next = more ? resume : 0;
        return Status::Ok();
      }
    }
    at += n_slots;
  }
}

}  // namespace

Status Client::Scan(
    std::string_view prefix, size_t limit,
    const std::function<bool(std::string_view, std::string_view)>& fn) {
  if (router_) return router_->Scan(prefix, limit, fn);
  // Holds the lock throughout: no other operation shares the arena.
  std::lock_guard<std::mutex> lock(state_->mu);
  Connection* c = state_->conn.get();
  if (c->failed()) return c->failure();
  std::unordered_set<std::string> seen;
  size_t emitted = 0;
  uint64_t next = 0;
  uint64_t refreshes = 0;
  Status st = ScanSlots(
      state_.get(), options_.op_timeout, 0, prefix, 0, &seen,
      [&](std::string_view k, std::string_view v) {
        return fn(k, v) && (limit == 0 || ++emitted < limit);
      },
      &next, &refreshes);
  state_->engine.NoteIndexRefreshes(refreshes);
  return st;
}

Result<uint64_t> Client::ScanPage(
    uint64_t cursor, std::string_view prefix, size_t count,
    const std::function<void(std::string_view key, std::string_view value)>&
        fn) {
  if (router_) return router_->ScanPage(cursor, prefix, count, fn);
  std::lock_guard<std::mutex> lock(state_->mu);
  Connection* c = state_->conn.get();
  if (c->failed()) return c->failure();
  uint64_t refreshes = 0;
  bool valid = cursor < SlotCount(c);
  // A cursor past the index this client knows may come from a page that
  // saw the index grow (another client's, or before a reconnect).
  if (!valid) {
    Status st = GrewPast(c, options_.op_timeout, cursor, &refreshes, &valid);
    state_->engine.NoteIndexRefreshes(refreshes);
    KV_RETURN_IF_ERROR(st);
  }
  if (!valid) {
    return Status::InvalidArgument(
        "scan cursor " + std::to_string(cursor) +
        " is not a cursor of this keyspace (0 starts a scan; use the cursor "
        "the previous page returned)");
  }
  uint64_t next = 0;
  refreshes = 0;
  Status st = ScanSlots(
      state_.get(), options_.op_timeout, cursor, prefix,
      count == 0 ? kDefaultCount : count, nullptr,
      [&](std::string_view k, std::string_view v) {
        fn(k, v);
        return true;
      },
      &next, &refreshes);
  state_->engine.NoteIndexRefreshes(refreshes);
  KV_RETURN_IF_ERROR(st);
  return next;
}

}  // namespace kv
