// Completion queue and completion channel of the tcp provider.
//
// Completions are pushed by whichever thread reads the socket (the engine
// thread or an application thread making progress, progress_group.h;
// target side: receives; initiator side: responses) and by posting
// threads (flushed WRs), polled by the application. A channel's events sit
// in an EventQueue (event_queue.h). The channel's fd is its
// ProgressGroup's epoll fd: readable while an event is pending or one of
// its connections' sockets is ready; GetEvent() and Poll() first run that
// socket progress on the calling thread. An O_NONBLOCK fd makes GetEvent
// fail with -EAGAIN when the progress produced no event; TryGetEvent (a
// connection group's: the fd is its own) does so without reading the fd's
// flags. The events a GetEvent's own progress fires never touch the
// eventfd unless it leaves them queued (Consuming).
#ifndef RPMA_TCP_TCP_CQ_H_
#define RPMA_TCP_TCP_CQ_H_

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "provider/provider.h"
#include "tcp/event_queue.h"
#include "tcp/progress_group.h"

namespace rpma::prov::tcp {

class TcpCq;

class TcpCompletionChannel : public CompletionChannel {
 public:
  static int Create(std::unique_ptr<CompletionChannel>* out);
  int fd() const override { return group_->fd(); }
  int GetEvent(Cq** cq) override;
  int TryGetEvent(Cq** cq) override;   // a group's: the fd is its own
  void Ack(Cq*, unsigned) override {}  // TcpCq::AckEvents does nothing
  // The sockets this channel's waiters progress.
  const std::shared_ptr<ProgressGroup>& group() const { return group_; }

  void Notify(TcpCq* cq);  // queue one event for cq
  void Drop(TcpCq* cq);    // forget cq's pending events (cq destroyed)

  // While alive, this thread is about to take the channel's events itself
  // (GetEvent's own socket progress): what it fires for the channel is
  // queued uncounted (EventQueue::PushUncounted), sparing the eventfd's
  // write and read; GetEvent counts what it leaves before returning.
  class Consuming {
   public:
    explicit Consuming(TcpCompletionChannel* ch);
    ~Consuming();
    Consuming(const Consuming&) = delete;
    Consuming& operator=(const Consuming&) = delete;

   private:
    TcpCompletionChannel* const outer_;
  };

 private:
  TcpCompletionChannel() = default;
  // One progress of the sockets on this thread, then the oldest event;
  // -EAGAIN when there is none.
  int TakeAfterProgress(Cq** cq);
  std::unique_ptr<EventQueue<TcpCq*>> events_;
  std::shared_ptr<ProgressGroup> group_;
};

// Coalesces completion-channel events on this thread: while a NotifyBatch
// is alive, a TcpCq::Push that would fire its channel fires it when the
// batch ends instead (once per CQ, as it was armed once). The engine opens
// one around the frames of one socket event, so the application wakes
// once per batch of completions instead of once per completion (as a NIC
// moderates its interrupts). Not copyable; nests.
class NotifyBatch {
 public:
  NotifyBatch();
  ~NotifyBatch();  // fires what was deferred
  NotifyBatch(const NotifyBatch&) = delete;
  NotifyBatch& operator=(const NotifyBatch&) = delete;
  // Defers cq's event to the innermost batch of this thread; false when
  // none is open (fire now).
  static bool Defer(TcpCq* cq);

 private:
  NotifyBatch* const outer_;
  // A connection event fills one or two CQs (send, receive): inline, so
  // that the engine's hot path does not allocate; more go to overflow_.
  TcpCq* cqs_[4] = {};
  size_t n_ = 0;
  std::vector<TcpCq*> overflow_;
};

class TcpCq : public Cq {
 public:
  TcpCq(int cqe, TcpCompletionChannel* channel);
  ~TcpCq() override;
  int Poll(int n, struct ibv_wc* wc) override;
  int RequestNotify() override;
  void AckEvents(unsigned n) override {}
  CompletionChannel* channel() const override { return channel_; }

  // Adds one completion; fires the channel once if armed.
  void Push(const struct ibv_wc& wc);
  // Queues the channel event a Push deferred (NotifyBatch).
  void FireChannel() { channel_->Notify(this); }
  // The progress group of its channel (null without a channel).
  ProgressGroup* group() const {
    return channel_ != nullptr ? channel_->group().get() : nullptr;
  }
  const std::shared_ptr<ProgressGroup>* group_ptr() const {
    return channel_ != nullptr ? &channel_->group() : nullptr;
  }

 private:
  const size_t cqe_;
  TcpCompletionChannel* const channel_;
  std::mutex mu_;
  std::deque<struct ibv_wc> wcs_;
  bool armed_ = false;
  bool overflow_logged_ = false;
  // Strict mode (RPMA_TCP_STRICT=1 at creation): an overrun is fatal, as
  // on hardware (the CQ goes to error); every later Poll() is -EOVERFLOW.
  const bool strict_;
  bool overrun_ = false;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_CQ_H_
