// Shared receive queue; see tcp_srq.h.
#include "tcp/tcp_srq.h"

#include <cerrno>

#include "tcp/progress_engine.h"

namespace rpma::prov::tcp {

TcpSrq::TcpSrq(uint32_t max_wr, ProgressEngine* engine)
    : max_wr_(max_wr), engine_(engine) {}

int TcpSrq::PostRecv(const RecvWr& wr) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (rq_.size() >= max_wr_) return -ENOMEM;
    rq_.push_back(wr);
  }
  // A connection may be waiting for a receive (RNR): let it retry.
  engine_->KickIfWaiting();
  return 0;
}

bool TcpSrq::Take(RecvWr* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (rq_.empty()) return false;
  *out = rq_.front();
  rq_.pop_front();
  return true;
}

bool TcpSrq::HasAny() {
  std::lock_guard<std::mutex> lock(mu_);
  return !rq_.empty();
}

void TcpSrq::Untake(const RecvWr& wr) {
  std::lock_guard<std::mutex> lock(mu_);
  rq_.push_front(wr);
}

}  // namespace rpma::prov::tcp
