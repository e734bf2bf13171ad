// The Etcd contract against EtcdHttp and a real etcd started for each test
// (label integration; skipped only when the etcd binary is missing).
#include <thread>

#include "etcd_contract_kv_tests.h"
#include "etcd_contract_watch_tests.h"
#include "etcd_process.h"
#include "kv/cluster/etcd_http.h"

namespace kv::cluster::testing {
namespace {

class RealEnv {
 public:
  static std::string SkipReason() { return EtcdBinaryMissing(); }
  Status SetUp() {
    KV_RETURN_IF_ERROR(process_.Start());
    Result<std::unique_ptr<EtcdHttp>> e = EtcdHttp::Open(process_.url());
    if (!e.ok()) return e.status();
    etcd_ = std::move(e.value());
    return Status::Ok();
  }
  Etcd& etcd() { return *etcd_; }
  void AdvanceTime(milliseconds by) { std::this_thread::sleep_for(by); }
  // A restart on the same data dir and ports: every stream breaks.
  Status BreakWatchStreams() {
    process_.Stop();
    return process_.Start();
  }

 private:
  EtcdProcess process_;
  std::unique_ptr<EtcdHttp> etcd_;  // destroyed before the process
};

INSTANTIATE_TYPED_TEST_SUITE_P(Real, EtcdKvContractTest, RealEnv);
INSTANTIATE_TYPED_TEST_SUITE_P(Real, EtcdWatchContractTest, RealEnv);

}  // namespace
}  // namespace kv::cluster::testing
