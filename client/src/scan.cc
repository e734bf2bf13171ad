// Client::Scan — iterates a keyspace by one-sided reads: the index in
// chunks, then the records its slots name, many reads in flight. No server
// cursor: the server's CPU stays off this path too.
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "client_state.h"
#include "kv/client/client.h"
#include "kv/index_format.h"
#include "kv/record_format.h"

namespace kv {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;
constexpr size_t kChunk = 64 << 10;  // index bytes per read
constexpr size_t kBatch = 32;        // record reads in flight

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

}  // namespace

Status Client::Scan(
    std::string_view prefix, size_t limit,
    const std::function<bool(std::string_view, std::string_view)>& fn) {
  // Holds the lock throughout: no other operation shares the arena.
  std::lock_guard<std::mutex> lock(state_->mu);
  Connection* c = state_->conn.get();
  if (c->failed()) return c->failure();
  const protocol::Accept& a = c->accept();
  const uint64_t index_size =
      ix::PhysicalBuckets(a.bucket_count) * ix::kBucketSize;
  const size_t chunk_cap =
      c->arena_size() / 2 < kChunk ? c->arena_size() / 2 : kChunk;
  const size_t records_at = chunk_cap;  // arena: [index chunk | records]
  std::unordered_set<std::string> seen;
  size_t emitted = 0;
  for (uint64_t at = 0; at < index_size; at += chunk_cap) {
    const size_t len =
        index_size - at < chunk_cap ? index_size - at : chunk_cap;
    KV_RETURN_IF_ERROR(
        ReadAll(c, {{0, a.index_offset + at}}, {len}, options_.op_timeout));
    std::vector<uint64_t> slots(len / 8);
    std::memcpy(slots.data(), c->arena(), len);
    for (size_t i = 0; i < slots.size();) {
      // Gather a batch of in-bounds slots, read their records together.
      std::vector<std::pair<size_t, uint64_t>> reads;
      std::vector<size_t> lens;
      size_t off = records_at;
      const size_t batch =
          c->sq_free() < kBatch ? (c->sq_free() ? c->sq_free() : 1) : kBatch;
      for (; i < slots.size() && reads.size() < batch; i++) {
        const uint64_t s = slots[i];
        if (s == 0 || !ix::SlotInBounds(s, a.log_size, a.segment_size))
          continue;
        const size_t n = ix::SlotRecordBytes(s);
        if (off + n > c->arena_size()) break;
        reads.push_back({off, a.log_offset + ix::SlotLogOffset(s)});
        lens.push_back(n);
        off += (n + 63) / 64 * 64;
      }
      if (reads.empty()) continue;
      KV_RETURN_IF_ERROR(ReadAll(c, reads, lens, options_.op_timeout));
      for (size_t r = 0; r < reads.size(); r++) {
        rf::RecordView v;
        // A record failing verification belonged to a slot that changed
        // while we read: skip it, as a scan promises no snapshot.
        if (!rf::VerifyRecord(c->arena() + reads[r].first, lens[r],
                              a.keyspace_id, &v)
                 .ok() ||
            v.tombstone()) {
          continue;
        }
        if (v.key.substr(0, prefix.size()) != prefix) continue;
        if (!seen.insert(std::string(v.key)).second) continue;
        if (!fn(v.key, v.value)) return Status::Ok();
        if (limit != 0 && ++emitted >= limit) return Status::Ok();
      }
    }
  }
  return Status::Ok();
}

}  // namespace kv
