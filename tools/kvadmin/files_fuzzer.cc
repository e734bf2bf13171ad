// libFuzzer target: the files a user hands kvadmin — a dump (`kvadmin
// load`; docs/dump_format.md) and the keys and values of a snapshot's
// column families (`kvadmin restore`, `snapshot-info`, `verify`;
// docs/snapshot_format.md). The first byte picks:
//  0: the bytes as a dump file, as they are;
//  1: a dump built from the bytes with every checksum right, so that the
//     reader's structural checks (frame order and lengths, the end
//     frame's counts, trailing bytes) are reached, not only its CRCs;
//  2: a snapshot key or value for one of the decoders.
// Each must return a Status without crashing, reading out of bounds or
// leaking; what decodes must encode back to the same bytes (a dump read
// to its end frame, written again by DumpWriter, is the same file).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "dump_format.h"
#include "kv/crc32c.h"
#include "snapshot_format.h"

using namespace kv;
using namespace kv::kvadmin;

namespace {

void PutLe(std::string* s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) s->push_back(static_cast<char>(v >> (8 * i)));
}

// Reads a whole dump; when it reaches the end frame and is version 2,
// writes what it read again and checks that the bytes are the same.
void ReadDump(const std::string& bytes) {
  std::istringstream in(bytes);
  dump::DumpReader r(&in, "fuzz");
  Status st = r.ReadHeader();
  std::ostringstream again;
  dump::DumpWriter w(&again);
  bool v2 = bytes.size() >= 12 && bytes[8] == 2;
  while (st.ok()) {
    dump::DumpReader::Kind kind{};
    dump::KeyspaceFrame k;
    std::string key, value;
    uint64_t expiry = 0;
    st = r.Next(&kind, &k, &key, &value, &expiry);
    if (!st.ok()) break;
    if (kind == dump::DumpReader::Kind::kKeyspace) w.Keyspace(k);
    if (kind == dump::DumpReader::Kind::kRecord) {
      if (key.empty()) __builtin_trap();  // a key is never empty
      w.Record(key, value, expiry);
    }
    if (kind == dump::DumpReader::Kind::kEnd) {
      w.End();
      if (v2 && again.str() != bytes) __builtin_trap();
      return;
    }
  }
  if (st.ok() || st.message().empty()) __builtin_trap();  // errors say why
}

// Mode 1: [version byte] then frames of [type byte][u16 length][body],
// each framed with its length and a correct CRC32C.
std::string BuildDump(const uint8_t* p, size_t n) {
  std::string s(dump::kMagic, sizeof(dump::kMagic));
  PutLe(&s, n > 0 && (p[0] & 1) ? 1 : 2, 4);
  PutLe(&s, Crc32c(s.data(), s.size()), 4);
  size_t i = n > 0 ? 1 : 0;
  while (i + 3 <= n) {
    static constexpr char kTypes[] = {'K', 'R', 'X', 'E'};
    const uint8_t t = p[i];
    std::string f(1, t < 0xf0 ? kTypes[t % 4] : static_cast<char>(t));
    size_t len = p[i + 1] | (size_t{p[i + 2]} << 8);
    i += 3;
    if (len > n - i) len = n - i;
    PutLe(&f, len, 4);
    f.append(reinterpret_cast<const char*>(p + i), len);
    i += len;
    PutLe(&f, Crc32c(f.data(), f.size()), 4);
    s += f;
  }
  return s;
}

void DecodeSnapshot(const uint8_t* p, size_t n) {
  if (n == 0) return;
  const std::string_view b(reinterpret_cast<const char*>(p + 1), n - 1);
  namespace sf = snapshot;
  switch (p[0] % 5) {
    case 0: {
      sf::CatalogValue v;
      if (sf::DecodeCatalog(b, &v).ok() && sf::EncodeCatalog(v) != b) {
        __builtin_trap();
      }
      break;
    }
    case 1: {
      sf::SegmentValue v;
      if (sf::DecodeSegment(b, &v).ok() && sf::EncodeSegment(v) != b) {
        __builtin_trap();
      }
      break;
    }
    case 2: {
      sf::EntryValue v;
      if (sf::DecodeEntry(b, &v).ok()) {
        char out[sf::kEntryValueSize];
        sf::EncodeEntry(v, out);
        if (std::string_view(out, sizeof(out)) != b) __builtin_trap();
      }
      break;
    }
    case 3: {
      uint32_t id = 0;
      std::string_view key;
      if (sf::ParseEntryKey(b, &id, &key).ok() && sf::EntryKey(id, key) != b) {
        __builtin_trap();
      }
      break;
    }
    default: {
      uint32_t id = 0;
      if (sf::ParseIdKey(b, &id).ok() && sf::IdKey(id) != b) __builtin_trap();
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0] % 3;
  // A private copy of exactly the rest, so ASan sees any overread.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size]);
  std::memcpy(buf.get(), data + 1, size - 1);
  const uint8_t* p = buf.get();
  const size_t n = size - 1;
  switch (which) {
    case 0:
      ReadDump(std::string(reinterpret_cast<const char*>(p), n));
      break;
    case 1:
      ReadDump(BuildDump(p, n));
      break;
    default:
      DecodeSnapshot(p, n);
      break;
  }
  return 0;
}
