// Protection domain of the tcp provider; see tcp_pd.h.
#include "tcp/tcp_pd.h"

#include <cerrno>

#include "tcp/socket_util.h"
#include "tcp/tcp_cm_channel.h"
#include "tcp/tcp_cm_id.h"
#include "tcp/tcp_conn.h"
#include "tcp/tcp_cq.h"
#include "tcp/tcp_listener.h"
#include "tcp/tcp_qp.h"
#include "tcp/tcp_srq.h"

namespace rpma::prov::tcp {

int TcpPd::Create(const DeviceCaps& caps, std::unique_ptr<Pd>* out) {
  *out = std::unique_ptr<TcpPd>(new TcpPd(caps));
  return 0;
}

TcpPd::~TcpPd() { engine_.reset(); }

int TcpPd::GetEngine(ProgressEngine** out) {
  std::lock_guard<std::mutex> lock(engine_mu_);
  if (engine_ == nullptr) {
    int rc = ProgressEngine::Create(&engine_);
    if (rc != 0) return rc;
  }
  *out = engine_.get();
  return 0;
}

int64_t TcpPd::HeldForPeers() {
  std::lock_guard<std::mutex> lock(engine_mu_);
  return engine_ != nullptr ? engine_->held() : 0;
}

bool TcpPd::has_engine() {
  std::lock_guard<std::mutex> lock(engine_mu_);
  return engine_ != nullptr;
}

int TcpPd::RegMrForQp(Qp* qp, void* addr, size_t length, int access,
                      std::unique_ptr<Mr>* out) {
  auto* tqp = dynamic_cast<TcpQp*>(qp);
  if (tqp == nullptr || addr == nullptr || length == 0) return -EINVAL;
  if ((access & ~kAccessAll) != 0) return -EINVAL;
  if (!tqp->conn()->UsesTable(&mrs_)) return -EINVAL;  // another Pd's QP
  *out = std::make_unique<TcpMr>(&mrs_, addr, length, access, tqp->serial());
  return 0;
}

int TcpPd::RegMr(void* addr, size_t length, int access,
                 std::unique_ptr<Mr>* out) {
  if (addr == nullptr || length == 0) return -EINVAL;
  if ((access & ~kAccessAll) != 0) return -EINVAL;
  *out = std::make_unique<TcpMr>(&mrs_, addr, length, access);
  return 0;
}

int TcpPd::CreateCompletionChannel(std::unique_ptr<CompletionChannel>* out) {
  return TcpCompletionChannel::Create(out);
}

int TcpPd::CreateCq(int cqe, CompletionChannel* channel,
                    std::unique_ptr<Cq>* out) {
  auto* ch = dynamic_cast<TcpCompletionChannel*>(channel);
  if (cqe <= 0 || (channel != nullptr && ch == nullptr)) return -EINVAL;
  *out = std::make_unique<TcpCq>(cqe, ch);
  return 0;
}

int TcpPd::CreateSrq(uint32_t max_wr, std::unique_ptr<Srq>* out) {
  if (max_wr == 0) return -EINVAL;
  ProgressEngine* engine = nullptr;
  int rc = GetEngine(&engine);
  if (rc != 0) return rc;
  *out = std::make_unique<TcpSrq>(max_wr, engine);
  return 0;
}

int TcpPd::CreateCmChannel(std::unique_ptr<CmChannel>* out) {
  return TcpCmChannel::Create(out);
}

int TcpPd::Listen(const char* addr, const char* port, CmChannel* channel,
                  std::unique_ptr<Listener>* out) {
  ProgressEngine* engine = nullptr;
  int rc = GetEngine(&engine);
  if (rc != 0) return rc;
  return TcpListener::Create(engine, &mrs_, caps_, addr, port, channel, out);
}

int TcpPd::CreateActiveId(const char* addr, const char* port, int timeout_ms,
                          std::unique_ptr<CmId>* out) {
  if (addr == nullptr || port == nullptr) return -EINVAL;
  SockAddr sa;
  int rc = Resolve(addr, port, false, &sa);
  if (rc != 0) return rc;
  ProgressEngine* engine = nullptr;
  rc = GetEngine(&engine);
  if (rc != 0) return rc;
  // Nothing on the wire until Connect().
  auto conn = std::make_shared<TcpConn>(engine, &mrs_, caps_);
  conn->SetPeer(sa, timeout_ms);
  auto id = std::make_unique<TcpCmId>(conn);
  conn->BindId(id.get());
  *out = std::move(id);
  return 0;
}

}  // namespace rpma::prov::tcp
