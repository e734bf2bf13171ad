// CM event channel of the tcp provider.
//
// The queue itself (CmQueue) is shared: connections keep a shared_ptr to
// the queue their id's events go to, so a connection never holds a
// dangling pointer when an application destroys a channel in an order the
// interface does not promise. The events sit in an EventQueue
// (event_queue.h), which keeps the fd readable exactly while one is
// pending.
#ifndef RPMA_TCP_TCP_CM_CHANNEL_H_
#define RPMA_TCP_TCP_CM_CHANNEL_H_

#include <deque>
#include <memory>

#include "provider/provider.h"
#include "tcp/event_queue.h"

namespace rpma::prov::tcp {

class CmQueue {
 public:
  static int Create(std::shared_ptr<CmQueue>* out);
  int fd() const { return events_->fd(); }

  // Queues ev; if the queue is closed, returns false and leaves ev intact.
  bool Push(CmEvent* ev) { return events_->Push(ev); }
  // CmChannel::GetEvent: -ENODATA (not -EAGAIN) when the fd is
  // non-blocking and nothing is pending, as rdma_get_cm_event.
  int Get(CmEvent* ev);
  // As Get, never blocking, whatever the fd's flags (-ENODATA).
  int TryGet(CmEvent* ev);
  // Drops the queued events of `id`.
  void DropFor(CmId* id);
  // Moves the queued events of `id` to `to` (rdma_migrate_id).
  void MoveTo(CmId* id, CmQueue* to);
  // Refuses further events; returns the queued ones (destroyed by the
  // caller outside any lock: they may own CmIds).
  std::deque<CmEvent> Close() { return events_->Close(); }

 private:
  CmQueue() = default;
  std::unique_ptr<EventQueue<CmEvent>> events_;
};

class TcpCmChannel : public CmChannel {
 public:
  static int Create(std::unique_ptr<CmChannel>* out);
  ~TcpCmChannel() override;
  int fd() const override { return queue_->fd(); }
  int GetEvent(CmEvent* event) override { return queue_->Get(event); }
  int TryGetEvent(CmEvent* event) override { return queue_->TryGet(event); }
  const std::shared_ptr<CmQueue>& queue() const { return queue_; }

 private:
  std::shared_ptr<CmQueue> queue_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_CM_CHANNEL_H_
