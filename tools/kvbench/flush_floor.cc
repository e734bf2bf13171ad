// kvbench_flush_floor — what a durable write costs on this disk: the
// floor under every durable-put figure of kvbench.
//
//   kvbench_flush_floor --dir=/tmp --threads=1,2,4 --pages=2,17
//
// First one durable write of two far-apart pages three ways, interleaved
// (the disk's state is shared): stores through the mapping + msync (what a
// page-granularity pool does), pwrite + fdatasync, and Redis's
// appendfsync always (append + fdatasync).
// Then for each (threads, pages): every thread dirties `pages` pages of its own
// part of a preallocated, mapped 256 MiB file (one "index" page and
// pages-1 "log" pages, as a group commit of that many records does) and
// msyncs their span, --count times; prints the msync p50/p90 and the
// msyncs per second of all threads together (a device that serializes
// flushes shows the same rate for any thread count).
// Then a group commit of --batch puts three ways: one msync over that many
// random index pages and their log pages (what a keyspace without a
// commit log pays: format 3), the same with a commit log instead of the
// index pages (format 4, docs/format.md "Commit log") and Redis's that
// many appends with one fdatasync.
// --pool_advice=false maps without the pool's MADV_RANDOM: readahead then
// builds large folios and an msync writes whole folios back.
// Exit status: 0 ok, 2 usage, 3 the file could not be made.
#include <fcntl.h>
#include <gflags/gflags.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kv/tools/flags.h"

DEFINE_string(dir, ".", "directory on the disk to measure (files are removed)");
DEFINE_string(threads, "1,2,4", "comma-separated thread counts");
DEFINE_string(pages, "2,17", "comma-separated dirty pages per msync");
DEFINE_uint32(count, 400, "msyncs per thread and configuration");
DEFINE_uint32(batch, 16,
              "puts in the group-commit comparison: one msync of that many "
              "random index pages plus their log page(s) against Redis's one "
              "fdatasync of that many appends (0 skips it)");
DEFINE_bool(pool_advice, true,
            "advise the mapping MADV_RANDOM as a pool does (no readahead, "
            "so no large page-cache folios); false shows what large folios "
            "cost");

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kFileSize = 256u << 20;
constexpr size_t kPage = 4096;

double Us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

bool ParseList(const std::string& text, std::vector<int>* out) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 64) return false;
    out->push_back(static_cast<int>(v));
  }
  return !out->empty();
}

struct Figures {
  double p50 = 0, p90 = 0, per_sec = 0;
};

Figures Summarize(std::vector<double> lat, double wall_us) {
  std::sort(lat.begin(), lat.end());
  return {lat[lat.size() / 2], lat[lat.size() * 9 / 10],
          lat.size() / wall_us * 1e6};
}

Figures MsyncRun(uint8_t* map, int threads, int pages) {
  const size_t part = kFileSize / static_cast<size_t>(threads);
  std::vector<std::vector<double>> lat(threads);
  auto body = [&](int t) {
    uint8_t* base = map + part * t;
    const size_t log_pages = part / kPage / 2;
    for (uint32_t i = 0; i < FLAGS_count; i++) {
      uint8_t* index = base + kPage * (i % 64);
      index[0] ^= 1;
      uint8_t* hi = index + kPage;
      for (int k = 0; k < pages - 1; k++) {
        uint8_t* p = base + part / 2 + kPage * ((i * pages + k) % log_pages);
        p[0] ^= 1;
        hi = std::max(hi, p + kPage);
      }
      const auto a = Clock::now();
      msync(index, static_cast<size_t>(hi - index), MS_SYNC);
      lat[t].push_back(Us(a, Clock::now()));
    }
  };
  const auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) ts.emplace_back(body, t);
  for (auto& t : ts) t.join();
  const double wall = Us(start, Clock::now());
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  return Summarize(all, wall);
}

// One msync over [lo, hi), from lo's page on; returns its time in us.
double MsyncSpan(uint8_t* lo, uint8_t* hi) {
  const auto a = Clock::now();
  msync(reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(lo) &
                                   ~(uintptr_t{kPage} - 1)),
        static_cast<size_t>(hi - lo) + kPage, MS_SYNC);
  return Us(a, Clock::now());
}

// A group commit with a commit log (docs/format.md, "Commit log"), on a
// file of its own so that the other ways' msyncs never
// write its index back: each put stores its slot in a random page of an
// index of kLogIndexPages and leaves it dirty; one msync over the batch's
// records and its 32 B commit-log entries (a ring right after the log)
// makes the batch durable. Every kCheckpointPuts puts a checkpoint msyncs
// the whole index (its dirty pages); that time is spread over the batches.
constexpr size_t kLogIndexPages = 2048;  // 8 MiB: ~256 k keys at 0.25 load
constexpr uint32_t kCheckpointPuts = 2048;
class CommitLogModel {
 public:
  explicit CommitLogModel(uint8_t* map) : map_(map) {}
  // One batch; returns its msync's time (checkpoints counted apart).
  double Batch(uint32_t batch) {
    uint8_t* lo = map_ + kFileSize;
    uint8_t* hi = map_;
    for (uint32_t k = 0; k < batch; k++, entry_++) {
      x_ ^= x_ << 13, x_ ^= x_ >> 7, x_ ^= x_ << 17;
      map_[kPage * (x_ % kLogIndexPages) + (x_ >> 40) % 64 * 8] ^= 1;
      uint8_t* rec = map_ + log_at_;
      log_at_ = log_at_ + 128 < kRing ? log_at_ + 128 : kLogBegin;
      uint8_t* e = map_ + kRing + (entry_ % 4096) * 32;
      *rec ^= 1;
      *e ^= 1;
      lo = std::min({lo, rec, e});
      hi = std::max({hi, rec + 128, e + 32});
      if ((entry_ + 1) % kCheckpointPuts == 0) {
        const auto a = Clock::now();
        msync(map_, kLogIndexPages * kPage, MS_SYNC);
        checkpoints_us_ += Us(a, Clock::now());
      }
    }
    return MsyncSpan(lo, hi);
  }
  double checkpoints_us() const { return checkpoints_us_; }

 private:
  static constexpr size_t kLogBegin = kLogIndexPages * kPage;
  static constexpr size_t kRing = kFileSize - 32 * kPage;  // 4096 x 32 B
  uint8_t* const map_;
  uint64_t x_ = 0x2545f4914f6cdd1d;
  size_t log_at_ = kLogBegin;
  uint64_t entry_ = 0;
  double checkpoints_us_ = 0;
};

// A group commit of `batch` puts, as the file pool pays it: each put
// stores its slot in a random index bucket (one random page each, over
// the first half of the file) and its record in the writers' log pages
// (128 B each, contiguous); one msync over the span makes them durable.
// Interleaved with Redis's batch: that many 64 B appends, one fdatasync.
void BatchRun(uint8_t* map, int afd, CommitLogModel* model, uint32_t batch,
              Figures* pool, Figures* redis, Figures* logged) {
  std::vector<double> ours, theirs, with_log;
  const size_t index_pages = kFileSize / 2 / kPage;
  uint64_t x = 0x9e3779b97f4a7c15;
  size_t log_at = kFileSize / 2;
  for (uint32_t i = 0; i < FLAGS_count; i++) {
    uint8_t* lo = map + kFileSize;
    uint8_t* hi = map;
    for (uint32_t k = 0; k < batch; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: random buckets
      uint8_t* slot = map + kPage * (x % index_pages) + (x >> 40) % 64 * 8;
      uint8_t* rec = map + log_at;
      log_at = log_at + 128 < kFileSize ? log_at + 128 : kFileSize / 2;
      *slot ^= 1;
      *rec ^= 1;
      lo = std::min({lo, slot, rec});
      hi = std::max({hi, slot + 8, rec + 128});
    }
    ours.push_back(MsyncSpan(lo, hi));
    uint8_t b[64] = {};
    const auto a = Clock::now();
    bool ok = true;
    for (uint32_t k = 0; k < batch && ok; k++) ok = write(afd, b, 64) == 64;
    ok = ok && fdatasync(afd) == 0;
    theirs.push_back(Us(a, Clock::now()));
    with_log.push_back(model->Batch(batch));
  }
  *pool = Summarize(ours, 1);
  *redis = Summarize(theirs, 1);
  *logged = Summarize(with_log, 1);
}

// A preallocated kFileSize file, mapped and written through once (every
// extent written: no unwritten-extent conversions in the runs), advised
// as a pool is. nullptr (after saying why) when it cannot be made.
uint8_t* MapFile(const std::string& path, int* fd_out) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || posix_fallocate(fd, 0, kFileSize) != 0) {
    std::fprintf(stderr, "kvbench_flush_floor: cannot make %s: %s\n",
                 path.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    return nullptr;
  }
  auto* map = static_cast<uint8_t*>(
      mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (map == MAP_FAILED) {
    std::fprintf(stderr, "kvbench_flush_floor: mmap: %s\n",
                 std::strerror(errno));
    close(fd);
    return nullptr;
  }
  std::fprintf(stderr, "kvbench_flush_floor: writing %zu MiB in %s\n",
               kFileSize >> 20, path.c_str());
  if (FLAGS_pool_advice) {
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    (void)madvise(map, kFileSize, MADV_RANDOM);
  }
  for (size_t o = 0; o < kFileSize; o += kPage) map[o] = 1;
  msync(map, kFileSize, MS_SYNC);
  if (fd_out != nullptr) {
    *fd_out = fd;
  } else {
    close(fd);
  }
  return map;
}

}  // namespace

int main(int argc, char** argv) {
  if (auto rc = kv::tools::ParseFlags(
          &argc, &argv,
          {.name = "kvbench_flush_floor",
           .usage =
               "kvbench_flush_floor [--dir=DIR] [--threads=1,2,4] "
               "[--pages=2,17] [--count=N] [--batch=N] [--pool_advice=false]\n"
               "What one durable write costs on DIR's file system "
               "(tools/kvbench/README.md).\nExit status: 0 ok, 2 "
               "usage, 3 the file could not be made or written."})) {
    return *rc;
  }
  std::vector<int> threads, pages;
  if (argc > 1 || !ParseList(FLAGS_threads, &threads) ||
      !ParseList(FLAGS_pages, &pages) || FLAGS_count == 0) {
    std::fprintf(stderr,
                 "kvbench_flush_floor: bad arguments (see --help): "
                 "--threads and --pages take lists of 1..64, --count > 0\n");
    return 2;
  }
  const std::string path = FLAGS_dir + "/kvbench_flush_floor.pool";
  const std::string aof = FLAGS_dir + "/kvbench_flush_floor.aof";
  int fd = -1;
  uint8_t* map = MapFile(path, &fd);
  if (map == nullptr) return 3;
  const std::string log_path = FLAGS_dir + "/kvbench_flush_floor.log.pool";
  uint8_t* log_map = FLAGS_batch > 0 ? MapFile(log_path, nullptr) : nullptr;
  if (FLAGS_batch > 0 && log_map == nullptr) {
    munmap(map, kFileSize);
    close(fd);
    unlink(path.c_str());
    return 3;
  }
  // A disk is slow for a while after a bulk write: let it settle, and
  // interleave the three ways below so that they share its state.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  int afd = open(aof.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (afd < 0) {
    std::fprintf(stderr, "kvbench_flush_floor: cannot make %s: %s\n",
                 aof.c_str(), std::strerror(errno));
    return 3;
  }
  std::vector<double> mapped, written, appended;
  const auto start = Clock::now();
  for (uint32_t i = 0; i < FLAGS_count; i++) {
    // One index page and one log page, far apart, as a put dirties them.
    uint8_t* index = map + kPage * (i % 64);
    uint8_t* log = map + kFileSize / 2 + kPage * (i % 4096);
    index[8] ^= 1;
    log[8] ^= 1;
    auto a = Clock::now();
    msync(index, static_cast<size_t>(log + kPage - index), MS_SYNC);
    mapped.push_back(Us(a, Clock::now()));
    uint8_t b[64];
    std::memset(b, static_cast<int>(i), sizeof(b));
    bool ok =
        pwrite(fd, b, sizeof(b), static_cast<off_t>(kPage * (i % 64) + 128)) ==
            64 &&
        pwrite(fd, b, sizeof(b),
               static_cast<off_t>(kFileSize / 2 + kPage * (i % 4096) + 128)) ==
            64;
    a = Clock::now();
    ok = ok && fdatasync(fd) == 0;
    written.push_back(Us(a, Clock::now()));
    a = Clock::now();
    ok = ok && write(afd, b, sizeof(b)) == 64 && fdatasync(afd) == 0;
    appended.push_back(Us(a, Clock::now()));
    if (!ok) {
      std::fprintf(stderr, "kvbench_flush_floor: write: %s\n",
                   std::strerror(errno));
      return 3;
    }
  }
  const double wall = Us(start, Clock::now());
  std::printf(
      "one durable write of 2 pages, the three ways interleaved (%u "
      "each)\n",
      FLAGS_count);
  const Figures m = Summarize(mapped, wall), w = Summarize(written, wall),
                ap = Summarize(appended, wall);
  std::printf(
      "mapped%s: stores + msync (the file pool): p50 %.0f us, p90 "
      "%.0f us\n",
      FLAGS_pool_advice ? " (MADV_RANDOM, as a pool)"
                        : " (readahead: large folios)",
      m.p50, m.p90);
  std::printf("written: pwrite + fdatasync: p50 %.0f us, p90 %.0f us\n", w.p50,
              w.p90);
  std::printf(
      "append: 64 B append + fdatasync (Redis appendfsync always): "
      "p50 %.0f us, p90 %.0f us\n",
      ap.p50, ap.p90);
  if (FLAGS_batch > 0) {
    Figures pool, redis, logged;
    CommitLogModel model(log_map);
    BatchRun(map, afd, &model, FLAGS_batch, &pool, &redis, &logged);
    std::printf(
        "group commit of %u puts, interleaved (%u each)\n"
        "batch pool: %u random index pages + their log pages, one msync: "
        "p50 %.0f us, p90 %.0f us\n"
        "batch redis: %u appends, one fdatasync: p50 %.0f us, p90 %.0f us\n",
        FLAGS_batch, FLAGS_count, FLAGS_batch, pool.p50, pool.p90, FLAGS_batch,
        redis.p50, redis.p90);
    std::printf(
        "batch commit log: %u records + their commit-log entries, one "
        "msync (index pages left dirty): p50 %.0f us, p90 %.0f us; "
        "checkpoints (the %zu-page index every %u puts) add %.0f us per "
        "batch\n",
        FLAGS_batch, logged.p50, logged.p90, kLogIndexPages, kCheckpointPuts,
        model.checkpoints_us() / FLAGS_count);
    munmap(log_map, kFileSize);
    unlink(log_path.c_str());
  }
  close(afd);
  unlink(aof.c_str());
  std::printf(
      "msync of dirty pages in the mapping, threads at once (%u per "
      "thread)\n",
      FLAGS_count);
  std::printf("%8s %6s %10s %10s %10s\n", "threads", "pages", "p50_us",
              "p90_us", "msync/s");
  for (int p : pages) {
    for (int t : threads) {
      const Figures f = MsyncRun(map, t, p);
      std::printf("%8d %6d %10.0f %10.0f %10.0f\n", t, p, f.p50, f.p90,
                  f.per_sec);
    }
  }
  munmap(map, kFileSize);
  close(fd);
  unlink(path.c_str());
  return 0;
}
