// A recording, failure-injecting provider for seam tests of the semantic
// layer: every object wraps the tcp provider's (so connections really
// work), and every call is
//   - recorded in order ("CreateQp", "Migrate", "~Cq", "RegMr 0x3", ...),
//   - checked against the ordering rules of provider.h that verbs enforces
//     and tcp forgives (a CmId destroyed after the channel it is on, a CQ
//     destroyed under a live QP, CM events not acked before a CQ goes):
//     breaches are recorded as "VIOLATION ...",
//   - optionally failed: Fail("RegMr", -EIO, 2) makes the second RegMr
//     return -EIO without reaching the tcp provider.
// The device it makes can claim any DeviceCaps and an iWARP transport,
// which the tcp device alone cannot combine with a recording.
//
// Thread-safety: the log and the failure table are locked; the wrappers
// are called by the semantic layer only (the tcp engine never calls back).
#ifndef RPMA_TESTS_API_FAKE_PROVIDER_H_
#define RPMA_TESTS_API_FAKE_PROVIDER_H_

#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "provider/provider.h"

namespace rpma_test {

class FakeCmChannel;
class FakeCmId;
class FakeCq;

class FakeDevice : public rpma::prov::Device {
 public:
  // Wraps the tcp device for addr that serves the flush / atomic write /
  // iWARP capabilities of `caps` (whatever RPMA_TCP_CAPS says); `caps` is
  // what this device claims. Owned by the device registry, so
  // rpma_peer_new(context()) finds it; never freed (as every Device).
  static FakeDevice* Create(const char* addr, rpma::prov::DeviceCaps caps);

  struct ibv_context* context() override {
    return &ctx_;
  }
  rpma::prov::DeviceCaps caps() const override { return caps_; }
  int AllocPd(std::unique_ptr<rpma::prov::Pd>* out) override;
  const char* provider_name() const override { return "fake"; }

  // --- Recording -------------------------------------------------------
  void Record(const std::string& what);
  std::vector<std::string> log() const;
  void ClearLog();
  // Log entries starting with `prefix`.
  std::vector<std::string> Matching(const std::string& prefix) const;
  // Index of the first entry starting with `prefix` at or after `from`;
  // -1 if none.
  int Find(const std::string& prefix, int from = 0) const;

  // --- Failure injection ----------------------------------------------
  // The nth (1-based, counted from now) call of `op` returns err.
  void Fail(const std::string& op, int err, int nth = 1);
  // 0, or the error to inject into this call of op (counts the call).
  int Inject(const std::string& op);

  // --- Contract bookkeeping (wrappers call these) ------------------------
  std::mutex& mu() { return mu_; }
  std::unordered_map<const rpma::prov::CmId*, FakeCmId*> ids;  // inner->fake
  std::unordered_map<const rpma::prov::Cq*, FakeCq*> cqs;      // inner->fake
  std::unordered_set<FakeCmId*> live_ids;

 private:
  FakeDevice(rpma::prov::Device* inner, rpma::prov::DeviceCaps caps);
  rpma::prov::Device* const inner_;
  const rpma::prov::DeviceCaps caps_;
  struct ibv_device dev_;
  struct ibv_context ctx_;
  mutable std::mutex mu_;
  mutable std::mutex log_mu_;
  std::vector<std::string> log_;
  std::map<std::string, std::vector<int>> fail_;  // op -> per-call errors
};

}  // namespace rpma_test

#endif  // RPMA_TESTS_API_FAKE_PROVIDER_H_
