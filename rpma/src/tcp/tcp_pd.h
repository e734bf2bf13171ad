// Protection domain of the tcp provider. It owns the rkey table and the
// progress engine that serves every listener and connection created from
// it. The engine (one thread) is started on first need (a listener, an
// outgoing connection or an SRQ), so a Pd that only holds registrations
// and connections moved into it (rpma_conn_req_set_peer; those stay on
// their listener's engine) costs no thread.
//
// Destruction: the interface guarantees every object made here dies
// before the Pd; the engine thread is joined first (members are destroyed
// in reverse order: engine_ before mrs_), dropping connections still in
// their handshake. A connection moved into another Pd keeps using this
// Pd's engine: the semantic layer keeps this Pd alive meanwhile.
#ifndef RPMA_TCP_TCP_PD_H_
#define RPMA_TCP_TCP_PD_H_

#include <memory>
#include <mutex>

#include "provider/provider.h"
#include "tcp/progress_engine.h"
#include "tcp/tcp_mr.h"

namespace rpma::prov::tcp {

class TcpPd : public Pd {
 public:
  // `caps`: what the device serves as a target (tcp_target.h).
  static int Create(const DeviceCaps& caps, std::unique_ptr<Pd>* out);
  ~TcpPd() override;

  int RegMr(void* addr, size_t length, int access,
            std::unique_ptr<Mr>* out) override;
  int RegMrForQp(Qp* qp, void* addr, size_t length, int access,
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
  int64_t HeldForPeers();
  // Whether the engine thread was started (tests).
  bool has_engine();
  MrTable* mrs() { return &mrs_; }

 private:
  explicit TcpPd(const DeviceCaps& caps) : caps_(caps) {}
  // Starts the engine on first use; 0 or a negative errno.
  int GetEngine(ProgressEngine** out);

  const DeviceCaps caps_;
  MrTable mrs_;
  std::mutex engine_mu_;
  std::unique_ptr<ProgressEngine> engine_;  // guarded by engine_mu_ until set
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_PD_H_
