#include "commands.h"

#include <ostream>

#include "keyspace_sizing.h"
#include "kv/store/pool.h"

namespace kv::kvadmin {
namespace {

// `live`: a read-only command that may show a pool kvserver holds, as a
// live view (info, keyspace list; not check, which needs a quiet pool).
Result<std::unique_ptr<store::Pool>> OpenPool(const std::string& path,
                                              bool read_only,
                                              bool live = false) {
  if (path.empty()) {
    return Status::InvalidArgument("--pool=PATH is required");
  }
  store::PoolOptions o;
  o.read_only = read_only;
  o.live_view = live;
  return store::Pool::Open(path, o);
}

// Says so when the figures are a live view of a running server's pool.
void SayLiveView(const store::PoolInfo& i, std::ostream& to) {
  if (i.live_view_of.empty()) return;
  to << "live view: the pool is " << i.live_view_of
     << "; the figures may change while they are read\n";
}

std::string Human(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  char buf[32];
  snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0
             ? 0.0
             : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// The keyspace's capacity used, as kvcli info shows it from the server's
// INFO (tools/kvcli/commands.cc): the same figures, the same words.
std::string CapacityLine(const store::KeyspaceStats& s) {
  char buf[256];
  snprintf(buf, sizeof(buf),
           "log %llu of %llu bytes used (%.1f%%), index %llu of %llu slots "
           "used (%.1f%%)",
           static_cast<unsigned long long>(s.log_bytes_used),
           static_cast<unsigned long long>(s.log_bytes),
           Percent(s.log_bytes_used, s.log_bytes),
           static_cast<unsigned long long>(s.index_slots_used),
           static_cast<unsigned long long>(s.index_slots),
           Percent(s.index_slots_used, s.index_slots));
  return buf;
}

// The index's geometry, as kvcli info shows it from the server's INFO
// (tools/kvcli/commands.cc): "1024 buckets, 3 growths, load 0.734".
std::string IndexLine(const store::KeyspaceStats& s) {
  char buf[128];
  snprintf(buf, sizeof(buf), "%llu buckets, %llu growth%s, load %.3f",
           static_cast<unsigned long long>(s.index_buckets),
           static_cast<unsigned long long>(s.index_growths),
           s.index_growths == 1 ? "" : "s",
           s.index_slots == 0 ? 0.0
                              : static_cast<double>(s.index_slots_used) /
                                    static_cast<double>(s.index_slots));
  return buf;
}

}  // namespace

std::string HumanBytes(uint64_t bytes) { return Human(bytes); }

int Fail(std::ostream& err, const Status& st) {
  err << "kvadmin: " << st.ToString() << "\n";
  return kExitFailed;
}

Result<uint64_t> ParseSize(const std::string& text) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    const uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - d) / 10) {
      return Status::InvalidArgument("size '" + text + "' is too large");
    }
    v = v * 10 + d;
    i++;
  }
  if (i == 0) {
    return Status::InvalidArgument("size '" + text +
                                   "' must start with a number (e.g. 1G)");
  }
  std::string suffix = text.substr(i);
  for (char& c : suffix) c = static_cast<char>(toupper(c));
  if (suffix.size() > 1 &&
      (suffix.substr(1) == "IB" || suffix.substr(1) == "B")) {
    suffix = suffix.substr(0, 1);
  }
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K") {
    shift = 10;
  } else if (suffix == "M") {
    shift = 20;
  } else if (suffix == "G") {
    shift = 30;
  } else if (suffix == "T") {
    shift = 40;
  } else if (suffix == "P") {
    shift = 50;
  } else {
    return Status::InvalidArgument("size '" + text +
                                   "': unknown unit (use K, M, G, T, P)");
  }
  if (shift > 0 && v > (UINT64_MAX >> shift)) {
    return Status::InvalidArgument("size '" + text + "' is too large");
  }
  return v << shift;
}

int CreatePool(const std::string& path, uint64_t size, std::ostream& out,
               std::ostream& err) {
  if (path.empty())
    return Fail(err, Status::InvalidArgument("--pool=PATH is required"));
  auto pool = store::Pool::Create(path, size);
  if (!pool.ok()) return Fail(err, pool.status());
  store::PoolInfo info = (*pool)->Info();
  out << "created pool " << path << ": " << Human(info.size) << ", uuid "
      << info.uuid << "\n";
  return kExitOk;
}

int Info(const std::string& path, std::ostream& out, std::ostream& err) {
  auto pool = OpenPool(path, true, /*live=*/true);
  if (!pool.ok()) return Fail(err, pool.status());
  store::PoolInfo i = (*pool)->Info();
  SayLiveView(i, out);
  out << "pool:           " << path << "\n"
      << "uuid:           " << i.uuid << "\n"
      << "format version: " << i.format_version << "\n"
      << "size:           " << i.size << " (" << Human(i.size) << ")\n"
      << "granularity:    " << i.granularity << "\n"
      << "keyspaces:      " << i.keyspaces << "\n"
      << "free:           " << i.free_bytes << " (" << Human(i.free_bytes)
      << "), largest extent " << Human(i.largest_free) << "\n";
  PrintRoomForKeyspaces(i, out);
  for (const std::string& n : i.recovery_notes)
    out << "note:           " << n << "\n";
  for (const store::KeyspaceInfo& k : (*pool)->ListKeyspaces()) {
    auto ks = (*pool)->GetKeyspace(k.name);
    if (!ks.ok()) continue;
    store::KeyspaceStats s = (*ks)->Stats();
    out << "keyspace " << k.name << ": " << s.keys << " keys, live "
        << Human(s.live_bytes) << ", dead " << Human(s.dead_bytes) << ", "
        << s.segments << " segments (" << s.free_segments << " free, "
        << s.sealed_segments << " sealed)\n"
        << "  capacity: " << CapacityLine(s) << "\n"
        << "  index: " << IndexLine(s) << "\n";
  }
  return kExitOk;
}

int Check(const std::string& path, std::ostream& out, std::ostream& err) {
  auto pool = OpenPool(path, true);
  if (!pool.ok()) return Fail(err, pool.status());
  store::CheckReport r = (*pool)->Check();
  for (const std::string& p : r.problems) out << "problem: " << p << "\n";
  for (const std::string& n : r.notes) out << "note: " << n << "\n";
  out << (r.ok() ? "ok" : "CORRUPT") << ": " << r.keyspaces << " keyspaces, "
      << r.slots << " slots, " << r.records_verified << " records verified, "
      << r.problems.size() << " problems";
  if (!r.notes.empty()) {
    out << ", " << r.notes.size()
        << " leftovers of an unclean shutdown (the next writable open "
           "repairs them)";
  }
  out << "\n";
  return r.ok() ? kExitOk : kExitCheckFailed;
}

int KeyspaceCreate(const std::string& path, const std::string& name,
                   const store::KeyspaceOptions& options, std::ostream& out,
                   std::ostream& err) {
  auto pool = OpenPool(path, false);
  if (!pool.ok()) return Fail(err, pool.status());
  store::KeyspaceOptions o = options;
  if (o.log_size == 0) {
    o.log_size = CreateLogSize((*pool)->Info().largest_free, o);
  }
  auto ks = (*pool)->CreateKeyspace(name, o);
  if (!ks.ok()) return Fail(err, ks.status());
  store::KeyspaceInfo k = (*ks)->info();
  out << "created keyspace " << k.name << " (id " << k.id << "): index "
      << k.bucket_count << " buckets, log " << Human(k.log_size) << " in "
      << k.log_size / k.segment_size << " segments of " << Human(k.segment_size)
      << ", commit log "
      << (k.commit_log_entries != 0
              ? std::to_string(k.commit_log_entries) + " entries"
              : std::string("none"))
      << "\n";
  return kExitOk;
}

int KeyspaceDrop(const std::string& path, const std::string& name,
                 std::ostream& out, std::ostream& err) {
  auto pool = OpenPool(path, false);
  if (!pool.ok()) return Fail(err, pool.status());
  Status st = (*pool)->DropKeyspace(name);
  if (!st.ok()) return Fail(err, st);
  out << "dropped keyspace " << name << "\n";
  return kExitOk;
}

int KeyspaceList(const std::string& path, std::ostream& out,
                 std::ostream& err) {
  auto pool = OpenPool(path, true, /*live=*/true);
  if (!pool.ok()) return Fail(err, pool.status());
  SayLiveView((*pool)->Info(), err);  // stdout stays one line a keyspace
  for (const store::KeyspaceInfo& k : (*pool)->ListKeyspaces()) {
    out << k.name << "\tid=" << k.id << "\tbuckets=" << k.bucket_count
        << "\tlog=" << k.log_size << "\tsegment=" << k.segment_size
        << "\tmax_value=" << k.max_value_size
        << "\tcommit_log=" << k.commit_log_entries << "\n";
  }
  return kExitOk;
}

}  // namespace kv::kvadmin
