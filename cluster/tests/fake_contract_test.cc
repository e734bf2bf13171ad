// The Etcd contract against FakeEtcd (label unit).
#include "etcd_contract_kv_tests.h"
#include "etcd_contract_watch_tests.h"
#include "kv/cluster/fake_etcd.h"

namespace kv::cluster::testing {
namespace {

class FakeEnv {
 public:
  static std::string SkipReason() { return ""; }
  Status SetUp() { return Status::Ok(); }
  Etcd& etcd() { return fake_; }
  void AdvanceTime(milliseconds by) { fake_.AdvanceClock(by); }
  Status BreakWatchStreams() {
    fake_.BreakWatchStreams();
    return Status::Ok();
  }

 private:
  FakeEtcd fake_;
};

INSTANTIATE_TYPED_TEST_SUITE_P(Fake, EtcdKvContractTest, FakeEnv);
INSTANTIATE_TYPED_TEST_SUITE_P(Fake, EtcdWatchContractTest, FakeEnv);

}  // namespace
}  // namespace kv::cluster::testing
