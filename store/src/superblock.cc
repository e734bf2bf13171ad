#include "superblock.h"

#include <cstring>
#include <ctime>
#include <random>

#include "kv/crc32c.h"

namespace kv::store {
namespace pf = pool_format;

namespace {

uint32_t SuperblockCrc(const pf::Superblock& sb) {
  return Crc32c(&sb, offsetof(pf::Superblock, crc));
}

}  // namespace

std::string UuidString(const uint8_t u[16]) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += d[u[i] >> 4];
    s += d[u[i] & 0xf];
  }
  return s;
}

Status FormatSuperblocks(Mapping* m) {
  pf::Superblock sb{};
  std::memcpy(sb.magic, pf::kMagic, sizeof(sb.magic));
  sb.format_version = pf::kFormatVersion;
  std::random_device rd;
  for (auto& b : sb.uuid) b = static_cast<uint8_t>(rd());
  sb.uuid[6] = (sb.uuid[6] & 0x0f) | 0x40;  // RFC 4122 version 4
  sb.uuid[8] = (sb.uuid[8] & 0x3f) | 0x80;
  sb.pool_size = m->size();
  sb.catalog_offset = pf::kCatalogOffset;
  sb.catalog_slots = pf::kCatalogSlots;
  sb.data_offset = pf::kDataOffset;
  sb.created_unix_seconds = static_cast<uint64_t>(std::time(nullptr));
  sb.crc = SuperblockCrc(sb);
  for (int copy = 0; copy < 2; copy++) {
    uint8_t* dst = m->base() + pf::kSuperblockOffset[copy];
    std::memcpy(dst, &sb, sizeof(sb));
    m->persister()->Persist(dst, sizeof(sb));
  }
  return Status::Ok();
}

std::string ValidateSuperblock(const pf::Superblock& sb,
                               uint64_t mapping_size) {
  if (std::memcmp(sb.magic, pf::kMagic, sizeof(sb.magic)) != 0) {
    return "bad magic (not an rpkv pool)";
  }
  if (sb.format_version > pf::kFormatVersion) {
    return "format version " + std::to_string(sb.format_version) +
           " is newer than this build supports (" +
           std::to_string(pf::kFormatVersion) + "); upgrade rpkv";
  }
  if (sb.format_version == 0) return "format version 0 is invalid";
  if (sb.format_version < pf::kMinFormatVersion) {
    // Format 1 laid the index right before the log with no header page,
    // so its index cannot grow in place; there is no in-place upgrade.
    return "format version " + std::to_string(sb.format_version) +
           " (rpkv before online index growth) is not supported by this "
           "build (format " +
           std::to_string(pf::kFormatVersion) +
           "); export it with that release's `kvadmin dump` and `kvadmin "
           "load` the dump into a new pool";
  }
  if (SuperblockCrc(sb) != sb.crc) return "checksum mismatch";
  if (sb.incompat_flags != 0) {
    return "unknown incompatible feature flags " +
           std::to_string(sb.incompat_flags);
  }
  if (sb.pool_size != mapping_size) {
    return "records a pool of " + std::to_string(sb.pool_size) +
           " bytes but the file has " + std::to_string(mapping_size) +
           " (truncated or resized?)";
  }
  if (sb.catalog_offset != pf::kCatalogOffset ||
      sb.catalog_slots != pf::kCatalogSlots ||
      sb.data_offset != pf::kDataOffset) {
    return "catalog/data offsets differ from format version 1's";
  }
  return "";
}

Status LoadSuperblock(Mapping* m, pf::Superblock* out,
                      std::vector<std::string>* notes) {
  if (m->size() < pf::kDataOffset) {
    return Status::Corruption("pool file of " + std::to_string(m->size()) +
                              " bytes is too small to be a pool (truncated?)");
  }
  pf::Superblock copy[2];
  std::string why[2];
  for (int c = 0; c < 2; c++) {
    std::memcpy(&copy[c], m->base() + pf::kSuperblockOffset[c],
                sizeof(copy[c]));
    why[c] = ValidateSuperblock(copy[c], m->size());
  }
  if (!why[0].empty() && !why[1].empty()) {
    if (why[0] == why[1]) return Status::Corruption("superblock: " + why[0]);
    return Status::Corruption("superblock copy A: " + why[0] +
                              "; copy B: " + why[1]);
  }
  const int good = why[0].empty() ? 0 : 1;
  const int bad = 1 - good;
  *out = copy[good];
  if (!why[bad].empty()) {
    std::string note = std::string("superblock copy ") + "AB"[bad] +
                       " was damaged (" + why[bad] + ")";
    if (!m->read_only()) {
      uint8_t* dst = m->base() + pf::kSuperblockOffset[bad];
      std::memcpy(dst, &copy[good], sizeof(copy[good]));
      m->persister()->Persist(dst, sizeof(copy[good]));
      note += "; rewritten from copy ";
      note += "AB"[good];
    }
    notes->push_back(note);
  } else if (std::memcmp(&copy[0], &copy[1], sizeof(copy[0])) != 0) {
    notes->push_back("superblock copies differ; using copy A");
  }
  // Format 2 -> 3 (expiring keys) -> 4 (commit logs): a format 2 pool's
  // records never carry the expires flag, and no keyspace of a format 3
  // pool has a commit log, so the upgrade is the version word alone: copy A,
  // persist, copy B, persist. A crash in between leaves A at 3 and B at
  // 2, both valid: the next writable open finishes it (copy A is used).
  uint32_t from = out->format_version;
  if (why[bad].empty() && copy[bad].format_version < from) {
    from = copy[bad].format_version;
  }
  if (from < pf::kFormatVersion && !m->read_only()) {
    pf::Superblock sb = *out;
    sb.format_version = pf::kFormatVersion;
    sb.crc = SuperblockCrc(sb);
    for (int c = 0; c < 2; c++) {
      uint8_t* dst = m->base() + pf::kSuperblockOffset[c];
      std::memcpy(dst, &sb, sizeof(sb));
      m->persister()->Persist(dst, sizeof(sb));
    }
    *out = sb;
    notes->push_back(
        "pool format upgraded from version " + std::to_string(from) + " to " +
        std::to_string(pf::kFormatVersion) +
        (from < 3 ? " (expiring keys, commit logs)" : " (commit logs)"));
  }
  return Status::Ok();
}

}  // namespace kv::store
