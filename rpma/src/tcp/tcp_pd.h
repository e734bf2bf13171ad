// Protection domain of the tcp provider. It owns the rkey table and the
// progress engine (one per peer) that serves every listener and
// connection created from it.
//
// Destruction: the interface guarantees every object made here dies
// before the Pd; the engine thread is joined first (members are destroyed
// in reverse order: engine_ before mrs_), dropping connections still in
// their handshake.
#ifndef RPMA_TCP_TCP_PD_H_
#define RPMA_TCP_TCP_PD_H_

#include <memory>

#include "provider/provider.h"
#include "tcp/engine.h"
#include "tcp/tcp_mr.h"

namespace rpma::prov::tcp {

class TcpPd : public Pd {
 public:
  // `caps`: what the device serves as a target (tcp_target.h).
  static int Create(const DeviceCaps& caps, std::unique_ptr<Pd>* out);
  ~TcpPd() override;

  int RegMr(void* addr, size_t length, int access,
            std::unique_ptr<Mr>* out) override;
  int CreateCompletionChannel(std::unique_ptr<CompletionChannel>* out) override;
  int CreateCq(int cqe, CompletionChannel* channel,
               std::unique_ptr<Cq>* out) override;
  int CreateSrq(uint32_t max_wr, std::unique_ptr<Srq>* out) override;
  int CreateCmChannel(std::unique_ptr<CmChannel>* out) override;
  int Listen(const char* addr, const char* port, CmChannel* channel,
             std::unique_ptr<Listener>* out) override;
  int CreateActiveId(const char* addr, const char* port, int timeout_ms,
                     std::unique_ptr<CmId>* out) override;

  // Bytes the Pd's connections hold for their peers now (RNR stashes and
  // queued responses; bounded by Limits::peer_hold_bytes). For tests.
  int64_t HeldForPeers() const { return engine_->held(); }

 private:
  explicit TcpPd(const DeviceCaps& caps) : caps_(caps) {}
  const DeviceCaps caps_;
  MrTable mrs_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_PD_H_
