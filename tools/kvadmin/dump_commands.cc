// kvadmin dump and load (see dump_commands.h).
#include "dump_commands.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "commands.h"
#include "dump_format.h"
#include "kv/record_format.h"
#include "kv/server_clock.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "progress.h"

namespace kv::kvadmin {
namespace {

Result<std::unique_ptr<store::Pool>> Open(const std::string& path,
                                          bool read_only) {
  if (path.empty()) return Status::InvalidArgument("--pool=PATH is required");
  store::PoolOptions o;
  o.read_only = read_only;
  return store::Pool::Open(path, o);
}

// A keyspace frame's sizes as a dump writes them (the pool checks the
// rest when the keyspace is created): the bucket count a power of two of
// at most 2^32, as docs/format.md allows; each name once.
Status CheckKeyspaceFrame(const std::string& in, uint64_t at,
                          const dump::KeyspaceFrame& k,
                          const std::vector<dump::KeyspaceFrame>& before) {
  const std::string where =
      "dump " + in + ": frame at offset " + std::to_string(at) + ": ";
  if (k.bucket_count == 0 || k.bucket_count > (uint64_t{1} << 32) ||
      (k.bucket_count & (k.bucket_count - 1)) != 0) {
    return Status::Corruption(where + "bucket count " +
                              std::to_string(k.bucket_count) +
                              " is not a power of two of at most 2^32; "
                              "nothing was loaded");
  }
  for (const dump::KeyspaceFrame& b : before) {
    if (b.name == k.name) {
      return Status::Corruption(where + "keyspace '" + k.name +
                                "' appears twice; nothing was loaded");
    }
  }
  return Status::Ok();
}

}  // namespace

int Dump(const std::string& pool_path, const std::string& out,
         const std::string& only, std::ostream& os, std::ostream& err) {
  if (out.empty()) {
    return Fail(err, Status::InvalidArgument("dump needs --out=FILE"));
  }
  if (std::filesystem::exists(out)) {
    return Fail(err, Status::InvalidArgument(
                         out + " exists; dump writes a new file only"));
  }
  auto pool = Open(pool_path, true);
  if (!pool.ok()) return Fail(err, pool.status());
  std::vector<store::KeyspaceInfo> list;
  uint64_t total = 0;
  for (const store::KeyspaceInfo& k : (*pool)->ListKeyspaces()) {
    if (!only.empty() && k.name != only) continue;
    auto ks = (*pool)->GetKeyspace(k.name);
    if (!ks.ok()) return Fail(err, ks.status());
    total += (*ks)->Stats().keys;
    list.push_back(k);
  }
  if (!only.empty() && list.empty()) {
    return Fail(err,
                Status::NotFound("no keyspace '" + only + "' in " + pool_path));
  }
  const std::string tmp = out + ".tmp";
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) {
    return Fail(err, Status::IoError("cannot write " + tmp + ": " +
                                     std::strerror(errno)));
  }
  dump::DumpWriter w(&f);
  uint64_t records = 0;
  {
    Progress progress("dump", total);
    for (const store::KeyspaceInfo& k : list) {
      w.Keyspace({k.name, k.bucket_count, k.log_size, k.segment_size,
                  k.max_value_size});
      auto ks = (*pool)->GetKeyspace(k.name);
      Status st = (*ks)->ForEach([&](const record_format::RecordView& v) {
        // Expired keys are absent (ForEach skips them); an expiry is
        // kept as the absolute time it is.
        w.Record(v.key, v.value, v.expiry);
        records++;
        progress.Add(1);
        return static_cast<bool>(f);
      });
      if (!st.ok()) {
        std::remove(tmp.c_str());
        return Fail(err, Status(st.code(), "keyspace '" + k.name +
                                               "': " + st.message() +
                                               " (no dump written)"));
      }
    }
    w.End();
  }
  f.flush();
  if (!f) {
    std::remove(tmp.c_str());
    return Fail(err, Status::IoError("writing " + tmp +
                                     " failed (disk "
                                     "full?); no dump written"));
  }
  f.close();
  std::filesystem::rename(tmp, out);
  os << "dumped " << list.size() << " keyspaces, " << records << " keys ("
     << w.bytes() << " bytes) to " << out << "\n";
  return kExitOk;
}

int Load(const std::string& pool_path, const std::string& in,
         const std::string& rename_to, std::ostream& os, std::ostream& err) {
  if (in.empty())
    return Fail(err, Status::InvalidArgument("load needs --in=FILE"));
  // Read twice (checked whole before the pool changes): a pipe would be
  // empty the second time.
  struct stat sb;
  if (::stat(in.c_str(), &sb) == 0 && !S_ISREG(sb.st_mode)) {
    return Fail(err,
                Status::InvalidArgument(
                    in + " is not a regular file: load reads its dump twice "
                         "(checked whole before the pool changes); save the "
                         "dump to a file first"));
  }
  return LoadFrom(
      pool_path, in,
      [&]() -> Result<std::unique_ptr<std::istream>> {
        auto f = std::make_unique<std::ifstream>(in, std::ios::binary);
        if (!*f) {
          return Status::NotFound("cannot read " + in + ": " +
                                  std::strerror(errno));
        }
        return std::unique_ptr<std::istream>(std::move(f));
      },
      rename_to, os, err);
}

int LoadFrom(const std::string& pool_path, const std::string& in,
             const DumpSource& open, const std::string& rename_to,
             std::ostream& os, std::ostream& err) {
  // Pass 1: the whole file is checked before the pool changes.
  std::vector<dump::KeyspaceFrame> keyspaces;
  std::map<std::string, uint64_t> counts;
  {
    auto f = open();
    if (!f.ok()) return Fail(err, f.status());
    dump::DumpReader r(f->get(), in);
    Status st = r.ReadHeader();
    dump::DumpReader::Kind kind{};
    dump::KeyspaceFrame k;
    std::string key, value;
    Progress progress("check", 0);
    while (st.ok()) {
      const uint64_t at = r.offset();
      st = r.Next(&kind, &k, &key, &value);
      if (!st.ok() || kind == dump::DumpReader::Kind::kEnd) break;
      if (kind == dump::DumpReader::Kind::kKeyspace) {
        st = CheckKeyspaceFrame(in, at, k, keyspaces);
        if (!st.ok()) break;
        keyspaces.push_back(k);
      }
      if (kind == dump::DumpReader::Kind::kRecord) {
        counts[keyspaces.back().name]++;
        progress.Add(1);
      }
    }
    if (!st.ok()) return Fail(err, st);
  }
  if (!rename_to.empty()) {
    if (keyspaces.size() != 1) {
      return Fail(err, Status::InvalidArgument(
                           "--keyspace renames the keyspace of a "
                           "one-keyspace dump; " +
                           in + " holds " + std::to_string(keyspaces.size())));
    }
    counts[rename_to] = counts[keyspaces[0].name];
    keyspaces[0].name = rename_to;
  }
  auto pool = Open(pool_path, false);
  if (!pool.ok()) return Fail(err, pool.status());
  // Only into fresh keyspaces: a load never merges with keys already there.
  for (const dump::KeyspaceFrame& k : keyspaces) {
    auto ks = (*pool)->GetKeyspace(k.name);
    if (ks.ok() && (*ks)->Stats().keys > 0) {
      return Fail(err, Status::InvalidArgument(
                           "keyspace '" + k.name + "' already holds " +
                           std::to_string((*ks)->Stats().keys) +
                           " keys; load into a fresh pool or keyspace "
                           "(--keyspace=NEW for a one-keyspace dump). "
                           "Nothing was loaded"));
    }
  }
  // Pass 2: create and write.
  auto f = open();
  if (!f.ok()) return Fail(err, f.status());
  dump::DumpReader r(f->get(), in);
  Status st = r.ReadHeader();
  uint64_t loaded = 0, total = 0, expired = 0;
  for (const auto& [name, n] : counts) total += n;
  Progress progress("load", total);
  std::unique_ptr<store::Writer> w;
  size_t next_keyspace = 0;
  dump::DumpReader::Kind kind{};
  dump::KeyspaceFrame k;
  std::string key, value;
  uint64_t expiry = 0;
  while (st.ok()) {
    st = r.Next(&kind, &k, &key, &value, &expiry);
    if (!st.ok() || kind == dump::DumpReader::Kind::kEnd) break;
    if (kind == dump::DumpReader::Kind::kKeyspace) {
      if (w) st = w->Close();
      w.reset();
      if (!st.ok()) break;
      // The file is read twice; one that changed in between (more
      // keyspaces, or other ones, than were checked) is not loaded on.
      if (next_keyspace >= keyspaces.size() ||
          (rename_to.empty() && k.name != keyspaces[next_keyspace].name)) {
        st = Status::Corruption("dump " + in +
                                ": the file changed while it was loaded "
                                "(its keyspaces are not the ones checked)");
        break;
      }
      const dump::KeyspaceFrame& want = keyspaces[next_keyspace++];
      auto ks = (*pool)->GetKeyspace(want.name);
      if (!ks.ok()) {
        store::KeyspaceOptions o;
        o.index_capacity = want.bucket_count * 4;  // BucketCountFor's inverse
        o.segment_size = want.segment_size;
        o.log_size = want.log_size;
        o.max_value_size = want.max_value_size;
        ks = (*pool)->CreateKeyspace(want.name, o);
        if (!ks.ok()) {
          st = Status(ks.status().code(),
                      "creating keyspace '" + want.name +
                          "' as dumped: " + ks.status().message());
          break;
        }
      }
      w = std::make_unique<store::Writer>(*ks);
      continue;
    }
    // An expiry is absolute: what is left of it now, on this host's clock
    // (the new pool's); a key that expired since the dump is not loaded.
    Result<store::CommitResult> put = store::CommitResult{};
    if (expiry != 0) {
      const uint64_t now = UnixMillisNow();
      if (expiry <= now) {
        expired++;
        progress.Add(1);
        continue;
      }
      const uint64_t left = expiry - now;
      put = w->PutExpiring(key, value,
                           static_cast<int64_t>(left > record_format::kMaxTtlMs
                                                    ? record_format::kMaxTtlMs
                                                    : left));
    } else {
      put = w->Put(key, value);
    }
    if (!put.ok()) {
      st = Status(put.status().code(),
                  "key " + std::to_string(loaded + 1) +
                      " of the dump: " + put.status().message());
      break;
    }
    loaded++;
    progress.Add(1);
  }
  if (st.ok() && w) st = w->Close();
  if (!st.ok()) {
    return Fail(err,
                Status(st.code(), st.message() + " (" + std::to_string(loaded) +
                                      " keys were loaded before)"));
  }
  os << "loaded " << keyspaces.size() << " keyspaces, " << loaded
     << " keys from " << in << " into " << pool_path;
  if (expired != 0)
    os << " (" << expired << " expired since the dump: skipped)";
  os << "\n";
  return kExitOk;
}

}  // namespace kv::kvadmin
