// Helpers shared by the store tests: temporary directories, small pools.
#ifndef KV_STORE_TESTS_TEST_UTIL_H_
#define KV_STORE_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kv/index_format.h"
#include "kv/store/mapping.h"
#include "kv/store/options.h"

namespace kv::store::testing {

// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* t = getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/rpkv-store-XXXXXX";
    char* p = mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Makes every index growth of `ks` fail at its commit point, as the
// catalog write of a full device would: the tests of the paths a full
// neighbourhood takes (the index would otherwise grow out of it).
inline void RefuseIndexGrowth(Keyspace* ks) {
  ks->SetGrowthSink([](uint64_t, uint64_t) {
    return Status::NoSpace("index growth refused by the test");
  });
}

// Options for a small keyspace with small segments (segments fill quickly).
inline KeyspaceOptions SmallKeyspace(uint64_t log_size = 256 * 1024) {
  KeyspaceOptions o;
  o.index_capacity = 1024;
  o.segment_size = 16 * 1024;
  o.log_size = log_size;
  o.max_value_size = 8 * 1024;
  return o;
}

// A tiny keyspace for crash tests: 16 buckets (probing and full buckets
// happen), 8 segments of 8 KiB (sealing, cleaning and reuse happen).
inline KeyspaceOptions TinyKeyspace() {
  KeyspaceOptions o;
  o.index_capacity = 64;
  o.segment_size = 8 * 1024;
  o.log_size = 64 * 1024;
  o.max_value_size = 1024;
  return o;
}

// Freed segments are reused at once.
inline PoolOptions NoGrace() {
  PoolOptions o;
  o.grace_period = std::chrono::milliseconds(0);
  return o;
}

// Heap bytes that are copied into *out when the mapping is destroyed, i.e.
// when the Pool owning it closes: the image a clean close leaves.
class CapturingMapping : public Mapping {
 public:
  CapturingMapping(size_t size, std::vector<uint8_t>* out)
      : inner_(MemoryMapping::Zeroed(size, nullptr)), out_(out) {}
  ~CapturingMapping() override {
    out_->assign(inner_->base(), inner_->base() + inner_->size());
  }
  uint8_t* base() override { return inner_->base(); }
  size_t size() const override { return inner_->size(); }
  Persister* persister() override { return inner_->persister(); }
  std::string granularity() const override { return "memory"; }

 private:
  std::unique_ptr<MemoryMapping> inner_;
  std::vector<uint8_t>* out_;
};

// `n` distinct keys "<prefix><i>" whose home bucket is `home` in an index
// of `buckets` buckets.
inline std::vector<std::string> KeysWithHome(uint64_t home, size_t n,
                                             uint64_t buckets = 16,
                                             const std::string& prefix = "k") {
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < n; i++) {
    std::string k = prefix + std::to_string(i);
    if (index_format::HomeBucket(index_format::HashKey(k), buckets) == home) {
      keys.push_back(k);
    }
  }
  return keys;
}

}  // namespace kv::store::testing

#endif  // KV_STORE_TESTS_TEST_UTIL_H_
