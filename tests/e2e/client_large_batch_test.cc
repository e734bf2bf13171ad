// Many large values in one batch: 64 gets of values near the keyspace's
// 1 MiB limit need several times the client's read buffer, so the gets
// wait for room and restart; every one must come back whole and right.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

class ClientLargeBatchTest : public ClientTest {
 protected:
  std::vector<std::string> ServerFlags() override {
    return {"--pool=" + dir_ + "/pool", "--pool_size=512M", "--segment_size=4M",
            "--allow_create"};
  }
};

std::string ValueOf(int i, size_t size) {
  std::string v(size, static_cast<char>('a' + i % 26));
  for (size_t j = 0; j < size; j += 997) {
    v[j] = static_cast<char>(i * 31 + j / 997);
  }
  return v;
}

TEST_F(ClientLargeBatchTest, SixtyFourGetsOfValuesNearTheLimitAreAllRight) {
  auto c = Open();
  const uint32_t max = c->max_value_size();
  ASSERT_GE(max, 1u << 20);
  constexpr int kOps = 64;
  std::vector<std::string> values;
  for (int i = 0; i < kOps; i++) {
    values.push_back(ValueOf(i, max - static_cast<size_t>(i) * 129));
    ASSERT_TRUE(c->Put("big" + std::to_string(i), values[i]).ok()) << i;
  }
  // From a second client too (nothing cached: every get is cold).
  auto cold = Open();
  for (Client* reader : {c.get(), cold.get()}) {
    Batch b;
    for (int i = 0; i < kOps; i++) {
      b.Get("big" + std::to_string(i));
      if (i % 8 == 0) b.Get("missing" + std::to_string(i));
    }
    ASSERT_TRUE(reader->Execute(&b).ok());
    size_t r = 0;
    for (int i = 0; i < kOps; i++, r++) {
      const Batch::Result& got = b.result(r);
      ASSERT_TRUE(got.status.ok()) << i << ": " << got.status.ToString();
      EXPECT_EQ(got.value.size(), values[i].size()) << i;
      EXPECT_TRUE(got.value == values[i]) << i;
      if (i % 8 == 0) EXPECT_TRUE(b.result(++r).status.IsNotFound()) << i;
    }
  }
}

}  // namespace
}  // namespace kv::e2e
