#!/usr/bin/env python3
"""Writes tests/mutation/patches/NN-name.patch from the replacements below.

Each mutant is one textual replacement in a source: the patch is the
unified diff of it against the current file, headed by a "What:" line
(and "Equivalent:" for a mutant shown to be equivalent, "Module:" for one
judged by another module's tests than its directory's — run.sh picks the
test binaries by module). Mutants are numbered in the order below: new
ones go at the end (store 01-35, client 36-76, server 77-140, store's
commit pipeline 141-148, the server's worker model from 149), so numbers cited in the
READMEs stay. Patches numbered past this list (189-: replication,
moves, the cluster client; 193-195: the commit pipeline's leaders;
196: the cluster client's timed-out connections) are
written by hand and kept by a rerun. When the store's
code moves and a patch no longer applies, edit the replacement here and
rerun: python3 tests/mutation/make_patches.py (the old patches are
replaced, once every replacement matched its source exactly once;
RPKV_MUTATION_CHECK_ONLY=1 only checks). run.sh reads only the patches.
"""
import os, re, shutil, subprocess, sys, tempfile
root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
out = os.path.join(root, 'tests/mutation/patches')
M = []
EQ = {}
MODULE = {}
def m(name, path, old, new, what, equivalent=None, module=None):
    M.append((name, path, old, new, what))
    if equivalent: EQ[name] = equivalent
    if module: MODULE[name] = module

KC='store/src/keyspace_commit.cc'
IX='store/src/index.cc'
m('inplace-slot-before-record', KC,
  '''    Status st = point->MakeDurable(&rec, 1);  // the record before its slot
    if (!st.ok()) {
      rf::UnsealRecord(record);
      d->status = st;
      return;
    }
    (void)PersistSlot(d->old_slot, d->slot_value);  // commit point
''',
  '''    (void)PersistSlot(d->old_slot, d->slot_value);  // commit point
    Status st = point->MakeDurable(&rec, 1);  // the record before its slot
    if (!st.ok()) {
      rf::UnsealRecord(record);
      d->status = st;
      return;
    }
''',
  'in-place update (16 slots taken): slot persisted before the record')
m('inplace-no-record-persist', KC,
  '''    Status st = point->MakeDurable(&rec, 1);  // the record before its slot
    if (!st.ok()) {
      rf::UnsealRecord(record);
      d->status = st;
      return;
    }
    (void)PersistSlot(d->old_slot, d->slot_value);  // commit point
''',
  '''    (void)PersistSlot(d->old_slot, d->slot_value);  // commit point
''',
  'in-place update: record never persisted')
m('inplace-abort', KC,
  '''  } else {
    Status st = point->MakeDurable(&rec, 1);''',
  '''  } else {
    std::abort();
    Status st = point->MakeDurable(&rec, 1);''',
  'in-place update path aborts (is it executed at all?)')
m('put-no-commit-persist', KC,
  '''  Status st = point->MakeDurable(ranges.data(), ranges.size());''',
  '''  Status st = Status::Ok();''',
  'put: no persist at the commit point')
m('put-record-only', KC,
  '''    } else if (d[i]->stored && !entries_on_) {
      ranges.push_back({d[i]->buckets, kBucketsLen});
    }''',
  '''    }''',
  'put (no commit log): only the record persisted, not the buckets')
m('put-buckets-only', KC,
  '''    ranges.push_back({d[i]->record, d[i]->length});
''',
  '',
  'put: only the buckets persisted, not the record')
m('put-home-bucket-only', KC,
  '''      ranges.push_back({d[i]->buckets, kBucketsLen});''',
  '''      ranges.push_back({d[i]->buckets, ix::kBucketSize});''',
  'put (no commit log): persist covers the home bucket only, not the next one')
m('put-half-record', KC,
  '''    ranges.push_back({d[i]->record, d[i]->length});''',
  '''    ranges.push_back({d[i]->record, d[i]->length / 2u});''',
  'put: only the first half of the record persisted')
m('group-clear-before-commit-point', KC,
  '''  Status st = point->MakeDurable(ranges.data(), ranges.size());
''',
  '''  for (size_t i = 0; i < n; i++) {
    if (d[i]->old_slot != nullptr) __atomic_store_n(d[i]->old_slot, 0, __ATOMIC_RELEASE);
  }
  Status st = point->MakeDurable(ranges.data(), ranges.size());
''',
  'put (pipeline batch): old slots cleared before the commit point')
m('delete-no-first-persist', KC,
  '''    persister_->Persist(buckets, kBucketsLen);
    __atomic_store_n(d->old_slot, 0, __ATOMIC_RELEASE);''',
  '''    __atomic_store_n(d->old_slot, 0, __ATOMIC_RELEASE);''',
  'delete: buckets not persisted before the clear (an older duplicate survives)')
m('delete-no-commit-persist', KC,
  '''      d->status = point->MakeDurable(pair, 2);  // commit point''',
  '''      (void)pair;''',
  'delete: the clear is never persisted')
m('no-pending-clear', IX,
  '''  std::lock_guard<std::mutex> lock(clears_mu_);
  clears_.push_back(slot);''',
  '''  std::lock_guard<std::mutex> lock(clears_mu_);''',
  'update: old slot not queued for persist before its segment is reused')
m('commit-no-crc-check', 'store/include/kv/record_format.h',
  None, None, 'VerifyRecord: CRC mismatch accepted')
m('commit-no-hash-check', KC,
  '''  if (view.header.key_hash != r.key_hash) {''',
  '''  if (false && view.header.key_hash != r.key_hash) {''',
  'commit: request key hash not compared with the record')
m('commit-writer-sequence', 'store/include/kv/record_format.h',
  None, None, 'VerifyRecord (unsealed): a writer-chosen sequence accepted')
m('commit-before-tail', 'store/src/segment_table.cc',
  '''  if (offset < s.tail) {''',
  '''  if (false && offset < s.tail) {''',
  'commit: a record before the grant tail accepted (replay)')

KS='store/src/keyspace.cc'
m('grant-no-zero', KS,
  '''  if (begin < g->size) {
    Status st = mapping_->Zero(seg_abs + begin, g->size - begin);''',
  '''  if (false && begin < g->size) {
    Status st = mapping_->Zero(seg_abs + begin, g->size - begin);''',
  'grant: whole pages of the segment not zeroed')
m('grant-partial-zero-not-persisted', KS,
  '''    persister_->Persist(log_ + g->log_offset + begin, page_end - begin);
''',
  '''''',
  'grant: zeros stored in the partial first page after a returned tail but not persisted')
m('grant-partial-zero-skipped', KS,
  '''  if (begin < page_end && page_end <= g->size) {''',
  '''  if (false && begin < page_end && page_end <= g->size) {''',
  'grant: the partial first page after a returned tail is left to Zero()',
  'Zero() then gets the unaligned start and zeroes it durably too (a memory mapping stores and persists zeros; a file punches a hole, which zeroes partial blocks, and fsyncs): only slower')
m('grant-no-pending-clears', KS,
  '''    index_->PersistClears();
  }
  // Zero''',
  '''  }
  // Zero''',
  'grant (no commit log): pending clears not persisted before a segment is rewritten')
m('close-no-index-persist', IX,
  '''  persister_->Persist(buckets_, BytesFor(bucket_count()));
}''',
  '''}''',
  'clean close: index not persisted before the clean flag')
m('close-half-index', IX,
  '''  persister_->Persist(buckets_, BytesFor(bucket_count()));
}''',
  '''  persister_->Persist(buckets_, BytesFor(bucket_count()) / 2);
}''',
  'clean close: only the first half of the index persisted')

PL='store/src/pool.cc'
m('close-flag-before-index', PL,
  '''      it->second->PersistIndex();
      pf::CatalogEntry e = slots_[i].entry;
      e.clean_epoch = e.open_epoch;
      (void)WriteEntry(i, e);''',
  '''      pf::CatalogEntry e = slots_[i].entry;
      e.clean_epoch = e.open_epoch;
      (void)WriteEntry(i, e);
      it->second->PersistIndex();''',
  'clean close: clean flag persisted before the index')
m('open-epoch-not-persisted', PL,
  '''      e.open_epoch++;
      KV_RETURN_IF_ERROR(WriteEntry(i, e));''',
  '''      e.open_epoch++;
      slots_[i].entry = e;  // durable only at a clean close''',
  "open: the epoch bump is not persisted (only a clean close writes it)")
m('catalog-no-persist', 'store/src/catalog.cc',
  '''  m->persister()->Persist(dst, sizeof(*entry));  // commit point''',
  '''''',
  'catalog entry writes never persisted')

CL='store/src/keyspace_clean.cc'
m('cleaner-switch-not-persisted', CL,
  '''  KV_RETURN_IF_ERROR(PersistSlot(slot, new_slot));  // the switch''',
  '''  __atomic_store_n(slot, new_slot, __ATOMIC_RELEASE);  // the switch''',
  'cleaner: slot switched to the copy without a persist')
m('cleaner-copy-not-persisted', CL,
  '''  persister_->Persist(log_ + dst_off, len);  // copy durable before switch''',
  '''''',
  'cleaner: copy not persisted before the switch')

RC='store/src/keyspace_recover.cc'
m('dup-window-narrowed', RC,
  '''        std::min(slots, (i / ix::kSlotsPerBucket + 2) * ix::kSlotsPerBucket);''',
  '''        std::min(slots, (i / ix::kSlotsPerBucket + 1) * ix::kSlotsPerBucket);''',
  'recovery: duplicates searched in the same bucket only (not the next)')
m('repair-keeps-older', RC,
  '''      fn(i, j, a.header.sequence < b.header.sequence ? i : j);''',
  '''      fn(i, j, a.header.sequence < b.header.sequence ? j : i);''',
  'recovery: of two slots of a key, the newer one is cleared')
m('repair-no-torn-clear', RC,
  '''    if (!why.empty()) {
      clear(i,''',
  '''    if (false && !why.empty()) {
      clear(i,''',
  'recovery: a slot whose record is torn is kept')
m('repair-not-persisted', RC,
  '''    persister_->Persist(&all[i], sizeof(uint64_t));
    notes->push_back''',
  '''    notes->push_back''',
  'recovery: repairs not persisted')

CK='store/src/keyspace_check.cc'
m('check-no-duplicates', CK,
  '''    by_hash.emplace(hash, i);''',
  '''''',
  'Check: duplicate slots not looked for')

PM='store/src/pmem_file_mapping.cc'
m('pmem2-no-drain', PM,
  '''    for (size_t i = 0; i < n; i++) DoFlush(ranges[i].addr, ranges[i].len);
    DoDrain();''',
  '''    for (size_t i = 0; i < n; i++) DoFlush(ranges[i].addr, ranges[i].len);''',
  'production persister (cache line): flushes without the drain (fence)')
m('pmem2-short-msync', PM,
  '''      DoPersist(lo, static_cast<size_t>(hi - lo));''',
  '''      DoPersist(ranges[0].addr, ranges[0].len);''',
  'production persister (page): msync spans only the first range')
m('pmem2-flush-first-only', PM,
  '''    for (size_t i = 0; i < n; i++) DoFlush(ranges[i].addr, ranges[i].len);''',
  '''    DoFlush(ranges[0].addr, ranges[0].len);''',
  'production persister (cache line): only the first range flushed')

# ---- client/: the get path (one-sided reads, kv/index_lookup.h, retries)
# and the client's checks of what the server answers. The reader algorithm
# and record checks live in shared store/include headers: those mutants
# are judged by the client's tests (Module: client).
GP='client/src/get_path.cc'
m('get-key-length-unchecked', 'client/src/engine.cc',
  '''  if (op.key.size() < rf::kMinKeySize || op.key.size() > rf::kMaxKeySize) {''',
  '''  if (op.kind != Op::Kind::kGet &&
      (op.key.size() < rf::kMinKeySize || op.key.size() > rf::kMaxKeySize)) {''',
  'get: key length not checked')
m('get-empty-not-confirmed', GP,
  '''      RetryGet(op, c.bad_why.c_str());
      return;
    }
    ConfirmAbsent(op);''',
  '''      RetryGet(op, c.bad_why.c_str());
      return;
    }
    Finish(op, Status::NotFound("key not found"));''',
  'get: no candidate slot taken for absence without the confirming re-read')
m('get-other-keys-not-confirmed', GP,
  '''  // Only other keys' records: confirm absence like an empty neighbourhood.
  ConfirmAbsent(op);''',
  '''  Finish(op, Status::NotFound("key not found"));''',
  "get: only other keys' records taken for absence without the re-read")
m('confirm-ignores-change', GP,
  '''  if (std::memcmp(again, op->neigh, sizeof(again)) == 0) {''',
  '''  if (true || std::memcmp(again, op->neigh, sizeof(again)) == 0) {''',
  'ConfirmAbsent: a changed re-read still taken for absence')
m('confirm-home-bucket-only', GP,
  '''  if (std::memcmp(again, op->neigh, sizeof(again)) == 0) {''',
  '''  if (std::memcmp(again, op->neigh, ix::kBucketSize) == 0) {''',
  'ConfirmAbsent: only the home bucket compared, not the probe bucket')
m('confirm-change-is-not-found', GP,
  '''  RetryGet(op, "slots kept changing");
}''',
  '''  Finish(op, Status::NotFound("key not found"));
}''',
  'ConfirmAbsent: a changed re-read ends the get as not_found (no retry)')
m('bad-record-not-retried', GP,
  '''  if (c.bad_pos >= 0) {
    RetryGet(op, c.bad_why.c_str());
    return;
  }''',
  '''''',
  'get: a bad record (CRC, other keyspace, tombstone, moved) not retried')
m('bad-record-is-corruption', GP,
  '''  if (c.bad_pos >= 0) {
    RetryGet(op, c.bad_why.c_str());''',
  '''  if (c.bad_pos >= 0) {
    Finish(op, Status::Corruption(c.bad_why));''',
  'get: a bad first record is corruption at once (no retry)')
m('retry-limit-off-by-one', GP,
  '''  stats_.get_retries++;
  if (++op->attempts >= kMaxAttempts) {''',
  '''  stats_.get_retries++;
  if (++op->attempts > kMaxAttempts) {''',
  'get: one more attempt than kMaxAttempts')
m('retry-limit-raised', GP,
  '''  stats_.get_retries++;
  if (++op->attempts >= kMaxAttempts) {''',
  '''  stats_.get_retries++;
  if (++op->attempts >= 100) {''',
  'get: retry bound raised to 100 (a record that stays bad keeps the caller)')
m('confirm-limit-raised', GP,
  '''  if (op->attempts + 1 >= kMaxAttempts) {''',
  '''  if (op->attempts + 1 >= 100) {''',
  'ConfirmAbsent: bound raised to 100 for a neighbourhood that keeps changing')
m('oob-only-taken-for-absence', GP,
  '''    if (any_bad) {''',
  '''    if (false && any_bad) {''',
  'get: out-of-bounds candidates only: confirmed as absent instead of retried')
m('oob-slot-read', GP,
  '''    return il::MayHold(s, op->hash) &&
           ix::SlotInBounds(s, geo_.log_size, geo_.segment_size);''',
  '''    return il::MayHold(s, op->hash);''',
  'get: a candidate slot outside the log or across a segment is read')
m('warm-other-candidates-ignored', GP,
  '''    if (candidates == 1 && only_cached) {''',
  '''    if (candidates == 1) {''',
  'warm get: the cached record used though the slot changed')
m('warm-miss-is-not-found', GP,
  '''    ForgetSlot(op->key);  // stale: fall through to the cold path''',
  '''    ForgetSlot(op->key);  // stale: fall through to the cold path
    Finish(op, Status::NotFound("key not found"));
    return;''',
  'warm get: a cached record that fails verification is absence')

IL='store/include/kv/index_lookup.h'
m('lookup-first-version-wins', IL,
  '''        if (!c.found() || view.header.sequence > c.view.header.sequence) {''',
  '''        if (!c.found()) {''',
  'reader: the first valid version in the neighbourhood wins (not the newest)', module='client')
m('lookup-oldest-version-wins', IL,
  '''        if (!c.found() || view.header.sequence > c.view.header.sequence) {''',
  '''        if (!c.found() || view.header.sequence < c.view.header.sequence) {''',
  'reader: the lowest sequence wins', module='client')
m('lookup-no-key-compare', IL,
  '''  if (st.ok() && view->key != key) return Verdict::kOtherKey;''',
  '''  if (false && st.ok() && view->key != key) return Verdict::kOtherKey;''',
  "reader: a record of another key (same fingerprint) accepted", module='client')
m('lookup-tombstone-accepted', IL,
  '''  if (st.ok() && view->tombstone()) {''',
  '''  if (false && st.ok() && view->tombstone()) {''',
  'reader: a slot pointing to a tombstone accepted as the value', module='client')
m('lookup-no-slot-bounds', IL,
  '''  if (!index_format::SlotInBounds(slot, g.log_size, g.segment_size)) {
    if (why) *why = "points outside the log or across a segment";''',
  '''  if (false && !index_format::SlotInBounds(slot, g.log_size, g.segment_size)) {
    if (why) *why = "points outside the log or across a segment";''',
  'reader: slot bounds not checked before its record is verified', module='client')

RFC='store/include/kv/record_format.h'
m('get-no-crc-check', RFC, None, None,
  'VerifyRecord (get path): CRC mismatch accepted', module='client')
m('get-no-keyspace-check', RFC,
  '''  if (h.keyspace_id != expected_keyspace_id) {''',
  '''  if (false && h.keyspace_id != expected_keyspace_id) {''',
  "VerifyRecord: another keyspace's record accepted", module='client')
m('get-record-past-slot', RFC,
  '''  if (used > avail) {''',
  '''  if (false && used > avail) {''',
  'VerifyRecord: a record longer than its slot extent accepted', module='client')
m('get-sequence-zero', RFC,
  '''  if (rule == SequenceRule::kCommitted && h.sequence == 0) {''',
  '''  if (false && rule == SequenceRule::kCommitted && h.sequence == 0) {''',
  'VerifyRecord: a committed record of sequence 0 (never committed) accepted', module='client')

EN='client/src/engine.cc'
m('ack-unknown-id-ignored', EN,
  '''  if (it == awaiting_.end()) {
    conn_->Fail(Status::Unavailable("server " + conn_->server() +
                                    " answered an unknown request"));
    return;
  }''',
  '''  if (it == awaiting_.end()) {
    return;
  }''',
  'ack: an answer to an unknown request id silently dropped')
m('refill-id-not-matched', EN,
  '''  if (e.header.type == pr::Type::kRefillAck &&
      e.header.request_id == refill_id_) {''',
  '''  if (e.header.type == pr::Type::kRefillAck) {''',
  "ack: a REFILL_ACK accepted whatever request id it names")
m('commit-ack-length-unchecked', EN,
  '''  Status st = pr::DecodeCommitAck(body, len, &a);
  if (!st.ok()) {''',
  '''  Status st = pr::DecodeCommitAck(body, len, &a);
  if (false && !st.ok()) {''',
  'ack: a COMMIT_ACK that does not decode (short) accepted')
m('ack-type-unchecked', EN,
  '''  if (e.header.type != pr::Type::kCommitAck) {''',
  '''  if (false && e.header.type != pr::Type::kCommitAck) {''',
  'ack: a message of another type accepted as a COMMIT_ACK')
m('ack-status-ignored', EN,
  '''  if (a.status != StatusCode::kOk) {
    Finish(op, Status(a.status, a.message));''',
  '''  if (false && a.status != StatusCode::kOk) {
    Finish(op, Status(a.status, a.message));''',
  "ack: a COMMIT_ACK's failure status reported as ok")
m('info-ack-length-unchecked', EN,
  '''    if (!pr::DecodeStatusText(body, len, &code, &text).ok()) {''',
  '''    if (false && !pr::DecodeStatusText(body, len, &code, &text).ok()) {''',
  'ack: an empty INFO_ACK accepted')
m('write-contradictory-conditions', EN,
  '''  if (op.if_absent && op.if_version != 0) {''',
  '''  if (false && op.if_absent && op.if_version != 0) {''',
  'write: if_absent with if_version sent (if_absent wins)')
m('write-value-limit-unchecked', EN,
  '''  if (op.kind == Op::Kind::kPut &&
      op.value.size() > conn_->accept().max_value_size) {''',
  '''  if (false && op.kind == Op::Kind::kPut &&
      op.value.size() > conn_->accept().max_value_size) {''',
  "write: a value over the keyspace's limit sent to the server")
m('write-key-length-unchecked', EN,
  '''  if (op.key.size() < rf::kMinKeySize || op.key.size() > rf::kMaxKeySize) {''',
  '''  if (op.kind == Op::Kind::kGet &&
      (op.key.size() < rf::kMinKeySize || op.key.size() > rf::kMaxKeySize)) {''',
  'write: key length not checked before sending')

m('buffer-wait-counts-as-attempt', GP,
  '''    // Out of room now: start over once in-flight work drains.
    op->attempts--;
''',
  '''    // Out of room now: start over once in-flight work drains.
''',
  'get: waiting for read-buffer room counts as a failed attempt')
m('info-ack-status-unchecked', 'store/include/kv/protocol.h',
  '''  if (b <= kMaxStatusCode) return static_cast<StatusCode>(b);''',
  '''  return static_cast<StatusCode>(b);''',
  'ack: a status code this client does not know taken as is (not unavailable with an unknown outcome)',
  module='client')
m('refill-ack-unchecked', EN,
  '''    Status st = pr::DecodeRefillAck(body, len, geo_.segment_size, &a);
    if (!st.ok()) {''',
  '''    Status st = pr::DecodeRefillAck(body, len, geo_.segment_size, &a);
    if (false && !st.ok()) {''',
  'ack: a REFILL_ACK that does not decode accepted')
m('error-message-ignored', EN,
  '''  if (e.header.type == pr::Type::kError) {''',
  '''  if (false) {''',
  "ack: the server's ERROR message not treated as the connection's end")
m('ack-sequence-dropped', EN,
  '''  op->sequence = a.sequence;
''',
  '''''',
  "ack: the version a COMMIT_ACK assigned not reported")
IXF='store/include/kv/index_format.h'
m('slot-bounds-past-log', IXF,
  '''  return end <= log_size && begin / segment_size == (end - 1) / segment_size;''',
  '''  return end <= log_size + 64 && begin / segment_size == (end - 1) / segment_size;''',
  'SlotInBounds: a slot one unit past the log accepted', module='client')
m('slot-bounds-across-segment', IXF,
  '''  return end <= log_size && begin / segment_size == (end - 1) / segment_size;''',
  '''  return end <= log_size;''',
  'SlotInBounds: a slot across a segment end accepted', module='client')
m('slot-zero-length', IXF,
  '''  if (f.units == 0 || f.fingerprint == 0 || segment_size == 0) return false;''',
  '''  if (f.fingerprint == 0 || segment_size == 0) return false;''',
  'SlotInBounds: a slot of length 0 accepted', module='client')

# --- server (from 77): every check of client input and the data path's
# guards; judged by kv_server_unit_test, kv_server_options_test and
# kv_e2e_server_test (run.sh MODULE_TESTS[server]).
SM='server/src/session_messages.cc'
EQ_STORE_GRANT = ('store::Keyspace::Commit refuses a (segment, grant_id) that is not an open grant (SegmentTable::CheckGrantLocked); grant ids are unique within a keyspace (from 1) and a session serves one keyspace, so this check refuses nothing the store accepts')
m('commit-segment-unchecked', SM,
  '''  if (!grant_->held() || c.segment != g.segment || c.grant_id != g.grant_id) {''',
  '''  if (!grant_->held() || c.grant_id != g.grant_id) {''',
  "COMMIT: the segment is not checked against the connection's grant",
  equivalent=EQ_STORE_GRANT)
m('commit-grant-id-unchecked', SM,
  '''  if (!grant_->held() || c.segment != g.segment || c.grant_id != g.grant_id) {''',
  '''  if (!grant_->held() || c.segment != g.segment) {''',
  "COMMIT: the grant id is not checked against the connection's grant",
  equivalent=EQ_STORE_GRANT)
m('commit-held-unchecked', SM,
  '''  if (!grant_->held() || c.segment != g.segment || c.grant_id != g.grant_id) {''',
  '''  if (c.segment != g.segment || c.grant_id != g.grant_id) {''',
  'COMMIT: accepted on a connection that holds no grant (its last one sealed or returned)',
  equivalent=EQ_STORE_GRANT)
m('commit-op-inverted', SM,
  '''  req.op = c.op == 1 ? store::CommitOp::kDelete : store::CommitOp::kPut;''',
  '''  req.op = c.op == 0 ? store::CommitOp::kDelete : store::CommitOp::kPut;''',
  "COMMIT: the client's op mapped the wrong way (put <-> delete)")
m('commit-op-ignored', SM,
  '''  req.op = c.op == 1 ? store::CommitOp::kDelete : store::CommitOp::kPut;''',
  '''  req.op = store::CommitOp::kPut;''',
  "COMMIT: the client's op ignored (every commit taken as a put)")
m('commit-deletes-only-off', SM,
  '''  req.deletes_only = grant_->reserve_only();''',
  '''  req.deletes_only = false;''',
  'COMMIT: a put into the delete reserve (deletes-only grant) accepted')
m('commit-no-fence', SM,
  '''  req.fence = grant_.get();''',
  '''  req.fence = nullptr;''',
  "COMMIT: no fence: a claimed record stays in its writer's write window")
m('info-stats-all-keyspaces', SM,
  '''      if (env_.info_all_keyspaces) {
        for (auto& [name, stats] : env_.keyspaces->AllStats()) {''',
  '''      if (true) {
        for (auto& [name, stats] : env_.keyspaces->AllStats()) {''',
  "INFO stats: every keyspace's stats shown without --info_all_keyspaces")
m('info-names-all-keyspaces', SM,
  '''      if (env_.info_all_keyspaces) {
        for (const std::string& name : env_.keyspaces->Names()) {''',
  '''      if (true) {
        for (const std::string& name : env_.keyspaces->Names()) {''',
  "INFO keyspaces: every keyspace's name shown without --info_all_keyspaces")
m('info-text-not-fitted', SM,
  '''  if (text.size() <= kCap) return text;''',
  '''  return text;''',
  'INFO: a reply over one message cut silently (no truncated line)')
m('refill-failure-drops-grant', SM,
  '''    ack.grant = grant_->Describe();  // the old grant stays''',
  '''''',
  "REFILL refused (busy, no_space): the ack no longer carries the old grant that stays")
m('refill-before-group-finished', SM,
  '''  if (m.kind != Kind::kCommit) FlushQueuedCommits();''',
  '''  if (m.kind != Kind::kCommit && m.kind != Kind::kRefill) FlushQueuedCommits();''',
  "REFILL seals the old segment before the pending group's commit point")
MP='server/src/message_parser.cc'
m('parser-no-hello-first', MP,
  '''  if (hello_pending && h.type != protocol::Type::kHello) {''',
  '''  if (false && hello_pending && h.type != protocol::Type::kHello) {''',
  'parser: messages other than HELLO accepted before HELLO')
m('parser-hello-twice', MP,
  '''      if (!hello_pending) {''',
  '''      if (false) {''',
  'parser: HELLO accepted on an admitted connection (or twice)')
m('parser-refill-flag-ignored', MP,
  '''                            (payload[0] & protocol::kRefillForDelete) != 0;''',
  '''                            false;''',
  "parser: REFILL's for-delete flag ignored")
m('parser-bad-commit-accepted', MP,
  '''      m.kind = st.ok() ? Kind::kCommit : Kind::kError;''',
  '''      m.kind = Kind::kCommit;''',
  'parser: a COMMIT that does not decode handled (not a protocol error)')
m('parser-bad-info-accepted', MP,
  '''      m.kind = st.ok() ? Kind::kInfo : Kind::kError;''',
  '''      m.kind = Kind::kInfo;''',
  'parser: an INFO that does not decode answered (not a protocol error)')
AD='server/src/admission.cc'
m('admission-bad-magic-malformed', AD,
  '''    refusal->admit = protocol::Admit::kBadMagic;''',
  '''    refusal->admit = protocol::Admit::kMalformed;''',
  'admission: a bad magic refused as malformed (wrong status)')
m('admission-bad-version-malformed', AD,
  '''    refusal->admit = protocol::Admit::kBadVersion;''',
  '''    refusal->admit = protocol::Admit::kMalformed;''',
  'admission: a bad version refused as malformed (wrong status)')
m('admission-zero-private-data', AD,
  '''  if (data == nullptr || len == 0 || all_zero) {''',
  '''  if (data == nullptr || len == 0) {''',
  'admission: all-zero (NIC-padded, none sent) private data decoded as a connect')
m('admission-inline-connect-to-protected', AD,
  '''    if (!access_key.has_value() || access_key->empty()) {
      refusal->admit = protocol::Admit::kAccessDenied;
      refusal->reason = "keyspace " + quoted + " needs an access key";
      return nullptr;
    }
    if (!keys_->Check(name, *access_key)) {''',
  '''    if (access_key.has_value() && access_key->empty()) {
      refusal->admit = protocol::Admit::kAccessDenied;
      refusal->reason = "keyspace " + quoted + " needs an access key";
      return nullptr;
    }
    if (access_key.has_value() && !keys_->Check(name, *access_key)) {''',
  'admission: a connect naming a protected keyspace inline (no key) admitted')
m('admission-wrong-key-accepted', AD,
  '''    if (!keys_->Check(name, *access_key)) {''',
  '''    if (false && !keys_->Check(name, *access_key)) {''',
  'admission: a wrong access key accepted')
m('admission-existence-before-key', AD,
  '''  const std::string quoted = "'" + std::string(name) + "'";
  if (keys_ != nullptr && keys_->Protected(name)) {''',
  '''  const std::string quoted = "'" + std::string(name) + "'";
  {
    const std::vector<std::string> names = keyspaces_->Names();
    if (std::find(names.begin(), names.end(), std::string(name)) == names.end() &&
        !(create && allow_create_)) {
      refusal->admit = protocol::Admit::kUnknownKeyspace;
      refusal->reason = "no keyspace " + quoted;
      return nullptr;
    }
  }
  if (keys_ != nullptr && keys_->Protected(name)) {''',
  "admission: a keyspace's existence checked before its access key (a refusal tells which protected names exist)")
m('admission-no-auth-delay', AD,
  '''      if (delay_ != nullptr) delay_->FailAndWait();''',
  '''''',
  "admission: a wrong key's refusal is not delayed (guessing unbounded)")
m('admission-create-without-flag', AD,
  '''      keyspaces_->Get(name, create && allow_create_, &created);''',
  '''      keyspaces_->Get(name, create, &created);''',
  "admission: a client's create flag creates a keyspace without --allow_create")
AK='server/src/access_keys.cc'
m('key-compare-length-ignored', AK,
  '''  volatile uint8_t diff = static_cast<uint8_t>(a.size() ^ b.size());''',
  '''  volatile uint8_t diff = 0;''',
  'access keys: the lengths not compared (the secret plus NUL bytes accepted)')
m('key-compare-early-exit', AK,
  '''    diff = diff | static_cast<uint8_t>(x ^ y);''',
  '''    diff = diff | static_cast<uint8_t>(x ^ y);
    if (diff != 0) break;''',
  'access keys: the compare stops at the first different byte (not constant time)',
  equivalent='timing only: the answer is the same for every input; a test cannot time it without a timed assertion (STYLE: none)')
m('key-min-length-unchecked', AK,
  '''    if (secret.size() < kMinAccessKey) {''',
  '''    if (secret.size() < 1) {''',
  'access keys: a secret shorter than 16 bytes accepted in the file')
m('key-file-group-readable', AK,
  '''  if (st.st_mode & (S_IRWXG | S_IRWXO)) {''',
  '''  if (st.st_mode & S_IRWXO) {''',
  'access keys: a group-readable keys file accepted')
GR='server/src/grants.cc'
m('grant-no-rate-limit', GR,
  '''  if (!used_up && !refills_.Take(TokenBucket::Clock::now(), &retry)) {''',
  '''  if (false && !used_up && !refills_.Take(TokenBucket::Clock::now(), &retry)) {''',
  'grants: REFILLs not rate-limited (--refill_rate)')
m('grant-no-quota', GR,
  '''    if (!quota_->TryTake()) {''',
  '''    if (false && !quota_->TryTake()) {''',
  "grants: a keyspace's grant share not enforced (--grant_share_percent)")
m('grant-quota-leak', GR,
  '''  if (!st.ok() && !held_) ReleaseQuota();''',
  '''''',
  "grants: a failed first REFILL keeps its place in the keyspace's share")
m('grant-shared-registration', GR,
  '''  int rc = conn_ != nullptr
               ? rpma_conn_mr_reg(conn_, keyspace_->GrantBytes(fresh), len,
                                  RPMA_MR_USAGE_WRITE_DST, &mr)
               : RPMA_E_NOSUPP;''',
  '''  int rc = RPMA_E_NOSUPP;''',
  "grants: a grant registered in the keyspace's domain, not bound to its connection (fallback always)")
m('grant-floor-not-raised', GR,
  '''  int rc = rpma_mr_advance(mr_, floor);''',
  '''  int rc = 0;''',
  "grants: the write floor never raised (a committed record stays writable)")
m('grant-floor-one-short', GR,
  '''  const uint64_t floor = end - grant_.start;''',
  '''  const uint64_t floor = end - grant_.start - 1;''',
  "grants: the write floor one byte below the claimed record's end")
m('grant-seal-no-deregister', GR,
  '''  if (!held_) return Status::Ok();
  Deregister();
  held_ = false;
  return keyspace_->SealSegment(grant_);''',
  '''  if (!held_) return Status::Ok();
  held_ = false;
  return keyspace_->SealSegment(grant_);''',
  'grants: a sealed grant (after REFILL, disconnect) stays registered, writable')
m('grant-return-no-deregister', GR,
  '''  if (!held_) return Status::Ok();
  Deregister();
  held_ = false;
  ReleaseQuota();''',
  '''  if (!held_) return Status::Ok();
  held_ = false;
  ReleaseQuota();''',
  "grants: a returned grant (BYE, idle timeout) stays registered, writable",
  equivalent="on the tcp provider: the registration is bound to its connection (rpma_conn_mr_reg), which ends right after the return, so nothing can write through it (a leak only); the fallback (rpma_mr_reg in the keyspace's domain: verbs without per-connection registrations) would leave an rkey open, which no tcp test reaches")
m('grant-reserve-not-flagged', GR,
  '''  g.flags = reserve_ ? protocol::kGrantDeletesOnly : 0;''',
  '''  g.flags = 0;''',
  'grants: a grant from the delete reserve not flagged deletes-only')
SV='server/src/server.cc'
m('server-max-connections-unchecked', SV,
  '''  if (active >= options_.max_connections) {''',
  '''  if (false && active >= options_.max_connections) {''',
  'server: --max_connections not enforced')
m('server-max-connections-off-by-one', SV,
  '''  if (active >= options_.max_connections) {''',
  '''  if (active > options_.max_connections) {''',
  'server: one connection more than --max_connections admitted')
m('server-pending-hello-unchecked', SV,
  '''    if (pending >= pending_cap) {''',
  '''    if (false && pending >= pending_cap) {''',
  'server: --max_pending_hello not enforced')
m('server-ticket-any-accepted', SV,
  '''    ks = tickets_->Redeem(cr.connect.name, &peer_node);
    if (ks == nullptr) {''',
  '''    ks = tickets_->Redeem(cr.connect.name, &peer_node);
    if (ks == nullptr) ks = admission_->Resolve("default", false, "", &r);
    if (ks == nullptr) {''',
  "server: an unknown ticket admitted (to keyspace default)")
m('server-no-set-peer', SV,
  '''    int rc = rpma_conn_req_set_peer(req, ks->peer);''',
  '''    int rc = 0;''',
  "server: an admitted connection left in the listener's protection domain")
m('server-session-listener-peer', SV,
  '''  env.peer = ks != nullptr ? ks->peer : peer_;''',
  '''  env.peer = peer_;''',
  "server: a session's buffers and grants registered in the listener's domain",
  equivalent="on the tcp provider: it does not check the domain of a local (message) buffer against the connection's, and grants are per-connection registrations (rpma_conn_mr_reg), so the listener's domain is used only by the fallback; on verbs every receive would fail with a protection error — no tcp test can tell")
m('server-post-receives-failure-accepted', SV,
  '''    Stats::Add(stats_.refusals);
    (void)rpma_conn_req_delete(&req);
    return;
  }
  uint8_t pdata[protocol::kAcceptSize];''',
  '''    return Refuse(req, {protocol::Admit::kServerError, st.message()}, id);
  }
  uint8_t pdata[protocol::kAcceptSize];''',
  'server: a connection whose receives failed to post is accepted to be refused (its receives point into freed buffers)')
TK='server/src/tickets.cc'
m('ticket-reusable', TK,
  '''  entries_.erase(it);
''',
  '''''',
  'tickets: a ticket redeemed more than once')
m('ticket-never-expires', TK,
  '''  while (!entries_.empty() && entries_.front().expires <= now) {''',
  '''  while (false && !entries_.empty() && entries_.front().expires <= now) {''',
  'tickets: a ticket never expires')
m('ticket-compare-early-exit', TK,
  '''    diff |= static_cast<uint8_t>(a[i] ^ b[i]);''',
  '''    diff |= static_cast<uint8_t>(a[i] ^ b[i]);
    if (diff != 0) break;''',
  'tickets: the compare stops at the first different byte (not constant time)',
  equivalent='timing only: the answer is the same for every input; a test cannot time it without a timed assertion (STYLE: none)')
SS='server/src/session.cc'
m('session-no-hello-timeout', SS,
  '''  } else if (hello_pending_ && now >= hello_deadline_) {''',
  '''  } else if (false && hello_pending_ && now >= hello_deadline_) {''',
  'session: a connection that never sends HELLO is kept (no --hello_timeout_ms)')
m('session-no-idle-timeout', SS,
  '''  } else if (!hello_pending_ && env_.idle_timeout.count() > 0 &&''',
  '''  } else if (false && !hello_pending_ && env_.idle_timeout.count() > 0 &&''',
  'session: an idle admitted connection is kept (no --idle_timeout_ms)')
SIO='server/src/session_io.cc'
m('session-idle-clock-not-reset', SIO,
  '''  last_message_ = Clock::now();     // --idle_timeout_ms counts from here
''',
  '''''',
  "session: a message does not restart the idle clock (busy connections ended)")
PH='store/include/kv/protocol.h'
m('decode-commit-short', PH,
  '''  if (len < kCommitSize) return Status::InvalidArgument("COMMIT truncated");''',
  '''  if (len < 8) return Status::InvalidArgument("COMMIT truncated");''',
  'DecodeCommit: a truncated COMMIT accepted', module='server')
m('decode-commit-unknown-op', PH,
  '''  if (payload[0] > 1) return Status::InvalidArgument("COMMIT: unknown op");''',
  '''  if (payload[0] > 2) return Status::InvalidArgument("COMMIT: unknown op");''',
  'DecodeCommit: an unknown op (2) accepted', module='server')
m('decode-commit-unknown-condition', PH,
  '''  if (payload[1] > 2) {
    return Status::InvalidArgument("COMMIT: unknown condition");''',
  '''  if (payload[1] > 3) {
    return Status::InvalidArgument("COMMIT: unknown condition");''',
  'DecodeCommit: an unknown condition (3) accepted', module='server')
m('decode-hello-short', PH,
  '''  if (len < kHelloSize) return Status::InvalidArgument("HELLO truncated");''',
  '''  if (len < 4) return Status::InvalidArgument("HELLO truncated");''',
  'DecodeHello: a truncated HELLO accepted', module='server')
m('decode-hello-unknown-flags', PH,
  '''  if (payload[0] & ~(kConnectCreate | kHelloPeer)) {
    return Status::InvalidArgument("HELLO: unknown flags");''',
  '''  if (false) {
    return Status::InvalidArgument("HELLO: unknown flags");''',
  'DecodeHello: unknown flags accepted', module='server')
m('decode-hello-key-length', PH,
  '''  if (n > kMaxKeyspaceNameSize || k > kMaxAccessKey) {''',
  '''  if (n > kMaxKeyspaceNameSize) {''',
  'DecodeHello: an access key length over 64 accepted (read past the key field)', module='server')
m('decode-connect-unknown-flags', PH,
  '''  if (flags & ~kConnectFlagsKnown) {''',
  '''  if (false) {''',
  'DecodeConnect: unknown connect flags accepted', module='server')
m('decode-connect-name-past-data', PH,
  '''  if (len < kConnectHeader + n) {''',
  '''  if (false) {''',
  'DecodeConnect: a name longer than the private data accepted (read past it)', module='server')
m('decode-connect-ticket-with-hello', PH,
  '''      ((flags & kConnectHello) || n != kTicketSize)) {''',
  '''      (n != kTicketSize)) {''',
  'DecodeConnect: a ticket connect that also asks for HELLO accepted', module='server')
m('decode-connect-name-unvalidated', PH,
  '''  if (!(flags & (kConnectHello | kConnectTicket))) {
    Status st = ValidateKeyspaceName(out->name);''',
  '''  if (false) {
    Status st = ValidateKeyspaceName(out->name);''',
  "DecodeConnect: an inline keyspace name not validated", module='server')

m('grant-every-refill-free', GR,
  '''      held_ && committed_ >= (uint64_t{grant_.size} - grant_.start) / 2;''',
  '''      held_;''',
  'grants: every REFILL of a held grant is free of the rate limit (not only a half-used one)')
m('grant-commits-not-counted', SM,
  '''    grant_->Committed(req->segment, uint64_t{req->offset} + req->length);
''',
  '''''',
  "grants: commits not counted: a used-up grant's REFILL is rate-limited too")
m('grant-refused-commits-counted', SM,
  '''  req.fence = grant_.get();
  if (!env_.group_commit) {''',
  '''  req.fence = grant_.get();
  grant_->Committed(c.segment, c.offset + c.length);
  if (!env_.group_commit) {''',
  "grants: refused COMMITs count toward a free REFILL (a bogus one per REFILL makes every REFILL free)")

# The commit pipeline's stages and commit point (issue 20).
CP='store/include/kv/store/commit_point.h'
PL='store/src/commit_pipeline.cc'
m('commit-point-skips-persist', CP,
  '''    persister_->PersistRanges(ranges, n);
    return Status::Ok();''',
  '''    (void)persister_;
    return Status::Ok();''',
  'local commit point: acknowledges without persisting')
m('strict-publish-before-durable', KC,
  '''    uint64_t* slot = index_->TakeEmptySlot(home, p.new_slot, store_slot);''',
  '''    uint64_t* slot = index_->TakeEmptySlot(home, p.new_slot, true);''',
  "strict mode: a put's slot stored at decide, visible before the commit point")
m('pipeline-results-out-of-order', PL,
  '''  // Results in request order.
''',
  '''  std::reverse(me.items.begin(), me.items.end());
''',
  "pipeline: a caller's results handed back in reverse order")
m('pipeline-leader-wakes-nobody', PL,
  '''      cv_.notify_all();  // followers of this batch, and the next leader
''',
  '',
  'pipeline: the leader does not wake its followers (nor the next leader)')
m('pipeline-same-key-twice-not-flushed', PL,
  '''    if (Holds(&stripe)) Flush();
''',
  '''    if (Holds(&stripe)) {
      ks_->Decide(*item->request, item->prepared, point_->publish_before_durable(), &item->decided);
      if (item->decided.path == Keyspace::Decided::Path::kReserved) decided_.push_back(&item->decided);
      return;
    }
''',
  'pipeline: a key (stripe) twice in a batch decided without flushing the first')
m('accounting-before-commit-point', KC,
  '''  Status st = point->MakeDurable(ranges.data(), ranges.size());
''',
  '''  for (size_t i = 0; i < n; i++) {
    if (d[i]->old_slot != nullptr) segments_->RemoveLive(static_cast<uint32_t>(d[i]->result.previous.log_offset / segment_size_), d[i]->result.previous.length);
  }
  Status st = point->MakeDurable(ranges.data(), ranges.size());
''',
  "pipeline: old versions' live bytes removed before the commit point")
m('strict-slots-not-persisted', KC,
  '''    persister_->PersistRanges(buckets.data(), buckets.size());
''',
  '',
  'strict mode: published slots never persisted before the acknowledgement')
m('strict-delete-before-durable', KC,
  '''    if (strict) {
      // The tombstone durable first: no reader sees the key gone before.''',
  '''    if (false) {
      // The tombstone durable first: no reader sees the key gone before.''',
  'strict mode: a delete clears the slot before the tombstone reached the commit point')

# --- server worker model (from 149): worker threads driving non-blocking
# sessions (server/src/worker.cc, session*.cc).
WK='server/src/worker.cc'
m('worker-budget-ignored', WK,
  '''      if (s->Pump(options_.budget, &handled)) again_.push_back(s);''',
  '''      if (s->Pump(0, &handled)) again_.push_back(s);''',
  "worker: a session's pass not bounded by the worker's budget (16 completions; pumped until its CQ is empty)",
  equivalent="fairness only: every message is handled and answered in the same order either way, and a session's CQ holds at most --max_inflight receives and as many send completions, so its pass is bounded anyway; only the latency of the worker's other sessions differs, which no test can tell without a timed assertion (STYLE: none)")
m('worker-pass-commits-dropped', WK,
  '''    CommitPass(ready_);
    for (Session* s : ready_) {''',
  '''    for (Session* s : ready_) {''',
  "worker: the COMMITs queued in a pass are not committed (no acks until the session's next non-COMMIT message)")
m('session-reply-timeout-unchecked', SS,
  '''  if (!outbox_.empty() && now >= outbox_since_ + kReplyTimeout) {''',
  '''  if (false && !outbox_.empty() && now >= outbox_since_ + kReplyTimeout) {''',
  'session: a client that takes no replies is kept (the outbox reply timeout not enforced)')
m('session-replies-out-of-order', SM,
  '''  if (m.kind != Kind::kCommit) FlushQueuedCommits();''',
  '''''',
  "session: queued COMMITs not flushed before a non-COMMIT message (its reply overtakes their acks)")
m('worker-group-events-ignored', WK,
  '''    if (what == RPMA_CONN_GROUP_EVENT) s->OnConnEvents();''',
  '''    (void)what;''',
  "worker: a connection event the group reports (the client hung up) never reaches its session (it lingers until a timeout)",
  equivalent="on the tcp provider a hang-up also flushes the session's posted work requests — its receives are always posted, except while replies wait in full send slots, and those sends are flushed then — and the flushed completions end the session as 'peer gone' in the same pass (run on 5f1b452: the whole kv_e2e_server_test passes with this mutant); the event only names the reason. A verbs run, where a DISCONNECTED event may come before the QP errors, would tell it apart")
m('session-pending-hello-not-released', SS,
  '''    env_.pending_hellos->fetch_sub(1, std::memory_order_relaxed);''',
  '''    (void)0;''',
  'session: the pending-HELLO count never decremented (--max_pending_hello fills up for good)')
m('worker-deadlines-not-tracked', WK,
  '''    for (Session* s : ready_) {
      next_deadline_ = std::min(next_deadline_, s->NextDeadline());
    }
''',
  '''''',
  "worker: a session's deadlines after a pass not tracked (the worker sleeps past an ending's, an outbox's deadline)")
m('session-ending-skips-drain', SS,
  '''    if (!closed_ && !drained && now < phase_deadline_) return;''',
  '''''',
  'session: the ending does not wait for posted replies to drain before the disconnect',
  equivalent="on the tcp provider: the drain step still runs once (ReapSends, FlushOutbox), and a posted send is written to the socket at once, ahead of the disconnect frame, so the client reads it anyway; a reply left unsent needs all --max_inflight+1 send slots unacknowledged, i.e. a client that takes no replies, which loses them after the 1 s drain too. On verbs a disconnect flushes sends not yet acknowledged: a verbs run would tell it apart")
m('worker-commits-after-acks', WK,
  '''    results_.clear();
    ks->keyspace->pipeline().Commit(requests_.data(), requests_.size(),
                                    &results_);
    if (options_.stats != nullptr) {
      options_.stats->Add(options_.stats->commit_groups);
      if (members.size() > 1) {
        options_.stats->Add(options_.stats->commit_groups_shared);
      }
    }
    size_t at = 0;
    for (Session* s : members) {
      const size_t n = s->queued_commits();
      s->CompleteCommits(results_.data() + at);
      at += n;
    }''',
  '''    results_.assign(requests_.size(), store::CommitResult{});
    size_t at = 0;
    for (Session* s : members) {
      const size_t n = s->queued_commits();
      s->CompleteCommits(results_.data() + at);
      at += n;
    }
    results_.clear();
    ks->keyspace->pipeline().Commit(requests_.data(), requests_.size(),
                                    &results_);''',
  "worker: a pass's COMMITs acked (ok, an empty result) before they are committed")

RF='store/include/kv/record_format.h'
src = open(os.path.join(root, RF)).read()
# locate the CRC comparison and the unsealed rule for the two header mutants
# Index growth (issue 21): keyspace_grow.cc, index.cc, the fence in Get,
# recovery of an interrupted growth. Numbered after the server's.
KG='store/src/keyspace_grow.cc'
IX='store/src/index.cc'
m('growth-copies-not-persisted', KG,
  '''  persister_->Persist(changed, changed_len);
  // 3. The commit point.''',
  '''  // 3. The commit point.''',
  'growth: moved copies not persisted before the catalog commit point')
m('growth-clear-before-commit', KG,
  '''  // 3. The commit point.
  st = growth_sink_ ? growth_sink_(n2, generation + 1) : Status::Ok();''',
  '''  index_->ClearMovedFrom(moves);
  // 3. The commit point.
  st = growth_sink_ ? growth_sink_(n2, generation + 1) : Status::Ok();''',
  'growth: old positions cleared before the commit point (a crash loses moved keys)')
m('growth-new-buckets-not-zeroed', KG,
  '''  std::memset(fresh, 0, fresh_len);  // persisted with the copies''',
  '',
  "growth: new buckets keep the log segments' old bytes")
m('growth-takes-busy-segments', 'store/src/segment_table.cc',
  '''  if (busy > 0 ||
      free_.size() < free_among + kCleanerReserve + kDeleteReserve) {''',
  '''  if (free_.size() < free_among) {''',
  'growth: the index takes log segments that hold records')
m('growth-sink-error-ignored', KG,
  '''  if (!st.ok()) {
    index_->UndoCopies(moves);''',
  '''  if (false) {
    index_->UndoCopies(moves);''',
  'growth: a failed catalog write still switches the geometry')
m('growth-move-ignores-neighbour-bucket', IX,
  '''    if (b < home || b >= home + ix::kProbeBuckets) continue;  // Check's''',
  '''    if (b != home) continue;''',
  'growth: slots in the probe bucket never move (their key is lost to readers)')
m('get-no-fence', KS,
  '''    if (changed || !index_->Unchanged(geo)) continue;''',
  '''    if (changed) continue;''',
  "get: not_found concluded without checking the geometry (the readers' fence)")
m('recover-keeps-strays', 'store/src/keyspace_recover.cc',
  '''  if (b < home || b >= home + ix::kProbeBuckets) {
    return "is outside its key's buckets";
  }''',
  '''  (void)home;
  (void)b;''',
  'recovery: copies an interrupted growth left outside their buckets stay')
m('pipeline-no-retry-after-growth', PL,
  '''      RunAlone(&it);
    }''',
  '''    }''',
  'pipeline: a key refused for a full neighbourhood is not decided again after the growth')
m('growth-no-evacuation', KG,
  '''  (void)EvacuateFront(SegmentsUnderIndex(2 * index_->bucket_count()));
''',
  '',
  "growth: records in the log's first segments are not moved out (no_space with free room)")
m('no-automatic-growth', PL,
  '''  ks_->MaybeGrow();''',
  '',
  'pipeline: the index never grows on load (only on a full neighbourhood)')

# The client's side of the readers' fence (issue 21), numbered after the
# store's growth mutants.
m('fence-header-not-checked', GP,
  '''  if (header.bucket_count != op->bucket_count) {''',
  '''  if (false && header.bucket_count != op->bucket_count) {''',
  "get: not_found without comparing the header's bucket count (the fence)")
m('fence-torn-header-taken', GP,
  '''  if (!ix::DecodeIndexHeader(conn_->arena() + op->header_off, &header)) {''',
  '''  if (!ix::DecodeIndexHeader(conn_->arena() + op->header_off, &header) &&
      false) {''',
  'get: a header that does not decode (torn) is taken as it is')

# The worker's connection group (issue 20, session 2), numbered last.
m('worker-adopt-misses-early-events', 'server/src/worker.cc',
  '''    raw->OnConnEvents();
    if (stopping_) raw->Shutdown();''',
  '''    if (stopping_) raw->Shutdown();''',
  "worker: events the group took for a connection before its session was handed over are never looked at (a client that hung up at once stays a session)",
  equivalent="the events a group can take before the hand-over are ESTABLISHED (which the session only notes) and a hang-up, which on tcp also flushes the receives posted before the accept, so the session still ends as 'peer gone' at its first pump (the whole kv_e2e_server_test passes with this mutant); a verbs run would tell it apart")
m('worker-spin-ignores-wakeup', 'server/src/worker.cc',
  '''      if (events[i].data.u64 == kWakeFd) return;  // inbox or stop''',
  '''      if (events[i].data.u64 == kWakeFd) continue;''',
  "worker: a spin (--spin_us) that reads keep going ignores the worker's wake-up (a stop waits for the reads to end)")

# Expiring keys (issue 22), numbered last.
m('get-ignores-expiry', 'store/src/keyspace.cc',
  '''      const bool expired = rf::Expired(c.view, NowMs());''',
  '''      const bool expired = false;''',
  "store Get: an expired newest version is returned as live")
m('condition-ignores-expiry', 'store/src/keyspace_commit.cc',
  '''  const bool exists = found && !rf::Expired(old.view, now);''',
  '''  const bool exists = found;''',
  "commit: conditions see an expired key as present (put-if-absent refused)")
m('seal-stamps-duration', 'store/src/keyspace_commit.cc',
  '''    expiry = view.expires() ? now + view.expiry : 0;''',
  '''    expiry = view.expires() ? view.expiry : 0;''',
  "commit: the expiry stored is the client's duration, not the server's now + duration")
m('sweep-skips-pending-clears', 'store/src/keyspace_clean.cc',
  '''  // (1) above: before any expired slot is cleared.
  index_->PersistClears();''',
  '''  // (1) above: before any expired slot is cleared.''',
  "sweep: expired slots cleared before older versions' pending clears are durable (a crash may uncover an older version)")
m('sweep-never-notes-expiry', 'store/src/keyspace_clean.cc',
  '''        NoteExpiry(view.expiry);
        return true;''',
  '''        return true;''',
  "sweep: an expiry not yet due is forgotten (that key is never swept: its bytes never come back)")
m('client-judges-nothing', 'client/src/client.cc',
  '''  *visible = left > 0;''',
  '''  *visible = true;''',
  "client: an expired record read one-sided is returned as live")

for i,(name,path,old,new,what) in enumerate(M):
    if name in ('commit-no-crc-check', 'get-no-crc-check'):
        mm = re.search(r'\n(\s*)if \(([^\n]*[Cc]rc[^\n]*!=[^\n]*)\) \{', src)
        assert mm, 'crc line'
        old = mm.group(0); new = old.replace('if (', 'if (false && (', 1).replace(') {', ')) {')
        M[i] = (name,path,old,new,what)
    if name == 'commit-writer-sequence':
        old = 'if (rule == SequenceRule::kUnsealed && h.sequence != 0) {'
        assert old in src
        M[i] = (name,path,old,'if (false && rule == SequenceRule::kUnsealed && h.sequence != 0) {',what)
m('worker-spin-needs-completions', 'server/src/worker.cc',
  '''    if (options_.spin_us > 0 && (served || !busy_.empty())) Spin();''',
  '''    if (options_.spin_us > 0 && !busy_.empty() && served) Spin();''',
  "worker: only a pass that handled messages starts a spin (a get-only client's READs, served with no completion, pay the worker's wake-up each)")
m('pool-explicit-id-unchecked', 'store/src/pool_keyspaces.cc',
  '''    if (o.id != 0 && slots_[i].copy >= 0 && slots_[i].entry.state == kLive &&''',
  '''    if (false && o.id != 0 && slots_[i].copy >= 0 && slots_[i].entry.state == kLive &&''',
  "pool: a keyspace created with an explicit id is not checked against the live keyspaces' ids (two keyspaces carry one id)")

m('shard-epoch-unchecked', 'server/src/shard_table.cc',
  '''  if (request_epoch == epoch) return Status::Ok();''',
  '''  if (true) return Status::Ok();''',
  "cluster: a COMMIT or REFILL naming a stale map epoch is decided by a node that serves the shard at another epoch")
m('shard-lease-unchecked', 'server/src/shard_table.cc',
  '''    alive = lease_alive_ && lease_alive_();''',
  '''    alive = true;''',
  "cluster: admission and COMMIT do not ask whether the lease is alive (a node past its deadline still decides)")
m('shard-ack-past-deadline', 'server/src/shard_table.cc',
  '''  return !fenced_ && lease_alive_ && lease_alive_();''',
  '''  return !fenced_;''',
  "cluster: a commit decided before the lease deadline is acknowledged after it")
m('shard-created-empty-at-later-epoch', 'server/src/cluster_node.cc',
  '''to_make, w.epoch == 1);''',
  '''to_make, true);''',
  "cluster: a node creates, empty, a shard whose data is on its former primary (answers not_found for keys that exist)")
m('replica-commit-from-a-client', 'server/src/session_messages.cc',
  '''  if (replica != peer_node_) {''',
  '''  if (false && replica != peer_node_) {''',
  "moves: a client commits a record sealed with a sequence of its choosing (pins the key)")
m('move-not-forwarded', 'server/src/move_source.cc',
  '''  m->options_.commit_point->Attach(m->forwarder_);''',
  '''  (void)m->forwarder_;''',
  "moves: commits during the copy are not forwarded (the target misses them; lost at the switch)")
m('replica-epoch-not-persisted', 'store/src/keyspace.cc',
  '''  KV_RETURN_IF_ERROR(EnsureDurableEpoch(sequence >> kEpochShift));
  uint64_t next''',
  '''  uint64_t next''',
  "moves: a copy's sequence epoch is not persisted (after a reopen local writes lose to older copies)")
m('replica-sequence-not-advanced', 'store/src/keyspace_commit.cc',
  '''    d->status = AdvanceSequencePast(sequence);''',
  '''    d->status = Status::Ok();''',
  "moves: replica commits leave the keyspace's sequences behind the copies'")

# Every replacement is checked before the old patches are removed: a
# mutant that no longer matches its source leaves the folder as it was.
bad = []
for name,path,old,new,what in M:
    c = open(os.path.join(root, path)).read().count(old)
    if c != 1: bad.append((name, path, c))
for b in bad: print('%s (%s): the text to replace occurs %d times, not once' % b, file=sys.stderr)
if bad: sys.exit(1)
if os.environ.get('RPKV_MUTATION_CHECK_ONLY'): sys.exit(0)
# Only this list's numbers are replaced: patches written by hand after it
# (189-, replication and later) stay.
os.makedirs(out, exist_ok=True)
for f in os.listdir(out):
    if f.endswith('.patch') and int(f.split('-')[0]) <= len(M):
        os.remove(os.path.join(out, f))
n = 0
for idx,(name,path,old,new,what) in enumerate(M, 1):
    full = os.path.join(root, path)
    s = open(full).read()
    assert s.count(old) == 1, (name, s.count(old))
    t = s.replace(old, new)
    d = tempfile.mkdtemp()
    os.makedirs(os.path.join(d,'a',os.path.dirname(path))); os.makedirs(os.path.join(d,'b',os.path.dirname(path)))
    open(os.path.join(d,'a',path),'w').write(s); open(os.path.join(d,'b',path),'w').write(t)
    diff = subprocess.run(['diff','-u','--label','a/'+path,'--label','b/'+path,'a/'+path,'b/'+path],cwd=d,capture_output=True,text=True).stdout
    shutil.rmtree(d)
    fn = os.path.join(out, '%02d-%s.patch' % (idx, name))
    head = 'What: %s\n' % what
    if name in EQ: head += 'Equivalent: %s\n' % EQ[name]
    if name in MODULE: head += 'Module: %s\n' % MODULE[name]
    open(fn,'w').write(head + '\n' + diff)
    n += 1
print(n, 'patches')
