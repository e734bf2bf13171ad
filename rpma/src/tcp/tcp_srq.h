// Shared receive queue of the tcp provider: a bounded FIFO of posted
// receives that several QPs of one Pd consume from.
//
// A posted buffer belongs to the provider from PostRecv until its
// completion is polled; the engine writes the incoming payload straight
// into it.
#ifndef RPMA_TCP_TCP_SRQ_H_
#define RPMA_TCP_TCP_SRQ_H_

#include <deque>
#include <mutex>

#include "provider/provider.h"

namespace rpma::prov::tcp {

class ProgressEngine;

class TcpSrq : public Srq {
 public:
  TcpSrq(uint32_t max_wr, ProgressEngine* engine);
  int PostRecv(const RecvWr& wr) override;  // -ENOMEM when full

  // Takes the oldest receive; false if none is posted.
  bool Take(RecvWr* out);
  bool HasAny();
  // Puts a taken receive back at the front (an aborted delivery).
  void Untake(const RecvWr& wr);

 private:
  const uint32_t max_wr_;
  ProgressEngine* const engine_;
  std::mutex mu_;
  std::deque<RecvWr> rq_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_SRQ_H_
