// CM event channel of the tcp provider.
//
// The queue itself (CmQueue) is shared: connections keep a shared_ptr to
// the queue their id's events go to, so a connection never holds a
// dangling pointer when an application destroys a channel in an order the
// interface does not promise. The eventfd counter always equals the number
// of queued events (see TcpCompletionChannel for the same scheme).
#ifndef RPMA_TCP_TCP_CM_CHANNEL_H_
#define RPMA_TCP_TCP_CM_CHANNEL_H_

#include <deque>
#include <memory>
#include <mutex>

#include "provider/provider.h"

namespace rpma::prov::tcp {

class CmQueue {
 public:
  static int Create(std::shared_ptr<CmQueue>* out);
  ~CmQueue();
  int fd() const { return fd_; }

  // Queues ev; if the queue is closed, returns false and leaves ev intact.
  bool Push(CmEvent* ev);
  int Get(CmEvent* ev);
  // Drops the queued events of `id`.
  void DropFor(CmId* id);
  // Moves the queued events of `id` to `to` (rdma_migrate_id).
  void MoveTo(CmId* id, CmQueue* to);
  // Refuses further events; returns the queued ones (destroyed by the
  // caller outside any lock: they may own CmIds).
  std::deque<CmEvent> Close();

 private:
  CmQueue() = default;
  void TakeCountLocked(size_t n);
  int fd_ = -1;
  std::mutex mu_;
  std::deque<CmEvent> events_;
  bool closed_ = false;
};

class TcpCmChannel : public CmChannel {
 public:
  static int Create(std::unique_ptr<CmChannel>* out);
  ~TcpCmChannel() override;
  int fd() const override { return queue_->fd(); }
  int GetEvent(CmEvent* event) override { return queue_->Get(event); }
  const std::shared_ptr<CmQueue>& queue() const { return queue_; }

 private:
  std::shared_ptr<CmQueue> queue_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_CM_CHANNEL_H_
