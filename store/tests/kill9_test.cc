// A real process killed with SIGKILL during a write-heavy load on a file
// pool: everything it acknowledged must be there after reopening.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <random>

#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

struct GenOp {
  bool put;
  std::string key;
  std::string value;
};

// The child's deterministic operation stream (the parent replays it).
class OpStream {
 public:
  explicit OpStream(uint64_t seed) : rng_(seed) {}
  GenOp Next() {
    const uint64_t i = n_++;
    const bool put = rng_() % 5 != 0;
    std::string key = "key" + std::to_string(rng_() % 500);
    std::string value;
    if (put) {
      value = "v" + std::to_string(i) + ":";
      value.resize(16 + rng_() % 200, 'x');
    }
    return {put, key, value};
  }

 private:
  std::mt19937_64 rng_;
  uint64_t n_ = 0;
};

[[noreturn]] void ChildLoad(const std::string& path, uint64_t seed, int fd) {
  PoolOptions o;
  o.grace_period = std::chrono::milliseconds(0);
  auto pool = Pool::Open(path, o);
  if (!pool.ok()) _exit(2);
  auto ks = (*pool)->GetKeyspace("ks");
  if (!ks.ok()) _exit(3);
  Writer w(*ks);
  OpStream ops(seed);
  for (uint64_t i = 0;; i++) {
    GenOp op = ops.Next();
    Result<CommitResult> r =
        op.put ? w.Put(op.key, op.value) : w.Delete(op.key);
    if (!r.ok()) _exit(4);
    // Acknowledge only after the commit returned (it is durable).
    if (write(fd, &i, sizeof(i)) != sizeof(i)) _exit(5);
  }
}

TEST(Kill9Test, AcknowledgedWritesSurviveSigkill) {
  testing::TempDir dir;
  const std::string path = dir.File("pool");
  {
    auto pool = Pool::Create(path, 32 << 20);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    KeyspaceOptions ko;
    ko.index_capacity = 4096;
    ko.segment_size = 64 * 1024;
    ko.log_size = 16 << 20;
    ko.max_value_size = 4096;
    auto ks = (*pool)->CreateKeyspace("ks", ko);
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
  }
  std::map<std::string, std::string> model;
  uint64_t replayed = 0;
  for (int trial = 0; trial < 3; trial++) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      ChildLoad(path, 1000 + trial, fds[1]);
    }
    close(fds[1]);
    usleep(300000 + trial * 200000);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early, status " << status;
    uint64_t last = 0;
    bool any = false;
    uint64_t v;
    while (read(fds[0], &v, sizeof(v)) == sizeof(v)) {
      last = v;
      any = true;
    }
    close(fds[0]);
    ASSERT_TRUE(any) << "the child acknowledged nothing";
    // Replay the child's stream: ops 0..last acknowledged, last+1 in flight.
    OpStream ops(1000 + trial);
    for (uint64_t i = 0; i <= last; i++) {
      GenOp op = ops.Next();
      if (op.put)
        model[op.key] = op.value;
      else
        model.erase(op.key);
    }
    const GenOp inflight = ops.Next();
    replayed += last + 1;

    auto pool = Pool::Open(path);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    CheckReport report = (*pool)->Check();
    ASSERT_TRUE(report.ok()) << report.problems[0];
    auto ks = (*pool)->GetKeyspace("ks");
    ASSERT_TRUE(ks.ok());
    for (int k = 0; k < 500; k++) {
      const std::string key = "key" + std::to_string(k);
      std::string got;
      Status st = (*ks)->Get(key, &got);
      ASSERT_TRUE(st.ok() || st.IsNotFound()) << st.ToString();
      std::optional<std::string> have;
      if (st.ok()) have = got;
      std::optional<std::string> want;
      if (model.count(key)) want = model[key];
      if (have != want && inflight.key == key) {
        // The in-flight op may have committed: adopt its outcome.
        if (inflight.put && have == inflight.value) {
          model[key] = inflight.value;
          continue;
        }
        if (!inflight.put && !have) {
          model.erase(key);
          continue;
        }
      }
      ASSERT_EQ(have, want) << key << " after trial " << trial;
    }
  }
  std::printf("verified %llu acknowledged operations over 3 kills\n",
              static_cast<unsigned long long>(replayed));
}

}  // namespace
}  // namespace kv::store
