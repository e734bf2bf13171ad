// Tests of the C API (rpkv/rpkv.h): argument checks and messages without a
// server (CApiArgsTest), then every operation against a live kvserver on
// 127.0.0.1 (CApiTest; the e2e harness starts and stops it).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kv/status.h"
#include "rpkv/rpkv.h"
#include "server_process.h"

// Allocation failure on demand, for this test binary only: while
// t_fail_new is set, operator new in this thread throws std::bad_alloc.
// Not under ThreadSanitizer: its runtime defines operator new itself (a
// replacement fails to link), so that test is skipped there.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KV_TEST_UNDER_TSAN 1
#endif
#endif
namespace {
thread_local bool t_fail_new = false;
}  // namespace

#ifndef KV_TEST_UNDER_TSAN
void* operator new(std::size_t n) {
  if (t_fail_new) throw std::bad_alloc();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
// Every unaligned form, so that nothing is allocated by one allocator and
// freed by another (ASan checks).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (t_fail_new) return nullptr;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept {
  return ::operator new(n, t);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
#endif  // KV_TEST_UNDER_TSAN

namespace {

using ::testing::HasSubstr;

std::string Str(const void* p, size_t n) {
  return std::string(static_cast<const char*>(p), n);
}

// A handle pointer that is not NULL and not a handle: an out-pointer the
// library must reset.
rpkv* Garbage() { return reinterpret_cast<rpkv*>(uintptr_t{0x1}); }

// ---------------------------------------------------------------------------
// Without a server
// ---------------------------------------------------------------------------

TEST(CApiArgsTest, CodesMapOneToOneFromStatusCodes) {
  EXPECT_EQ(RPKV_OK, static_cast<int>(kv::StatusCode::kOk));
  EXPECT_EQ(RPKV_NOT_FOUND, static_cast<int>(kv::StatusCode::kNotFound));
  const std::pair<int, kv::StatusCode> errors[] = {
      {RPKV_E_INVAL, kv::StatusCode::kInvalidArgument},
      {RPKV_E_CORRUPTION, kv::StatusCode::kCorruption},
      {RPKV_E_IO, kv::StatusCode::kIoError},
      {RPKV_E_NOSPACE, kv::StatusCode::kNoSpace},
      {RPKV_E_UNAVAILABLE, kv::StatusCode::kUnavailable},
      {RPKV_E_TIMEDOUT, kv::StatusCode::kTimedOut},
      {RPKV_E_BUSY, kv::StatusCode::kBusy},
      {RPKV_E_PERMISSION, kv::StatusCode::kPermissionDenied},
      {RPKV_E_CONDITION_FAILED, kv::StatusCode::kConditionFailed},
  };
  for (const auto& [rc, code] : errors) {
    EXPECT_EQ(rc, -static_cast<int>(code)) << kv::StatusCodeName(code);
    EXPECT_STRNE(rpkv_strerror(rc), "unknown error");
  }
}

TEST(CApiArgsTest, StrerrorNamesEveryCode) {
  EXPECT_STREQ(rpkv_strerror(RPKV_OK), "ok");
  EXPECT_STREQ(rpkv_strerror(RPKV_NOT_FOUND), "not found");
  EXPECT_STREQ(rpkv_strerror(RPKV_E_INVAL), "invalid argument");
  EXPECT_STREQ(rpkv_strerror(RPKV_E_CONDITION_FAILED), "condition failed");
  EXPECT_STREQ(rpkv_strerror(RPKV_E_NOMEM), "out of memory");
  EXPECT_STREQ(rpkv_strerror(RPKV_E_INTERNAL), "internal error");
  EXPECT_STREQ(rpkv_strerror(-12345), "unknown error");
  EXPECT_STREQ(rpkv_strerror(7), "unknown error");
}

TEST(CApiArgsTest, OptionsInitZeroesEveryFieldAndSetsStructSize) {
  rpkv_options o;
  std::memset(&o, 0xab, sizeof(o));
  rpkv_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof(rpkv_options));
  EXPECT_EQ(o.create_if_missing, 0);
  EXPECT_EQ(o.access_key, nullptr);
  EXPECT_EQ(o.connect_timeout_ms, 0u);  // 0: the library's default
  EXPECT_EQ(o.op_timeout_ms, 0u);
  EXPECT_EQ(o.wait, RPKV_WAIT_DEFAULT);
  EXPECT_EQ(o.spin_us, 0u);
  rpkv_options_init(nullptr);  // no crash
}

TEST(CApiArgsTest, VersionIsTheProjectVersion) {
  EXPECT_STREQ(rpkv_version(), "0.1.0");
}

// No exception reaches C: an allocation failing inside the library is
// RPKV_E_NOMEM with a message, and the next call works.
TEST(CApiArgsTest, OutOfMemoryIsNomemNotAnException) {
#ifdef KV_TEST_UNDER_TSAN
  GTEST_SKIP() << "no operator new replacement under ThreadSanitizer";
#endif
  // Long enough that copying it into kv::ClientOptions allocates.
  const std::string server = "localhost.localdomain.localdomain.localdomain:" +
                             std::to_string(kv::e2e::PickFreePort());
  rpkv* db = Garbage();
  t_fail_new = true;
  int rc = rpkv_connect(server.c_str(), "default", nullptr, &db);
  t_fail_new = false;
  EXPECT_EQ(rc, RPKV_E_NOMEM);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("out of memory"));
  // The same call with memory: as far as finding no server.
  const std::string local =
      "127.0.0.1:" + std::to_string(kv::e2e::PickFreePort());
  EXPECT_EQ(rpkv_connect(local.c_str(), "default", nullptr, &db),
            RPKV_E_UNAVAILABLE)
      << rpkv_errmsg(nullptr);
  EXPECT_EQ(db, nullptr);
}

TEST(CApiArgsTest, CloseAndFreeAcceptNull) {
  rpkv_close(nullptr);
  rpkv_free(nullptr);
  EXPECT_EQ(rpkv_max_value_size(nullptr), 0u);
}

TEST(CApiArgsTest, ConnectWithNullOutIsInvalid) {
  EXPECT_EQ(rpkv_connect("127.0.0.1:7400", "default", nullptr, nullptr),
            RPKV_E_INVAL);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("out is NULL"));
}

TEST(CApiArgsTest, ConnectWithNullServerOrKeyspaceIsInvalidAndOutIsNull) {
  rpkv* db = Garbage();
  EXPECT_EQ(rpkv_connect(nullptr, "default", nullptr, &db), RPKV_E_INVAL);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("server is NULL"));
  db = Garbage();
  EXPECT_EQ(rpkv_connect("127.0.0.1:7400", nullptr, nullptr, &db),
            RPKV_E_INVAL);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("keyspace is NULL"));
}

TEST(CApiArgsTest, ConnectWithUninitializedOptionsIsInvalid) {
  rpkv_options o;
  std::memset(&o, 0, sizeof(o));  // struct_size 0: not rpkv_options_init'ed
  rpkv* db = Garbage();
  EXPECT_EQ(rpkv_connect("127.0.0.1:7400", "default", &o, &db), RPKV_E_INVAL);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("rpkv_options_init"));
}

// A program built against a newer rpkv.h passes a larger struct: the
// fields this library knows are read, the rest ignored.
TEST(CApiArgsTest, ConnectAcceptsTheLargerOptionsOfANewerHeader) {
  struct Newer {
    rpkv_options known;
    uint64_t added_later[4];
  } newer;
  std::memset(&newer, 0xff, sizeof(newer));
  rpkv_options_init(&newer.known);
  newer.known.struct_size = sizeof(newer);
  newer.known.connect_timeout_ms = 2000;
  std::string addr = "127.0.0.1:" + std::to_string(kv::e2e::PickFreePort());
  rpkv* db = Garbage();
  // No server there: getting as far as connecting is the point.
  EXPECT_EQ(rpkv_connect(addr.c_str(), "default", &newer.known, &db),
            RPKV_E_UNAVAILABLE)
      << rpkv_errmsg(nullptr);
  EXPECT_EQ(db, nullptr);
}

TEST(CApiArgsTest, ConnectWithUnknownWaitModeIsInvalid) {
  rpkv_options o;
  rpkv_options_init(&o);
  o.wait = 7;
  rpkv* db = Garbage();
  EXPECT_EQ(rpkv_connect("127.0.0.1:7400", "default", &o, &db), RPKV_E_INVAL);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("wait"));
}

TEST(CApiArgsTest, ConnectWithMalformedAddressOrNameIsInvalid) {
  rpkv* db = Garbage();
  EXPECT_EQ(rpkv_connect("no-port-here", "default", nullptr, &db),
            RPKV_E_INVAL);
  EXPECT_EQ(db, nullptr);
  EXPECT_STRNE(rpkv_errmsg(nullptr), "");
  db = Garbage();
  EXPECT_EQ(rpkv_connect("127.0.0.1:7400", "bad name!", nullptr, &db),
            RPKV_E_INVAL);
  EXPECT_EQ(db, nullptr);
  EXPECT_STRNE(rpkv_errmsg(nullptr), "");
}

TEST(CApiArgsTest, ConnectToPortWithoutServerIsUnavailableWithAHint) {
  std::string addr = "127.0.0.1:" + std::to_string(kv::e2e::PickFreePort());
  rpkv_options o;
  rpkv_options_init(&o);
  o.connect_timeout_ms = 3000;
  rpkv* db = Garbage();
  int rc = rpkv_connect(addr.c_str(), "default", &o, &db);
  EXPECT_LT(rc, 0);
  EXPECT_EQ(rc, RPKV_E_UNAVAILABLE) << rpkv_errmsg(nullptr);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("is kvserver running?"));
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr(addr));
}

// A peer that completes the TCP handshake (the kernel does, from the
// listen backlog) but never answers the connection request.
TEST(CApiArgsTest, ConnectToASilentPeerFailsWithinTheTimeout) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  socklen_t len = sizeof(sa);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  std::string addr = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  rpkv_options o;
  rpkv_options_init(&o);
  o.connect_timeout_ms = 500;
  rpkv* db = Garbage();
  auto start = std::chrono::steady_clock::now();
  int rc = rpkv_connect(addr.c_str(), "default", &o, &db);
  auto took = std::chrono::steady_clock::now() - start;
  close(fd);
  // The provider's connection manager reports an unanswered request as
  // UNREACHABLE when the timeout expires; the client calls that
  // unavailable. Either way: bounded, negative, the address named.
  EXPECT_TRUE(rc == RPKV_E_TIMEDOUT || rc == RPKV_E_UNAVAILABLE)
      << rc << " " << rpkv_errmsg(nullptr);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr(addr));
  EXPECT_LT(took, std::chrono::seconds(5));  // bounded by the option
}

TEST(CApiArgsTest, EveryCallWithNullHandleIsInvalidAndResetsOutputs) {
  void* v = Garbage();
  size_t n = 99;
  uint64_t ver = 99;
  EXPECT_EQ(rpkv_put(nullptr, "k", 1, "v", 1), RPKV_E_INVAL);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("rpkv_put: db is NULL"));
  EXPECT_EQ(rpkv_get(nullptr, "k", 1, &v, &n), RPKV_E_INVAL);
  EXPECT_EQ(v, nullptr);
  EXPECT_EQ(n, 0u);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("rpkv_get: db is NULL"));
  v = Garbage();
  n = 99;
  EXPECT_EQ(rpkv_get_versioned(nullptr, "k", 1, &v, &n, &ver), RPKV_E_INVAL);
  EXPECT_EQ(v, nullptr);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(ver, 0u);
  EXPECT_EQ(rpkv_exists(nullptr, "k", 1), RPKV_E_INVAL);
  EXPECT_EQ(rpkv_delete(nullptr, "k", 1), RPKV_E_INVAL);
  ver = 99;
  EXPECT_EQ(rpkv_put_if_absent(nullptr, "k", 1, "v", 1, &ver), RPKV_E_INVAL);
  EXPECT_EQ(ver, 0u);
  ver = 99;
  EXPECT_EQ(rpkv_put_if_version(nullptr, "k", 1, "v", 1, 5, &ver),
            RPKV_E_INVAL);
  EXPECT_EQ(ver, 0u);
  EXPECT_EQ(rpkv_delete_if_version(nullptr, "k", 1, 5), RPKV_E_INVAL);
  EXPECT_THAT(rpkv_errmsg(nullptr),
              HasSubstr("rpkv_delete_if_version: db is NULL"));
}

TEST(CApiArgsTest, NullHandleMessagesArePerThread) {
  rpkv* db = nullptr;
  ASSERT_EQ(rpkv_connect(nullptr, "default", nullptr, &db), RPKV_E_INVAL);
  std::string mine = rpkv_errmsg(nullptr);
  std::string theirs;
  std::thread t([&] {
    EXPECT_STREQ(rpkv_errmsg(nullptr), "");  // a new thread has none
    rpkv* other = nullptr;
    EXPECT_EQ(rpkv_connect("127.0.0.1:7400", nullptr, nullptr, &other),
              RPKV_E_INVAL);
    theirs = rpkv_errmsg(nullptr);
  });
  t.join();
  EXPECT_THAT(mine, HasSubstr("server is NULL"));
  EXPECT_THAT(theirs, HasSubstr("keyspace is NULL"));
  EXPECT_EQ(rpkv_errmsg(nullptr), mine);
}

// ---------------------------------------------------------------------------
// Against a live kvserver
// ---------------------------------------------------------------------------

class CApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(kv::e2e::MakeTempDir("rpkv_c_api_test"));
    server_ = new kv::e2e::ServerProcess();
    start_ = new kv::Status(server_->Start(
        {"--pool=" + *dir_ + "/pool", "--pool_size=256M", "--allow_create"}));
  }
  static void TearDownTestSuite() {
    if (server_->running()) server_->Stop();
    delete server_;
    delete start_;
    kv::e2e::RemoveTree(*dir_);
    delete dir_;
  }

  void SetUp() override {
    ASSERT_TRUE(start_->ok()) << start_->ToString();
    addr_ = server_->address();
    db_ = Connect("default");
    ASSERT_NE(db_, nullptr);
    // Keys of this test only (the keyspace is shared by the suite).
    prefix_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override { rpkv_close(db_); }

  rpkv* Connect(const char* keyspace, int create = 0,
                const char* access_key = nullptr,
                int wait = RPKV_WAIT_DEFAULT) {
    rpkv_options o;
    rpkv_options_init(&o);
    o.create_if_missing = create;
    o.access_key = access_key;
    o.wait = wait;
    rpkv* db = nullptr;
    int rc = rpkv_connect(addr_.c_str(), keyspace, &o, &db);
    EXPECT_EQ(rc, RPKV_OK) << rpkv_errmsg(nullptr);
    return db;
  }

  std::string Key(const std::string& k) const { return prefix_ + "/" + k; }

  int Put(const std::string& k, const std::string& v) {
    std::string key = Key(k);
    return rpkv_put(db_, key.data(), key.size(), v.data(), v.size());
  }

  // The value of k, or "<rc>" when rpkv_get does not return RPKV_OK.
  std::string Get(const std::string& k, uint64_t* version = nullptr) {
    std::string key = Key(k);
    void* v = nullptr;
    size_t n = 0;
    uint64_t ver = 0;
    int rc = rpkv_get_versioned(db_, key.data(), key.size(), &v, &n, &ver);
    if (version != nullptr) *version = ver;
    if (rc != RPKV_OK) return "<" + std::to_string(rc) + ">";
    std::string s = Str(v, n);
    EXPECT_EQ(static_cast<char*>(v)[n], '\0');  // the spare NUL byte
    rpkv_free(v);
    return s;
  }
  static std::string Code(int rc) { return "<" + std::to_string(rc) + ">"; }

  static std::string* dir_;
  static kv::e2e::ServerProcess* server_;
  static kv::Status* start_;
  std::string addr_;
  std::string prefix_;
  rpkv* db_ = nullptr;
};

std::string* CApiTest::dir_ = nullptr;
kv::e2e::ServerProcess* CApiTest::server_ = nullptr;
kv::Status* CApiTest::start_ = nullptr;

TEST_F(CApiTest, PutGetDeleteRoundTrip) {
  ASSERT_EQ(Put("a", "alpha"), RPKV_OK) << rpkv_errmsg(db_);
  EXPECT_EQ(Get("a"), "alpha");
  std::string key = Key("a");
  EXPECT_EQ(rpkv_exists(db_, key.data(), key.size()), RPKV_OK);
  ASSERT_EQ(rpkv_delete(db_, key.data(), key.size()), RPKV_OK);

  void* v = Garbage();
  size_t n = 99;
  EXPECT_EQ(rpkv_get(db_, key.data(), key.size(), &v, &n), RPKV_NOT_FOUND);
  EXPECT_EQ(v, nullptr);
  EXPECT_EQ(n, 0u);
  EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("not_found"));
  EXPECT_EQ(rpkv_exists(db_, key.data(), key.size()), RPKV_NOT_FOUND);
  // The handle keeps working after a miss.
  ASSERT_EQ(Put("a", "again"), RPKV_OK);
  EXPECT_EQ(Get("a"), "again");
}

TEST_F(CApiTest, OverwriteReplacesTheValueAndRaisesTheVersion) {
  uint64_t v1 = 0, v2 = 0;
  ASSERT_EQ(Put("k", "one"), RPKV_OK);
  EXPECT_EQ(Get("k", &v1), "one");
  ASSERT_EQ(Put("k", "two"), RPKV_OK);
  EXPECT_EQ(Get("k", &v2), "two");
  EXPECT_GT(v1, 0u);
  EXPECT_GT(v2, v1);
}

TEST_F(CApiTest, BinaryKeysAndValuesWithNulBytes) {
  const std::string key("\0k\0\xff", 4);
  const std::string value("\0\1\2\0\xfe", 5);
  ASSERT_EQ(rpkv_put(db_, key.data(), key.size(), value.data(), value.size()),
            RPKV_OK);
  void* v = nullptr;
  size_t n = 0;
  ASSERT_EQ(rpkv_get(db_, key.data(), key.size(), &v, &n), RPKV_OK);
  EXPECT_EQ(Str(v, n), value);
  rpkv_free(v);
  // A key differing only after a NUL byte is another key.
  const std::string other("\0k\0\xfe", 4);
  EXPECT_EQ(rpkv_exists(db_, other.data(), other.size()), RPKV_NOT_FOUND);
}

TEST_F(CApiTest, EmptyValueIsStoredAndReturnedAsNonNullPointer) {
  std::string key = Key("empty");
  ASSERT_EQ(rpkv_put(db_, key.data(), key.size(), nullptr, 0), RPKV_OK);
  void* v = nullptr;
  size_t n = 99;
  ASSERT_EQ(rpkv_get(db_, key.data(), key.size(), &v, &n), RPKV_OK);
  EXPECT_NE(v, nullptr);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(static_cast<char*>(v)[0], '\0');
  rpkv_free(v);
}

TEST_F(CApiTest, KeyLengthLimits) {
  std::string k1(1, 'x');
  std::string k1024(1024, 'y');
  std::string k1025(1025, 'z');
  EXPECT_EQ(rpkv_put(db_, k1.data(), k1.size(), "v", 1), RPKV_OK);
  EXPECT_EQ(rpkv_put(db_, k1024.data(), k1024.size(), "v", 1), RPKV_OK);
  EXPECT_EQ(rpkv_put(db_, k1025.data(), k1025.size(), "v", 1), RPKV_E_INVAL);
  EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("1024"));
  EXPECT_EQ(rpkv_put(db_, "", 0, "v", 1), RPKV_E_INVAL);
  void* v = Garbage();
  size_t n = 9;
  EXPECT_EQ(rpkv_get(db_, k1025.data(), k1025.size(), &v, &n), RPKV_E_INVAL);
  EXPECT_EQ(v, nullptr);
  EXPECT_EQ(rpkv_exists(db_, k1024.data(), k1024.size()), RPKV_OK);
  EXPECT_EQ(rpkv_delete(db_, k1024.data(), k1024.size()), RPKV_OK);
  EXPECT_EQ(rpkv_delete(db_, k1.data(), k1.size()), RPKV_OK);
}

TEST_F(CApiTest, ValueOverTheKeyspaceLimitIsInvalidAndChangesNothing) {
  uint32_t max = rpkv_max_value_size(db_);
  ASSERT_GT(max, 0u);
  ASSERT_EQ(Put("big", "before"), RPKV_OK);
  std::string at_max(max, 'm');
  std::string over(size_t{max} + 1, 'o');
  EXPECT_EQ(Put("big", over), RPKV_E_INVAL);
  EXPECT_THAT(rpkv_errmsg(db_), HasSubstr(std::to_string(max)));
  EXPECT_EQ(Get("big"), "before");
  ASSERT_EQ(Put("big", at_max), RPKV_OK) << rpkv_errmsg(db_);
  EXPECT_EQ(Get("big"), at_max);
}

TEST_F(CApiTest, NullArgumentsWithAHandleAreInvalidAndHarmless) {
  ASSERT_EQ(Put("n", "kept"), RPKV_OK);
  std::string key = Key("n");
  EXPECT_EQ(rpkv_put(db_, nullptr, 1, "v", 1), RPKV_E_INVAL);
  EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("rpkv_put: key is NULL"));
  EXPECT_EQ(rpkv_put(db_, key.data(), key.size(), nullptr, 3), RPKV_E_INVAL);
  EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("value is NULL"));
  size_t n = 9;
  EXPECT_EQ(rpkv_get(db_, key.data(), key.size(), nullptr, &n), RPKV_E_INVAL);
  EXPECT_EQ(n, 0u);
  void* v = Garbage();
  EXPECT_EQ(rpkv_get(db_, key.data(), key.size(), &v, nullptr), RPKV_E_INVAL);
  EXPECT_EQ(v, nullptr);
  v = Garbage();
  EXPECT_EQ(rpkv_get_versioned(db_, key.data(), key.size(), &v, &n, nullptr),
            RPKV_E_INVAL);
  EXPECT_EQ(v, nullptr);
  EXPECT_EQ(rpkv_exists(db_, nullptr, 1), RPKV_E_INVAL);
  EXPECT_EQ(rpkv_delete(db_, nullptr, 1), RPKV_E_INVAL);
  EXPECT_EQ(rpkv_delete_if_version(db_, nullptr, 1, 1), RPKV_E_INVAL);
  // Nothing changed, and the handle still works.
  EXPECT_EQ(Get("n"), "kept");
  EXPECT_EQ(Put("n", "next"), RPKV_OK);
  EXPECT_EQ(Get("n"), "next");
}

TEST_F(CApiTest, DeleteOfAnAbsentKeyIsOk) {
  std::string key = Key("never");
  EXPECT_EQ(rpkv_delete(db_, key.data(), key.size()), RPKV_OK);
  EXPECT_EQ(rpkv_exists(db_, key.data(), key.size()), RPKV_NOT_FOUND);
}

TEST_F(CApiTest, PutIfAbsentWritesOnceThenFailsTheCondition) {
  std::string key = Key("once");
  uint64_t ver = 99;
  ASSERT_EQ(rpkv_put_if_absent(db_, key.data(), key.size(), "first", 5, &ver),
            RPKV_OK)
      << rpkv_errmsg(db_);
  EXPECT_GT(ver, 0u);
  uint64_t got = 0;
  EXPECT_EQ(Get("once", &got), "first");
  EXPECT_EQ(got, ver);
  EXPECT_EQ(rpkv_put_if_absent(db_, key.data(), key.size(), "second", 6, &ver),
            RPKV_E_CONDITION_FAILED);
  EXPECT_EQ(ver, 0u);
  EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("condition_failed"));
  EXPECT_EQ(Get("once"), "first");
  // Absent again after a delete: the condition holds once more.
  ASSERT_EQ(rpkv_delete(db_, key.data(), key.size()), RPKV_OK);
  EXPECT_EQ(
      rpkv_put_if_absent(db_, key.data(), key.size(), "third", 5, nullptr),
      RPKV_OK);
  EXPECT_EQ(Get("once"), "third");
}

TEST_F(CApiTest, PutIfVersionIsACompareAndSwap) {
  ASSERT_EQ(Put("cas", "v1"), RPKV_OK);
  uint64_t v1 = 0;
  ASSERT_EQ(Get("cas", &v1), "v1");
  std::string key = Key("cas");
  uint64_t v2 = 0;
  ASSERT_EQ(rpkv_put_if_version(db_, key.data(), key.size(), "v2", 2, v1, &v2),
            RPKV_OK)
      << rpkv_errmsg(db_);
  EXPECT_GT(v2, v1);
  uint64_t out = 99;
  // v1 is stale now.
  EXPECT_EQ(rpkv_put_if_version(db_, key.data(), key.size(), "v3", 2, v1, &out),
            RPKV_E_CONDITION_FAILED);
  EXPECT_EQ(out, 0u);
  uint64_t now = 0;
  EXPECT_EQ(Get("cas", &now), "v2");
  EXPECT_EQ(now, v2);
  // The version a write returned is good for the next swap.
  EXPECT_EQ(
      rpkv_put_if_version(db_, key.data(), key.size(), "v3", 2, v2, nullptr),
      RPKV_OK);
  EXPECT_EQ(Get("cas"), "v3");
}

TEST_F(CApiTest, PutIfVersionOnAnAbsentKeyFailsTheCondition) {
  std::string key = Key("ghost");
  EXPECT_EQ(
      rpkv_put_if_version(db_, key.data(), key.size(), "v", 1, 12345, nullptr),
      RPKV_E_CONDITION_FAILED);
  EXPECT_EQ(rpkv_exists(db_, key.data(), key.size()), RPKV_NOT_FOUND);
}

TEST_F(CApiTest, VersionZeroIsInvalid) {
  ASSERT_EQ(Put("zero", "z"), RPKV_OK);
  std::string key = Key("zero");
  uint64_t out = 99;
  EXPECT_EQ(rpkv_put_if_version(db_, key.data(), key.size(), "v", 1, 0, &out),
            RPKV_E_INVAL);
  EXPECT_EQ(out, 0u);
  EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("rpkv_put_if_absent"));
  EXPECT_EQ(rpkv_delete_if_version(db_, key.data(), key.size(), 0),
            RPKV_E_INVAL);
  EXPECT_EQ(Get("zero"), "z");
}

TEST_F(CApiTest, DeleteIfVersionDeletesOnlyTheExpectedVersion) {
  ASSERT_EQ(Put("d", "one"), RPKV_OK);
  uint64_t v1 = 0;
  ASSERT_EQ(Get("d", &v1), "one");
  ASSERT_EQ(Put("d", "two"), RPKV_OK);
  uint64_t v2 = 0;
  ASSERT_EQ(Get("d", &v2), "two");
  std::string key = Key("d");
  EXPECT_EQ(rpkv_delete_if_version(db_, key.data(), key.size(), v1),
            RPKV_E_CONDITION_FAILED);
  EXPECT_EQ(Get("d"), "two");
  EXPECT_EQ(rpkv_delete_if_version(db_, key.data(), key.size(), v2), RPKV_OK)
      << rpkv_errmsg(db_);
  EXPECT_EQ(Get("d"), Code(RPKV_NOT_FOUND));
  // Absent now: no version matches.
  EXPECT_EQ(rpkv_delete_if_version(db_, key.data(), key.size(), v2),
            RPKV_E_CONDITION_FAILED);
}

TEST_F(CApiTest, UnknownKeyspaceIsNotFoundWithTheNameInTheMessage) {
  rpkv* db = Garbage();
  EXPECT_EQ(rpkv_connect(addr_.c_str(), "capi_no_such_keyspace", nullptr, &db),
            RPKV_NOT_FOUND);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("capi_no_such_keyspace"));
}

TEST_F(CApiTest, CreateIfMissingCreatesAnIsolatedKeyspace) {
  rpkv* other = Connect("capi_created", 1);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(rpkv_put(other, "shared-name", 11, "in created", 10), RPKV_OK);
  ASSERT_EQ(rpkv_put(db_, "shared-name", 11, "in default", 10), RPKV_OK);
  void* v = nullptr;
  size_t n = 0;
  ASSERT_EQ(rpkv_get(other, "shared-name", 11, &v, &n), RPKV_OK);
  EXPECT_EQ(Str(v, n), "in created");
  rpkv_free(v);
  rpkv_close(other);
  // Now it exists: no create flag needed.
  other = Connect("capi_created", 0);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(rpkv_exists(other, "shared-name", 11), RPKV_OK);
  rpkv_close(other);
  EXPECT_EQ(rpkv_delete(db_, "shared-name", 11), RPKV_OK);
}

TEST_F(CApiTest, EveryWaitModeWorks) {
  for (int wait : {RPKV_WAIT_DEFAULT, RPKV_WAIT_POLL, RPKV_WAIT_BLOCK,
                   RPKV_WAIT_ADAPTIVE}) {
    rpkv* db = Connect("default", 0, nullptr, wait);
    ASSERT_NE(db, nullptr);
    std::string key = Key("wait" + std::to_string(wait));
    ASSERT_EQ(rpkv_put(db, key.data(), key.size(), "b", 1), RPKV_OK);
    void* v = nullptr;
    size_t n = 0;
    ASSERT_EQ(rpkv_get(db, key.data(), key.size(), &v, &n), RPKV_OK);
    EXPECT_EQ(Str(v, n), "b");
    rpkv_free(v);
    rpkv_close(db);
  }
}

TEST_F(CApiTest, MessagesArePerThreadOnASharedHandle) {
  std::string key = Key("m");
  ASSERT_EQ(rpkv_put(db_, key.data(), 0, "v", 1), RPKV_E_INVAL);
  const char* mine = rpkv_errmsg(db_);
  std::string before = mine;
  std::thread t([&] {
    EXPECT_STREQ(rpkv_errmsg(db_), "");  // nothing failed in this thread
    EXPECT_EQ(rpkv_put(db_, nullptr, 1, "v", 1), RPKV_E_INVAL);
    EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("key is NULL"));
  });
  t.join();
  EXPECT_EQ(rpkv_errmsg(db_), mine);  // same text, same pointer
  EXPECT_EQ(std::string(mine), before);
  // A success does not clear the last failure's message.
  ASSERT_EQ(Put("m", "v"), RPKV_OK);
  EXPECT_EQ(std::string(rpkv_errmsg(db_)), before);
}

TEST_F(CApiTest, OneHandleSharedByThreads) {
  constexpr int kThreads = 4;
  constexpr int kOps = 25;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        std::string key = Key(std::to_string(t) + "/" + std::to_string(i));
        std::string value = "value-" + key;
        if (rpkv_put(db_, key.data(), key.size(), value.data(), value.size()) !=
            RPKV_OK) {
          errors++;
          continue;
        }
        void* v = nullptr;
        size_t n = 0;
        if (rpkv_get(db_, key.data(), key.size(), &v, &n) != RPKV_OK ||
            Str(v, n) != value) {
          errors++;
        }
        rpkv_free(v);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
}

// Its own server: stopping it must not disturb the other tests.
TEST(CApiServerGoneTest, OperationsFailWithUnavailableAndCloseWorks) {
  std::string dir = kv::e2e::MakeTempDir("rpkv_c_api_gone");
  kv::e2e::ServerProcess server;
  kv::Status st = server.Start({"--pool=" + dir + "/pool", "--pool_size=64M"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  rpkv_options o;
  rpkv_options_init(&o);
  o.op_timeout_ms = 3000;
  rpkv* db = nullptr;
  ASSERT_EQ(rpkv_connect(server.address().c_str(), "default", &o, &db), RPKV_OK)
      << rpkv_errmsg(nullptr);
  ASSERT_EQ(rpkv_put(db, "k", 1, "v", 1), RPKV_OK);
  server.Stop();
  int rc = rpkv_put(db, "k", 1, "w", 1);
  EXPECT_TRUE(rc == RPKV_E_UNAVAILABLE || rc == RPKV_E_TIMEDOUT)
      << rc << " " << rpkv_errmsg(db);
  EXPECT_STRNE(rpkv_errmsg(db), "");
  void* v = Garbage();
  size_t n = 9;
  rc = rpkv_get(db, "k", 1, &v, &n);
  EXPECT_LT(rc, 0);
  EXPECT_EQ(v, nullptr);
  rpkv_close(db);  // the server is gone: still returns, frees
  kv::e2e::RemoveTree(dir);
}

// Its own server with a tiny index, so that the keyspace fills up.
TEST(CApiNoSpaceTest, FullKeyspaceIsNoSpaceAndDeletesStillWork) {
  std::string dir = kv::e2e::MakeTempDir("rpkv_c_api_full");
  kv::e2e::ServerProcess server;
  kv::Status st = server.Start(
      {"--pool=" + dir + "/pool", "--pool_size=32M", "--index_capacity=16"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  rpkv* db = nullptr;
  ASSERT_EQ(rpkv_connect(server.address().c_str(), "default", nullptr, &db),
            RPKV_OK)
      << rpkv_errmsg(nullptr);
  int rc = RPKV_OK;
  int stored = 0;
  for (; stored < 2000; ++stored) {
    std::string key = "full-" + std::to_string(stored);
    rc = rpkv_put(db, key.data(), key.size(), key.data(), key.size());
    if (rc != RPKV_OK) break;
  }
  ASSERT_EQ(rc, RPKV_E_NOSPACE) << rpkv_errmsg(db);
  ASSERT_GT(stored, 0);
  EXPECT_THAT(rpkv_errmsg(db), HasSubstr("no_space"));
  // Nothing stored before is lost, the handle works, deletes are taken.
  for (int i = 0; i < stored; ++i) {
    std::string key = "full-" + std::to_string(i);
    void* v = nullptr;
    size_t n = 0;
    ASSERT_EQ(rpkv_get(db, key.data(), key.size(), &v, &n), RPKV_OK) << key;
    EXPECT_EQ(Str(v, n), key);
    rpkv_free(v);
  }
  std::string first = "full-0";
  EXPECT_EQ(rpkv_delete(db, first.data(), first.size()), RPKV_OK)
      << rpkv_errmsg(db);
  EXPECT_EQ(rpkv_exists(db, first.data(), first.size()), RPKV_NOT_FOUND);
  rpkv_close(db);
  server.Stop();
  kv::e2e::RemoveTree(dir);
}

// Expiring keys: rpkv_put_ex, rpkv_ttl, rpkv_expire, rpkv_persist — one
// key expires for real (800 ms), the rest have a minute.
TEST_F(CApiTest, ExpiringKeysReadAbsentAfterTheirTimeToLive) {
  const std::string key = Key("short");
  ASSERT_EQ(rpkv_put_ex(db_, key.data(), key.size(), "v", 1, 800), RPKV_OK)
      << rpkv_errmsg(db_);
  EXPECT_EQ(Get("short"), "v");
  int64_t ms = 0;
  ASSERT_EQ(rpkv_ttl(db_, key.data(), key.size(), &ms), RPKV_OK);
  EXPECT_GT(ms, 0);
  EXPECT_LE(ms, 800);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < end &&
         rpkv_exists(db_, key.data(), key.size()) == RPKV_OK) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(rpkv_exists(db_, key.data(), key.size()), RPKV_NOT_FOUND);
  EXPECT_EQ(Get("short"), Code(RPKV_NOT_FOUND));
  ms = 0;
  EXPECT_EQ(rpkv_ttl(db_, key.data(), key.size(), &ms), RPKV_NOT_FOUND);
  EXPECT_EQ(ms, -2);
  EXPECT_EQ(rpkv_expire(db_, key.data(), key.size(), 1000), RPKV_NOT_FOUND);
  int removed = 7;
  EXPECT_EQ(rpkv_persist(db_, key.data(), key.size(), &removed),
            RPKV_NOT_FOUND);
  EXPECT_EQ(removed, 0);
}

TEST_F(CApiTest, ExpireAndPersistSetAndRemoveAnExpiry) {
  const std::string key = Key("k");
  ASSERT_EQ(Put("k", "value"), RPKV_OK);
  int64_t ms = 0;
  ASSERT_EQ(rpkv_ttl(db_, key.data(), key.size(), &ms), RPKV_OK);
  EXPECT_EQ(ms, -1);
  ASSERT_EQ(rpkv_expire(db_, key.data(), key.size(), 60000), RPKV_OK)
      << rpkv_errmsg(db_);
  ASSERT_EQ(rpkv_ttl(db_, key.data(), key.size(), &ms), RPKV_OK);
  EXPECT_GT(ms, 55000);
  EXPECT_EQ(Get("k"), "value");
  int removed = 0;
  ASSERT_EQ(rpkv_persist(db_, key.data(), key.size(), &removed), RPKV_OK);
  EXPECT_EQ(removed, 1);
  ASSERT_EQ(rpkv_ttl(db_, key.data(), key.size(), &ms), RPKV_OK);
  EXPECT_EQ(ms, -1);
  ASSERT_EQ(rpkv_persist(db_, key.data(), key.size(), &removed), RPKV_OK);
  EXPECT_EQ(removed, 0);
  ASSERT_EQ(rpkv_persist(db_, key.data(), key.size(), nullptr), RPKV_OK);
}

TEST_F(CApiTest, BadTimesToLiveAreInvalidAndChangeNothing) {
  const std::string key = Key("k");
  ASSERT_EQ(Put("k", "value"), RPKV_OK);
  for (int64_t bad :
       {int64_t{0}, int64_t{-1}, int64_t{3153600000001}, INT64_MIN}) {
    EXPECT_EQ(rpkv_put_ex(db_, key.data(), key.size(), "x", 1, bad),
              RPKV_E_INVAL)
        << bad;
    EXPECT_THAT(rpkv_errmsg(db_),
                HasSubstr("time to live must be 1 ms .. 100 years"));
    EXPECT_EQ(rpkv_expire(db_, key.data(), key.size(), bad), RPKV_E_INVAL);
    EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("expire: time to live"));
  }
  EXPECT_EQ(Get("k"), "value");
  int64_t ms = 0;
  ASSERT_EQ(rpkv_ttl(db_, key.data(), key.size(), &ms), RPKV_OK);
  EXPECT_EQ(ms, -1);
  // NULL arguments.
  EXPECT_EQ(rpkv_ttl(db_, key.data(), key.size(), nullptr), RPKV_E_INVAL);
  EXPECT_EQ(rpkv_ttl(nullptr, key.data(), key.size(), &ms), RPKV_E_INVAL);
  EXPECT_EQ(ms, -2);
  EXPECT_EQ(rpkv_expire(db_, nullptr, 1, 1000), RPKV_E_INVAL);
  EXPECT_EQ(rpkv_persist(nullptr, key.data(), key.size(), nullptr),
            RPKV_E_INVAL);
  EXPECT_EQ(rpkv_put_ex(db_, key.data(), key.size(), nullptr, 3, 1000),
            RPKV_E_INVAL);
  EXPECT_EQ(Get("k"), "value");
}

// Its own server, with keyspace "default" protected by an access key.
class CApiAccessKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = kv::e2e::MakeTempDir("rpkv_c_api_keys");
    std::string keys = dir_ + "/access_keys";
    {
      std::ofstream f(keys);
      f << "default s3cret-key-0123456\n";
    }
    ASSERT_EQ(chmod(keys.c_str(), 0600), 0);
    kv::Status st = server_.Start({"--pool=" + dir_ + "/pool",
                                   "--pool_size=64M", "--access_keys=" + keys});
    ASSERT_TRUE(st.ok()) << st.ToString();
    addr_ = server_.address();
    rpkv_options_init(&opts_);
  }
  void TearDown() override {
    if (server_.running()) server_.Stop();
    kv::e2e::RemoveTree(dir_);
  }

  std::string dir_;
  kv::e2e::ServerProcess server_;
  std::string addr_;
  rpkv_options opts_;
};

TEST_F(CApiAccessKeyTest, MissingKeyIsPermissionDenied) {
  rpkv* db = Garbage();
  EXPECT_EQ(rpkv_connect(addr_.c_str(), "default", &opts_, &db),
            RPKV_E_PERMISSION)
      << rpkv_errmsg(nullptr);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("access key"));
}

// A wrong key travels in HELLO; the refused WELCOME is reaped together
// with the server's disconnect and must still be reported as a refusal.
TEST_F(CApiAccessKeyTest, WrongKeyIsPermissionDenied) {
  opts_.access_key = "wrong";
  rpkv* db = Garbage();
  EXPECT_EQ(rpkv_connect(addr_.c_str(), "default", &opts_, &db),
            RPKV_E_PERMISSION)
      << rpkv_errmsg(nullptr);
  EXPECT_EQ(db, nullptr);
  EXPECT_THAT(rpkv_errmsg(nullptr), HasSubstr("access key"));
}

TEST_F(CApiAccessKeyTest, RightKeyIsAdmitted) {
  opts_.access_key = "s3cret-key-0123456";
  rpkv* db = nullptr;
  ASSERT_EQ(rpkv_connect(addr_.c_str(), "default", &opts_, &db), RPKV_OK)
      << rpkv_errmsg(nullptr);
  EXPECT_EQ(rpkv_put(db, "k", 1, "v", 1), RPKV_OK) << rpkv_errmsg(db);
  EXPECT_EQ(rpkv_exists(db, "k", 1), RPKV_OK);
  rpkv_close(db);
}

// rpkv_scan: pages from cursor 0 to 0 give every key of the prefix
// (collected into a set: a page's order is the index's), argument errors
// reset *next_cursor.
struct ScanSink {
  std::vector<std::string> keys;
  std::vector<std::string> values;
};
void CollectKey(void* arg, const void* key, size_t key_len, const void* value,
                size_t value_len) {
  auto* sink = static_cast<ScanSink*>(arg);
  sink->keys.push_back(Str(key, key_len));
  sink->values.push_back(Str(value, value_len));
}

TEST_F(CApiTest, ScanPagesThroughEveryKeyOfAPrefix) {
  const std::string p = prefix_ + ":";
  for (int i = 0; i < 300; i++) {
    const std::string k = p + std::to_string(i), v = "v" + std::to_string(i);
    ASSERT_EQ(rpkv_put(db_, k.data(), k.size(), v.data(), v.size()), RPKV_OK);
  }
  ScanSink sink;
  uint64_t cursor = 0;
  int pages = 0;
  do {
    ASSERT_EQ(rpkv_scan(db_, cursor, p.data(), p.size(), 50, CollectKey, &sink,
                        &cursor),
              RPKV_OK)
        << rpkv_errmsg(db_);
    ASSERT_LT(++pages, 100000);
  } while (cursor != 0);
  std::set<std::string> keys(sink.keys.begin(), sink.keys.end());
  EXPECT_EQ(keys.size(), 300u);
  EXPECT_EQ(keys.count(p + "299"), 1u);
  for (size_t i = 0; i < sink.keys.size(); i++) {
    EXPECT_EQ("v" + sink.keys[i].substr(p.size()), sink.values[i]);
  }

  uint64_t next = 7;
  EXPECT_EQ(rpkv_scan(db_, 0, nullptr, 1, 0, CollectKey, &sink, &next),
            RPKV_E_INVAL);
  EXPECT_EQ(next, 0u);
  next = 7;
  EXPECT_EQ(rpkv_scan(db_, 0, nullptr, 0, 0, nullptr, &sink, &next),
            RPKV_E_INVAL);
  EXPECT_EQ(next, 0u);
  EXPECT_EQ(rpkv_scan(nullptr, 0, nullptr, 0, 0, CollectKey, &sink, &next),
            RPKV_E_INVAL);
  EXPECT_EQ(rpkv_scan(db_, 0, nullptr, 0, 0, CollectKey, &sink, nullptr),
            RPKV_E_INVAL);
  next = 7;
  EXPECT_EQ(rpkv_scan(db_, uint64_t{1} << 60, nullptr, 0, 0, CollectKey, &sink,
                      &next),
            RPKV_E_INVAL);
  EXPECT_EQ(next, 0u);
  EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("not a cursor of this keyspace"));
}

TEST_F(CApiTest, IncrbyAndAppendAreAtomicReadModifyWrites) {
  const std::string k = prefix_ + ":n";
  int64_t v = 99;
  ASSERT_EQ(rpkv_incrby(db_, k.data(), k.size(), 5, &v), RPKV_OK)
      << rpkv_errmsg(db_);
  EXPECT_EQ(v, 5);
  ASSERT_EQ(rpkv_incrby(db_, k.data(), k.size(), -7, &v), RPKV_OK);
  EXPECT_EQ(v, -2);
  EXPECT_EQ(rpkv_incrby(db_, k.data(), k.size(), 1, nullptr), RPKV_OK);
  const std::string t = prefix_ + ":text";
  ASSERT_EQ(rpkv_put(db_, t.data(), t.size(), "abc", 3), RPKV_OK);
  v = 99;
  EXPECT_EQ(rpkv_incrby(db_, t.data(), t.size(), 1, &v), RPKV_E_INVAL);
  EXPECT_EQ(v, 0);
  EXPECT_THAT(rpkv_errmsg(db_), HasSubstr("not an integer"));
  size_t len = 99;
  ASSERT_EQ(rpkv_append(db_, t.data(), t.size(), "de", 2, &len), RPKV_OK);
  EXPECT_EQ(len, 5u);
  ASSERT_EQ(rpkv_append(db_, t.data(), t.size(), nullptr, 0, &len), RPKV_OK);
  EXPECT_EQ(len, 5u);
  len = 99;
  EXPECT_EQ(rpkv_append(db_, t.data(), t.size(), nullptr, 1, &len),
            RPKV_E_INVAL);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(rpkv_incrby(nullptr, "k", 1, 1, &v), RPKV_E_INVAL);
  EXPECT_EQ(rpkv_append(db_, nullptr, 1, "x", 1, &len), RPKV_E_INVAL);
  void* val = nullptr;
  size_t n = 0;
  ASSERT_EQ(rpkv_get(db_, t.data(), t.size(), &val, &n), RPKV_OK);
  EXPECT_EQ(Str(val, n), "abcde");
  rpkv_free(val);
}

}  // namespace
