#!/usr/bin/env python3
"""Writes tests/mutation/patches/NN-name.patch from the replacements below.

Each mutant is one textual replacement in a source: the patch is the
unified diff of it against the current file, headed by a "What:" line
(and "Equivalent:" for a mutant shown to be equivalent, "Module:" for one
judged by another module's tests than its directory's — run.sh picks the
test binaries by module). Mutants are numbered in the order below: new
ones go at the end (store 01-35, client from 36), so numbers cited in the
READMEs stay. When the store's
code moves and a patch no longer applies, edit the replacement here and
rerun: python3 tests/mutation/make_patches.py (the old patches are
replaced). run.sh reads only the patches.
"""
import os, re, shutil, subprocess, sys, tempfile
root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
out = os.path.join(root, 'tests/mutation/patches')
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
M = []
EQ = {}
MODULE = {}
def m(name, path, old, new, what, equivalent=None, module=None):
    M.append((name, path, old, new, what))
    if equivalent: EQ[name] = equivalent
    if module: MODULE[name] = module

KC='store/src/keyspace_commit.cc'
m('inplace-slot-before-record', KC,
  '''    persister_->Persist(record, r.length);
    KV_RETURN_IF_ERROR(PersistSlot(old.slot, p.new_slot));  // commit point''',
  '''    KV_RETURN_IF_ERROR(PersistSlot(old.slot, p.new_slot));  // commit point
    persister_->Persist(record, r.length);''',
  'in-place update (16 slots taken): slot persisted before the record')
m('inplace-no-record-persist', KC,
  '''    persister_->Persist(record, r.length);
    KV_RETURN_IF_ERROR(PersistSlot(old.slot, p.new_slot));  // commit point''',
  '''    KV_RETURN_IF_ERROR(PersistSlot(old.slot, p.new_slot));  // commit point''',
  'in-place update: record never persisted')
m('inplace-abort', KC,
  '''  } else if (exists) {
    persister_->Persist(record, r.length);''',
  '''  } else if (exists) {
    std::abort();
    persister_->Persist(record, r.length);''',
  'in-place update path aborts (is it executed at all?)')
m('put-no-commit-persist', KC,
  '''  persister_->PersistRanges(ranges.data(), ranges.size());  // commit point
''',
  '',
  'put: no persist at the commit point')
m('put-record-only', KC,
  '''    ranges.push_back({d[i].buckets, buckets_len});
''',
  '',
  'put: only the record persisted, not the buckets')
m('put-buckets-only', KC,
  '''    ranges.push_back({d[i].record, d[i].length});
''',
  '',
  'put: only the buckets persisted, not the record')
m('put-home-bucket-only', KC,
  '''  const size_t buckets_len = ix::kProbeBuckets * ix::kBucketSize;
  for (size_t i = 0; i < n; i++) {''',
  '''  const size_t buckets_len = ix::kBucketSize;
  for (size_t i = 0; i < n; i++) {''',
  'put: persist covers the home bucket only, not the next one')
m('put-half-record', KC,
  '''    ranges.push_back({d[i].record, d[i].length});''',
  '''    ranges.push_back({d[i].record, d[i].length / 2u});''',
  'put: only the first half of the record persisted')
m('group-clear-before-commit-point', KC,
  '''  persister_->PersistRanges(ranges.data(), ranges.size());  // commit point
''',
  '''  for (size_t i = 0; i < n; i++) {
    if (d[i].old_slot != nullptr) __atomic_store_n(d[i].old_slot, 0, __ATOMIC_RELEASE);
  }
  persister_->PersistRanges(ranges.data(), ranges.size());  // commit point
''',
  'put (group commit): old slots cleared before the commit point')
m('delete-no-first-persist', KC,
  '''    if (!exists) return res;
    persister_->Persist(buckets, buckets_len);''',
  '''    if (!exists) return res;''',
  'delete: buckets not persisted before the clear (an older duplicate survives)')
m('delete-no-commit-persist', KC,
  '''    __atomic_store_n(old.slot, 0, __ATOMIC_RELEASE);
    persister_->PersistPair(record, r.length, buckets,
                            buckets_len);  // commit point''',
  '''    __atomic_store_n(old.slot, 0, __ATOMIC_RELEASE);''',
  'delete: the clear is never persisted')
m('no-pending-clear', KC,
  '''      std::lock_guard<std::mutex> pending(pending_mu_);
      pending_clears_.push_back(d[i].old_slot);''',
  '''      std::lock_guard<std::mutex> pending(pending_mu_);''',
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
  '''  PersistPendingClears();
  // Zero''',
  '''  // Zero''',
  'grant: pending clears not persisted before a segment is rewritten')
m('close-no-index-persist', KS,
  '''  persister_->Persist(index_,
                      ix::PhysicalBuckets(bucket_count_) * ix::kBucketSize);
}''',
  '''}''',
  'clean close: index not persisted before the clean flag')
m('close-half-index', KS,
  '''  persister_->Persist(index_,
                      ix::PhysicalBuckets(bucket_count_) * ix::kBucketSize);
}''',
  '''  persister_->Persist(index_,
                      ix::PhysicalBuckets(bucket_count_) * ix::kBucketSize / 2);
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
m('get-key-length-unchecked', GP,
  '''  if (op->key.size() < rf::kMinKeySize || op->key.size() > rf::kMaxKeySize) {
    Finish(op, Status::InvalidArgument("key must be 1..1024 bytes, got " +''',
  '''  if (false && (op->key.size() < rf::kMinKeySize || op->key.size() > rf::kMaxKeySize)) {
    Finish(op, Status::InvalidArgument("key must be 1..1024 bytes, got " +''',
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
  '''      if (std::memcmp(again, op->neigh, sizeof(again)) == 0) {''',
  '''      if (true || std::memcmp(again, op->neigh, sizeof(again)) == 0) {''',
  'ConfirmAbsent: a changed re-read still taken for absence')
m('confirm-home-bucket-only', GP,
  '''      if (std::memcmp(again, op->neigh, sizeof(again)) == 0) {''',
  '''      if (std::memcmp(again, op->neigh, ix::kBucketSize) == 0) {''',
  'ConfirmAbsent: only the home bucket compared, not the probe bucket')
m('confirm-change-is-not-found', GP,
  '''      RetryGet(op, "slots kept changing");
      return;''',
  '''      Finish(op, Status::NotFound("key not found"));
      return;''',
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
  '''  if (++op->attempts >= kMaxAttempts) {''',
  '''  if (++op->attempts > kMaxAttempts) {''',
  'get: one more attempt than kMaxAttempts')
m('retry-limit-raised', GP,
  '''  if (++op->attempts >= kMaxAttempts) {''',
  '''  if (++op->attempts >= 100) {''',
  'get: retry bound raised to 100 (a record that stays bad keeps the caller)')
m('confirm-limit-raised', GP,
  '''      if (op->attempts + 1 >= kMaxAttempts) {''',
  '''      if (op->attempts + 1 >= 100) {''',
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
  '''    if (len < 1 || body[0] > pr::kMaxStatusCode) {''',
  '''    if (len >= 1 && body[0] > pr::kMaxStatusCode) {''',
  'ack: an empty INFO_ACK accepted')
m('write-contradictory-conditions', EN,
  '''  if (op->if_absent && op->if_version != 0) {''',
  '''  if (false && op->if_absent && op->if_version != 0) {''',
  'write: if_absent with if_version sent (if_absent wins)')
m('write-value-limit-unchecked', EN,
  '''  if (!del && op->value.size() > conn_->accept().max_value_size) {''',
  '''  if (false && !del && op->value.size() > conn_->accept().max_value_size) {''',
  "write: a value over the keyspace's limit sent to the server")
m('write-key-length-unchecked', EN,
  '''  if (op->key.size() < rf::kMinKeySize || op->key.size() > rf::kMaxKeySize) {
    Finish(op, Status::InvalidArgument("key must be 1..1024 bytes, got " +
                                       std::to_string(op->key.size())));
    return Start::kFinished;
  }
  if (!del''',
  '''  if (false && (op->key.size() < rf::kMinKeySize || op->key.size() > rf::kMaxKeySize)) {
    Finish(op, Status::InvalidArgument("key must be 1..1024 bytes, got " +
                                       std::to_string(op->key.size())));
    return Start::kFinished;
  }
  if (!del''',
  'write: key length not checked before sending')

m('buffer-wait-counts-as-attempt', GP,
  '''    // Out of room now: start over once in-flight work drains.
    op->attempts--;
''',
  '''    // Out of room now: start over once in-flight work drains.
''',
  'get: waiting for read-buffer room counts as a failed attempt')
m('info-ack-status-unchecked', EN,
  '''    if (len < 1 || body[0] > pr::kMaxStatusCode) {''',
  '''    if (len < 1) {''',
  'ack: an INFO_ACK with an unknown status code accepted')
m('refill-ack-unchecked', EN,
  '''    Status st = pr::DecodeRefillAck(body, len, geo_.segment_size, &a);
    if (!st.ok()) {''',
  '''    Status st = pr::DecodeRefillAck(body, len, geo_.segment_size, &a);
    if (false && !st.ok()) {''',
  'ack: a REFILL_ACK that does not decode accepted')
m('error-message-ignored', EN,
  '''  if (e.header.type == pr::Type::kError) {
    std::string text(body + (len > 0 ? 1 : 0), body + len);
    conn_->Fail(Status::Unavailable("server " + conn_->server() +
                                    " closed the connection: " + text));
    return;
  }''',
  '''''',
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

RF='store/include/kv/record_format.h'
src = open(os.path.join(root, RF)).read()
# locate the CRC comparison and the unsealed rule for the two header mutants
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
