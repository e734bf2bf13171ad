// rpma_peer_delete with objects still alive: librpma's ibv_dealloc_pd
// fails (EBUSY) -> RPMA_E_PROVIDER, the peer is freed and NULLed anyway,
// and the protection domain stays alive under its objects (leaked).
#include <gtest/gtest.h>

#include "api_test_util.h"
#include "librpma.h"

// That protection domain is leaked on purpose; tell LeakSanitizer.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:rpma_peer_new\n";
}

namespace {

class PeerTest : public rpma_test::PeerFixture {};

TEST_F(PeerTest, DeleteWithLiveRegionFailsButNullsThePointer) {
  static char buf[64];
  struct rpma_mr_local* mr = nullptr;
  ASSERT_EQ(rpma_mr_reg(peer_, buf, sizeof(buf), RPMA_MR_USAGE_READ_SRC, &mr),
            0);
  EXPECT_EQ(rpma_peer_delete(&peer_), RPMA_E_PROVIDER);
  EXPECT_EQ(peer_, nullptr);
  // The region is still valid and can be released.
  void* ptr = nullptr;
  EXPECT_EQ(rpma_mr_get_ptr(mr, &ptr), 0);
  EXPECT_EQ(ptr, buf);
  EXPECT_EQ(rpma_mr_dereg(&mr), 0);
}

}  // namespace
