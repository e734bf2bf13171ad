// kvbench end to end: --help, usage errors, and tiny runs against a real
// redis-server and a real kvserver on 127.0.0.1 (each skipped with a
// message when its server is not there), checking that the JSON has the
// documented shape and that no operation failed or read a wrong value.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

// --- a small JSON reader, enough for kvbench's output --------------------
struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;
  bool Has(const std::string& k) const { return object.count(k) > 0; }
  const Json& operator[](const std::string& k) const { return object.at(k); }
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}
  bool Parse(Json* out) {
    if (!Value(out)) return false;
    Ws();
    return i_ == s_.size();
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
      i_++;
  }
  bool Lit(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool Str(std::string* out) {
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    for (i_++; i_ < s_.size(); i_++) {
      char c = s_[i_];
      if (c == '"') {
        i_++;
        return true;
      }
      if (c == '\\') {
        if (++i_ >= s_.size()) return false;
        char e = s_[i_];
        if (e == 'u') {
          if (i_ + 4 >= s_.size()) return false;
          out->push_back(static_cast<char>(
              std::stoi(std::string(s_.substr(i_ + 1, 4)), nullptr, 16)));
          i_ += 4;
        } else {
          out->push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
        }
      } else {
        out->push_back(c);
      }
    }
    return false;
  }
  bool Value(Json* v) {
    Ws();
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{') {
      v->type = Json::kObject;
      i_++;
      Ws();
      if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
      while (true) {
        Ws();
        std::string key;
        if (!Str(&key)) return false;
        Ws();
        if (!Lit(":")) return false;
        if (v->object.count(key)) return false;  // duplicate key
        if (!Value(&v->object[key])) return false;
        Ws();
        if (Lit("}")) return true;
        if (!Lit(",")) return false;
      }
    }
    if (c == '[') {
      v->type = Json::kArray;
      i_++;
      Ws();
      if (Lit("]")) return true;
      while (true) {
        v->array.emplace_back();
        if (!Value(&v->array.back())) return false;
        Ws();
        if (Lit("]")) return true;
        if (!Lit(",")) return false;
      }
    }
    if (c == '"') {
      v->type = Json::kString;
      return Str(&v->string);
    }
    if (Lit("true") || Lit("false")) {
      v->type = Json::kBool;
      v->number = s_[i_ - 1] == 'e' && s_[i_ - 2] == 'u';
      return true;
    }
    if (Lit("null")) return true;
    size_t end = i_;
    while (end < s_.size() && std::strchr("+-.eE0123456789", s_[end])) end++;
    if (end == i_) return false;
    v->type = Json::kNumber;
    v->number = std::stod(std::string(s_.substr(i_, end - i_)));
    i_ = end;
    return true;
  }
  std::string_view s_;
  size_t i_ = 0;
};

// --- processes ------------------------------------------------------------
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

bool PortOpen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path p = fs::path(dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  for (const char* d : {"/usr/sbin", "/usr/bin"}) {
    fs::path p = fs::path(d) / name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// A child process with stdout+stderr in `log`; killed (SIGTERM, then
// SIGKILL after 5 s) when destroyed.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& log) {
    std::vector<char*> argv;
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Child() { Stop(); }
  pid_t pid() const { return pid_; }
  bool Running() {
    if (pid_ <= 0) return false;
    int st;
    if (waitpid(pid_, &st, WNOHANG) == 0) return true;
    pid_ = -1;
    return false;
  }
  // Exit status, waiting at most `timeout`; -1 when it had to be killed.
  int Wait(std::chrono::seconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0) {
      int st;
      pid_t r = waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      if (std::chrono::steady_clock::now() > end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Stop();
    return -1;
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 500; i++) {
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class KvbenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kvbench_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    servers_.clear();  // stops them
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs kvbench with `args`; returns its exit status, output in *out.
  int Kvbench(std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), KVBENCH_PATH);
    args.push_back("--pings=100");  // the default 1000 is for figures
    std::string log = (dir_ / ("kvbench" + std::to_string(runs_++) + ".log"));
    Child c(args, log);
    int rc = c.Wait(std::chrono::seconds(60));
    *out = ReadFile(log);
    return rc;
  }

  // Starts a server and waits until it listens on `port`.
  ::testing::AssertionResult Start(std::vector<std::string> args, int port,
                                   const std::string& name) {
    std::string log = dir_ / (name + ".log");
    servers_.push_back(std::make_unique<Child>(args, log));
    Child& c = *servers_.back();
    for (int i = 0; i < 1000; i++) {
      if (PortOpen(port)) return ::testing::AssertionSuccess();
      if (!c.Running()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return ::testing::AssertionFailure()
           << name << " did not listen on " << port << ": " << ReadFile(log);
  }

  // The documented JSON shape, and no errors anywhere.
  void ExpectReport(const fs::path& path, const std::string& backend,
                    const std::vector<std::string>& ops,
                    const std::vector<std::string>& absent) {
    std::string text = ReadFile(path);
    Json j;
    ASSERT_TRUE(JsonReader(text).Parse(&j)) << "not JSON: " << text;
    ASSERT_EQ(j.type, Json::kObject);
    ASSERT_EQ(j.object.size(), 2u) << text;  // exactly config and results
    ASSERT_TRUE(j.Has("config"));
    ASSERT_TRUE(j.Has("results"));
    const Json& c = j["config"];
    for (const char* k : {"kvbench_version", "git_revision", "backend",
                          "server", "workload", "mix", "distribution", "keys",
                          "key_size", "value_size_min", "value_size_max",
                          "threads", "qd", "warmup_s", "host", "server_info"}) {
      EXPECT_TRUE(c.Has(k)) << "config lacks " << k;
    }
    EXPECT_EQ(c["backend"].string, backend);
    const Json& r = j["results"];
    std::vector<std::string> expect = ops;
    expect.push_back("overall");
    for (const std::string& op : expect) {
      ASSERT_TRUE(r.Has(op)) << "results lack " << op << ": " << text;
      const Json& o = r[op];
      for (const char* k : {"ops", "ops_per_sec", "p50_us", "p90_us", "p99_us",
                            "p999_us", "max_us", "errors"}) {
        ASSERT_TRUE(o.Has(k)) << op << " lacks " << k;
        EXPECT_EQ(o[k].type, Json::kNumber) << op << "." << k;
      }
      EXPECT_GT(o["ops"].number, 0) << op;
      EXPECT_EQ(o["errors"].number, 0) << op;
      EXPECT_LE(o["p50_us"].number, o["p99_us"].number) << op;
      EXPECT_LE(o["p99_us"].number, o["max_us"].number) << op;
    }
    for (const std::string& op : absent) EXPECT_FALSE(r.Has(op)) << op;
    EXPECT_TRUE(r["overall"].Has("client_cpu_us_per_op"));
  }

  fs::path dir_;
  std::vector<std::unique_ptr<Child>> servers_;
  int runs_ = 0;
};

TEST_F(KvbenchTest, HelpExitsZeroAndNamesTheFlags) {
  std::string out;
  ASSERT_EQ(Kvbench({"--help"}, &out), 0) << out;
  for (const char* flag : {"-workload", "-distribution", "-qd", "-wait",
                           "-redis", "-json", "-plot", "-value_size"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag << " in " << out;
  }
}

TEST_F(KvbenchTest, BadFlagsAreUsageErrors) {
  std::string out;
  EXPECT_EQ(Kvbench({"--workload=e"}, &out), 2) << out;
  EXPECT_NE(out.find("--workload"), std::string::npos) << out;
  EXPECT_EQ(Kvbench({"--qd=0"}, &out), 2) << out;
  EXPECT_EQ(Kvbench({"--value_size=8"}, &out), 2) << out;
  EXPECT_EQ(Kvbench({"--wait=spin"}, &out), 2) << out;
  EXPECT_EQ(Kvbench({"--workload=custom", "--read_ratio=0.5"}, &out), 2) << out;
  EXPECT_EQ(Kvbench({"--timeline=/tmp/x.csv", "--timeline_ms=0"}, &out), 2)
      << out;
  EXPECT_NE(out.find("--timeline_ms"), std::string::npos) << out;
}

// kvbench_flush_floor: figures for each way and thread count; usage
// errors are 2, a directory it cannot write is 3.
TEST_F(KvbenchTest, FlushFloorPrintsEachWayAndItsErrorsExitAsDocumented) {
  auto run = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), KVBENCH_FLUSH_FLOOR_PATH);
    const std::string log = dir_ / ("flush" + std::to_string(runs_++));
    Child c(args, log);
    const int rc = c.Wait(std::chrono::seconds(60));
    *out = ReadFile(log);
    return rc;
  };
  std::string out;
  ASSERT_EQ(
      run({"--dir=" + dir_.string(), "--count=5", "--threads=1,2", "--pages=2"},
          &out),
      0)
      << out;
  for (const char* line :
       {"mapped (MADV_RANDOM, as a pool)", "written:", "append:",
        "       1      2", "       2      2", "group commit of 16 puts",
        "batch pool: 16 random index pages", "batch redis: 16 appends",
        "batch commit log: 16 records + their commit-log entries"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << " in " << out;
  }
  EXPECT_FALSE(fs::exists(dir_ / "kvbench_flush_floor.pool"));  // removed
  EXPECT_FALSE(fs::exists(dir_ / "kvbench_flush_floor.log.pool"));
  EXPECT_EQ(run({"--threads=0"}, &out), 2) << out;
  EXPECT_EQ(run({"--pages=two"}, &out), 2) << out;
  EXPECT_EQ(run({"--bogus"}, &out), 2) << out;
  EXPECT_EQ(run({"--dir=" + (dir_ / "missing").string()}, &out), 3) << out;
  EXPECT_NE(out.find("cannot make"), std::string::npos) << out;
}

// kvbench_rtt_floor: both modes' figures; usage errors are 2.
TEST_F(KvbenchTest, RttFloorPrintsBothModesAndRefusesBadFlags) {
  auto run = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), KVBENCH_RTT_FLOOR_PATH);
    const std::string log = dir_ / ("rtt" + std::to_string(runs_++));
    Child c(args, log);
    const int rc = c.Wait(std::chrono::seconds(60));
    *out = ReadFile(log);
    return rc;
  };
  std::string out;
  ASSERT_EQ(run({"--count=200"}, &out), 0) << out;
  for (const char* line : {"block: 200 round trips of 64 B: p50 ",
                           "busy-poll: 200 round trips of 64 B: p50 "}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << " in " << out;
  }
  EXPECT_EQ(run({"--size=0"}, &out), 2) << out;
  EXPECT_EQ(run({"--size=4097"}, &out), 2) << out;
  EXPECT_EQ(run({"--count=0"}, &out), 2) << out;
  EXPECT_EQ(run({"extra"}, &out), 2) << out;
}

TEST_F(KvbenchTest, UnreachableServerIsAConnectError) {
  std::string out;
  int port = FreePort();
  EXPECT_EQ(
      Kvbench({"--backend=redis", "--redis=127.0.0.1:" + std::to_string(port)},
              &out),
      3)
      << out;
  EXPECT_NE(out.find("cannot connect"), std::string::npos) << out;
}

TEST_F(KvbenchTest, TinyRedisRunHasDocumentedJsonAndNoErrors) {
  std::string redis = FindInPath("redis-server");
  if (redis.empty()) {
    GTEST_SKIP() << "redis-server is not installed (bash tools/setup.sh "
                    "installs it): skipping the Redis run";
  }
  int port = FreePort();
  ASSERT_TRUE(Start(
      {redis, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save",
       "", "--appendonly", "no", "--dir", dir_.string(), "--daemonize", "no"},
      port, "redis"));
  std::string addr = "127.0.0.1:" + std::to_string(port);
  std::string out;
  fs::path a = dir_ / "a.json";
  ASSERT_EQ(Kvbench({"--backend=redis", "--redis=" + addr, "--workload=a",
                     "--keys=500", "--ops=2000", "--warmup=0.1", "--threads=2",
                     "--qd=4", "--json=" + a.string(),
                     "--plot_data=" + (dir_ / "a.dat").string(),
                     "--server_pid=" + std::to_string(servers_[0]->pid())},
                    &out),
            0)
      << out;
  ExpectReport(a, "redis", {"read", "update"}, {"insert", "delete", "rmw"});
  // F exercises read-modify-write, D inserts and the latest chooser.
  fs::path f = dir_ / "f.json";
  ASSERT_EQ(Kvbench({"--redis=" + addr, "--workload=f", "--keys=500",
                     "--ops=1000", "--warmup=0", "--json=" + f.string()},
                    &out),
            0)
      << out;
  ExpectReport(f, "redis", {"read", "rmw"}, {"update"});
  fs::path d = dir_ / "d.json";
  ASSERT_EQ(
      Kvbench({"--redis=" + addr, "--workload=d", "--keys=500", "--ops=2000",
               "--warmup=0", "--qd=8", "--load=false", "--json=" + d.string()},
              &out),
      0)
      << out;
  ExpectReport(d, "redis", {"read", "insert"}, {"update"});
}

TEST_F(KvbenchTest, TinyRpkvRunHasDocumentedJsonAndNoErrors) {
  std::string kvserver = KVSERVER_PATH;
  if (kvserver.empty()) {
    GTEST_SKIP() << "kvserver is not built in this tree: skipping the rpkv run";
  }
  int port = FreePort();
  std::string addr = "127.0.0.1:" + std::to_string(port);
  ASSERT_TRUE(Start({kvserver, "--pool=" + (dir_ / "pool").string(),
                     "--pool_size=64M", "--listen=" + addr, "--allow_create"},
                    port, "kvserver"));
  std::string out;
  // Batches (the load phase, --qd 4) on a polling connection; the blocking
  // and adaptive waits at qd 1. One connection at a time: polling clients
  // on a small, shared CI machine would measure the scheduler.
  fs::path a = dir_ / "a.json";
  ASSERT_EQ(Kvbench({"--server=" + addr, "--keyspace=bench", "--create",
                     "--wait=poll", "--workload=a", "--keys=500", "--ops=1000",
                     "--warmup=0.1", "--qd=4", "--json=" + a.string(),
                     "--server_pid=" + std::to_string(servers_[0]->pid())},
                    &out),
            0)
      << out;
  ExpectReport(a, "rpkv", {"read", "update"}, {"insert", "delete", "rmw"});
  Json j;
  ASSERT_TRUE(JsonReader(ReadFile(a)).Parse(&j));
  EXPECT_EQ(j["config"]["wait"].string, "poll");
  EXPECT_TRUE(j["config"].Has("provider"));
  EXPECT_TRUE(j["config"].Has("pool_granularity"));
  EXPECT_EQ(j["results"]["overall"]["server_cpu_us_per_op"].type,
            Json::kNumber);
  // F (read-modify-write) on the loaded keys, D (inserts, latest) after it.
  fs::path f = dir_ / "f.json";
  fs::path timeline = dir_ / "f.csv";
  ASSERT_EQ(Kvbench({"--server=" + addr, "--keyspace=bench", "--wait=block",
                     "--workload=f", "--keys=500", "--ops=300", "--warmup=0",
                     "--load=false", "--json=" + f.string(),
                     "--timeline=" + timeline.string(), "--timeline_ms=5"},
                    &out),
            0)
      << out;
  ExpectReport(f, "rpkv", {"read", "rmw"}, {"update"});
  // The timeline's buckets, 5 ms apart in order, count every measured op.
  std::istringstream rows(ReadFile(timeline));
  std::string row;
  ASSERT_TRUE(std::getline(rows, row));
  EXPECT_EQ(row, "t_ms,ops,ops_per_sec,errors,mean_us,max_us");
  uint64_t ops = 0, expect_t = 0;
  while (std::getline(rows, row)) {
    unsigned long long t = 0, n = 0, errors = 0;
    ASSERT_EQ(std::sscanf(row.c_str(), "%llu,%llu,%*f,%llu", &t, &n, &errors),
              3)
        << row;
    EXPECT_EQ(t, expect_t) << row;
    EXPECT_EQ(errors, 0u) << row;
    expect_t += 5;
    ops += n;
  }
  EXPECT_EQ(ops, 300u);
  fs::path d = dir_ / "d.json";
  ASSERT_EQ(Kvbench({"--server=" + addr, "--keyspace=bench", "--wait=adaptive",
                     "--workload=d", "--keys=500", "--ops=500", "--warmup=0",
                     "--load=false", "--json=" + d.string()},
                    &out),
            0)
      << out;
  ExpectReport(d, "rpkv", {"read", "insert"}, {"update"});
}

}  // namespace
