#include "pool_walk.h"

#include <algorithm>
#include <cstdio>

namespace kv::kvadmin {
namespace {
constexpr size_t kMaxSkipNotes = 20;
}  // namespace

WalkedKeyspace WalkKeyspace(const store::Keyspace& ks, Progress* progress) {
  WalkedKeyspace w;
  w.info = ks.info();
  const uint64_t expected = ks.Stats().keys;
  w.items.reserve(expected);
  ks.ForEachSlot([&](const store::Keyspace::SlotEntry& e) {
    if (!e.problem.empty()) {
      w.skipped++;
      if (w.skip_notes.size() < kMaxSkipNotes) {
        w.skip_notes.push_back("slot " + std::to_string(e.slot) + ": " +
                               e.problem);
      }
      return true;
    }
    WalkedKeyspace::Item it;
    it.key_offset = w.keys.size();
    it.key_len = static_cast<uint32_t>(e.record.key.size());
    w.keys.append(e.record.key);
    it.entry.slot = e.slot;
    it.entry.log_offset = e.log_offset;
    it.entry.length = e.length;
    it.entry.sequence = e.record.header.sequence;
    it.entry.crc = e.record.header.crc;
    it.entry.value_len = e.record.header.value_len;
    it.entry.flags = e.record.header.flags;
    w.items.push_back(it);
    if (progress != nullptr) progress->Add(1);
    return true;
  });
  std::sort(w.items.begin(), w.items.end(),
            [&w](const WalkedKeyspace::Item& a, const WalkedKeyspace::Item& b) {
              const int c = w.key(a).compare(w.key(b));
              return c != 0 ? c < 0 : a.entry.sequence > b.entry.sequence;
            });
  // Equal keys are adjacent, the newest first: keep it.
  size_t out = 0;
  for (size_t i = 0; i < w.items.size(); i++) {
    if (out > 0 && w.key(w.items[out - 1]) == w.key(w.items[i])) {
      w.duplicates++;
      continue;
    }
    w.items[out++] = w.items[i];
  }
  w.items.resize(out);
  w.segments.assign(w.info.log_size / w.info.segment_size, {});
  for (const auto& it : w.items) {
    auto& s = w.segments[it.entry.log_offset / w.info.segment_size];
    s.state = 1;
    s.live_bytes += it.entry.length;
    s.live_records++;
    w.live_bytes += it.entry.length;
  }
  return w;
}

std::string PrintableKey(std::string_view key) {
  std::string s;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      s.push_back(static_cast<char>(c));
    } else {
      char b[5];
      snprintf(b, sizeof(b), "\\x%02x", c);
      s += b;
    }
  }
  return s;
}

}  // namespace kv::kvadmin
