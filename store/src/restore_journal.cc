// The restore journal: its encoding, the pool file's journal next to the
// pool, and the roll-back of an interrupted restore.
#include "kv/store/restore_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "kv/crc32c.h"
#include "kv/store/pool_format.h"
#include "restore_journal_codec.h"
#include "superblock.h"

namespace kv::store {
namespace pf = pool_format;
namespace {

constexpr char kMagic[8] = {'R', 'P', 'K', 'V', 'R', 'J', 'N', 'L'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 64;
constexpr uint64_t kCatalogBytes =
    uint64_t{pf::kCatalogSlots} * 2 * pf::kCatalogEntrySize;

void Put64(std::string* s, uint64_t v) {
  s->append(reinterpret_cast<char*>(&v), 8);
}
uint64_t Get64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

Status Errno(const std::string& what) {
  return Status::IoError(what + ": " + std::strerror(errno));
}

Status SyncDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("opening directory " + dir);
  const int rc = fsync(fd);
  close(fd);
  return rc == 0 ? Status::Ok() : Errno("fsync of directory " + dir);
}

class FileJournal : public RestoreJournal {
 public:
  explicit FileJournal(const std::string& pool_path)
      : path_(pool_path + ".restore-journal") {
    const std::filesystem::path p(pool_path);
    dir_ = p.has_parent_path() ? p.parent_path().string() : ".";
  }

  Result<std::string> Read() override {
    const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound("no restore journal");
      return Errno("opening " + path_);
    }
    std::string out;
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
    const int err = errno;
    close(fd);
    if (n < 0)
      return Status::IoError("reading " + path_ + ": " + strerror(err));
    return out;
  }

  Status Write(std::string_view bytes) override {
    const std::string tmp = path_ + ".tmp";
    const int fd =
        open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("creating " + tmp);
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t w = write(fd, bytes.data() + done, bytes.size() - done);
      if (w <= 0) {
        const Status st = errno == ENOSPC ? Status::NoSpace("writing " + tmp)
                                          : Errno("writing " + tmp);
        close(fd);
        unlink(tmp.c_str());
        return st;
      }
      done += static_cast<size_t>(w);
    }
    if (fsync(fd) != 0) {
      const Status st = Errno("fsync of " + tmp);
      close(fd);
      return st;
    }
    close(fd);
    // The journal appears under its name only complete and durable.
    if (rename(tmp.c_str(), path_.c_str()) != 0)
      return Errno("renaming " + tmp);
    return SyncDir(dir_);
  }

  Status Remove() override {
    if (unlink(path_.c_str()) != 0 && errno != ENOENT) {
      return Errno("removing " + path_);
    }
    (void)unlink((path_ + ".tmp").c_str());
    return SyncDir(dir_);
  }

  std::string name() const override { return path_; }

 private:
  std::string path_;
  std::string dir_;
};

// A valid superblock copy of the pool (none is repaired here).
Status ReadSuperblock(Mapping* m, pf::Superblock* sb) {
  std::string why;
  for (int c = 0; c < 2; c++) {
    std::memcpy(sb, m->base() + pf::kSuperblockOffset[c], sizeof(*sb));
    const std::string w = ValidateSuperblock(*sb, m->size());
    if (w.empty()) return Status::Ok();
    why += std::string(c == 0 ? "" : "; ") + "copy " + "AB"[c] + ": " + w;
  }
  return Status::Corruption("superblock: " + why);
}

}  // namespace

std::string EncodeRestoreJournal(const RestoreJournalContents& c) {
  std::string s(kMagic, sizeof(kMagic));
  Put64(&s, kVersion);  // version (4 bytes) + reserved (4 bytes)
  s.append(reinterpret_cast<const char*>(c.uuid), 16);
  Put64(&s, c.pool_size);
  Put64(&s, pf::kCatalogOffset);
  Put64(&s, c.catalog.size());
  Put64(&s, c.slots.size());
  s += c.catalog;
  for (const auto& slot : c.slots) {
    Put64(&s, slot.offset);
    Put64(&s, slot.old_value);
  }
  const uint32_t crc = Crc32c(s.data(), s.size());
  s.append(reinterpret_cast<const char*>(&crc), 4);
  return s;
}

Status DecodeRestoreJournal(std::string_view b, RestoreJournalContents* c) {
  if (b.size() < kHeaderSize + 4 || std::memcmp(b.data(), kMagic, 8) != 0) {
    return Status::Corruption("not a restore journal (bad magic or length)");
  }
  uint32_t version, crc;
  std::memcpy(&version, b.data() + 8, 4);
  std::memcpy(&crc, b.data() + b.size() - 4, 4);
  if (version != kVersion) {
    return Status::Corruption("restore journal version " +
                              std::to_string(version) + " (expected 1)");
  }
  if (Crc32c(b.data(), b.size() - 4) != crc) {
    return Status::Corruption("restore journal checksum mismatch");
  }
  std::memcpy(c->uuid, b.data() + 16, 16);
  c->pool_size = Get64(b.data() + 32);
  const uint64_t catalog_offset = Get64(b.data() + 40);
  const uint64_t catalog_len = Get64(b.data() + 48);
  const uint64_t n = Get64(b.data() + 56);
  if (catalog_offset != pf::kCatalogOffset || catalog_len != kCatalogBytes ||
      n > (b.size() - kHeaderSize - 4) / 16 ||
      kHeaderSize + catalog_len + n * 16 + 4 != b.size()) {
    return Status::Corruption("restore journal: inconsistent lengths");
  }
  c->catalog.assign(b.data() + kHeaderSize, catalog_len);
  c->slots.resize(n);
  const char* p = b.data() + kHeaderSize + catalog_len;
  for (uint64_t i = 0; i < n; i++, p += 16) {
    c->slots[i] = {Get64(p), Get64(p + 8)};
  }
  return Status::Ok();
}

std::unique_ptr<RestoreJournal> PoolFileRestoreJournal(
    const std::string& pool_path) {
  return std::make_unique<FileJournal>(pool_path);
}

Status RollBackRestore(Mapping* m, RestoreJournal* journal, std::string* note) {
  note->clear();
  Result<std::string> bytes = journal->Read();
  if (!bytes.ok()) {
    return bytes.status().IsNotFound() ? Status::Ok() : bytes.status();
  }
  const std::string what = journal->name() +
                           " (left by an interrupted kvadmin restore; the "
                           "pool may be half-restored)";
  if (m->read_only()) {
    return Status::Unavailable(
        what +
        ": a writable open rolls it back — rerun kvadmin restore, or "
        "start kvserver, before a read-only command");
  }
  RestoreJournalContents c;
  Status st = DecodeRestoreJournal(*bytes, &c);
  pf::Superblock sb;
  if (st.ok()) st = ReadSuperblock(m, &sb);
  if (st.ok() &&
      (std::memcmp(sb.uuid, c.uuid, 16) != 0 || sb.pool_size != c.pool_size)) {
    st = Status::Corruption("it belongs to pool " + UuidString(c.uuid) +
                            ", not " + UuidString(sb.uuid));
  }
  for (size_t i = 0; st.ok() && i < c.slots.size(); i++) {
    if (c.slots[i].offset % 8 != 0 || c.slots[i].offset < pf::kDataOffset ||
        c.slots[i].offset > m->size() - 8) {
      st = Status::Corruption("slot offset " +
                              std::to_string(c.slots[i].offset) +
                              " lies outside the data area");
    }
  }
  if (!st.ok()) {
    return Status::Corruption(what + ": " + st.message() +
                              "; nothing was changed. To finish, remove the "
                              "journal and run kvadmin restore again from the "
                              "same snapshot (it rewrites everything an "
                              "interrupted restore touched)");
  }
  // Slots first, then the catalog; each persisted before the journal goes.
  // Re-running this after a crash writes the same bytes again.
  auto* base = m->base();
  for (const auto& s : c.slots) {
    __atomic_store_n(reinterpret_cast<uint64_t*>(base + s.offset), s.old_value,
                     __ATOMIC_RELEASE);
  }
  std::vector<Persister::Range> ranges;
  ranges.reserve(c.slots.size());
  for (const auto& s : c.slots) ranges.push_back({base + s.offset, 8});
  m->persister()->PersistRanges(ranges.data(), ranges.size());
  std::memcpy(base + pf::kCatalogOffset, c.catalog.data(), c.catalog.size());
  m->persister()->Persist(base + pf::kCatalogOffset, c.catalog.size());
  KV_RETURN_IF_ERROR(journal->Remove());
  *note = "rolled back an interrupted kvadmin restore (" +
          std::to_string(c.slots.size()) +
          " index slots and the catalog as before; journal " + journal->name() +
          " removed)";
  return Status::Ok();
}

}  // namespace kv::store
