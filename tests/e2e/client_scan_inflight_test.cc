// Scan with a small send queue: a client with max_inflight 1 has room for
// fewer reads than a scan batch. Before the fix the scan posted 32 reads,
// the post failed midway and the reads already posted completed later as
// tags the engine took for operations.
#include <map>
#include <string>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

using ClientScanInflightTest = ClientTest;

TEST_F(ClientScanInflightTest,
       ScanWithOneInFlightSeesEveryKeyAndLeavesNoReads) {
  ClientOptions o = Options();
  o.max_inflight = 1;
  auto c = Open(o);
  ASSERT_NE(c, nullptr);
  std::map<std::string, std::string> want;
  for (int i = 0; i < 150; i++) {
    const std::string k = "scan" + std::to_string(i);
    want[k] = "value" + std::to_string(i * 7);
    ASSERT_TRUE(c->Put(k, want[k]).ok()) << k;
  }
  std::map<std::string, std::string> got;
  Status st = c->Scan("scan", 0, [&](std::string_view k, std::string_view v) {
    got[std::string(k)] = std::string(v);
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, want);
  // The connection is intact: no read of the scan completes into a get.
  for (int i = 0; i < 20; i++) {
    const std::string k = "scan" + std::to_string(i);
    std::string v;
    ASSERT_TRUE(c->Get(k, &v).ok()) << k;
    EXPECT_EQ(v, want[k]);
  }
  ASSERT_TRUE(c->Put("after", "scan").ok());
}

}  // namespace
}  // namespace kv::e2e
