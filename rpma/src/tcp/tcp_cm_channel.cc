// CM event channel; see tcp_cm_channel.h.
#include "tcp/tcp_cm_channel.h"

#include <cerrno>

namespace rpma::prov::tcp {

int CmQueue::Create(std::shared_ptr<CmQueue>* out) {
  std::shared_ptr<CmQueue> q(new CmQueue());
  int rc = EventQueue<CmEvent>::Create(&q->events_);
  if (rc != 0) return rc;
  *out = std::move(q);
  return 0;
}

int CmQueue::Get(CmEvent* ev) {
  int rc = events_->Get(ev);
  return rc == -EAGAIN ? -ENODATA : rc;
}

int CmQueue::TryGet(CmEvent* ev) {
  int rc = events_->TryGet(ev);
  return rc == -EAGAIN ? -ENODATA : rc;
}

void CmQueue::DropFor(CmId* id) {
  // Destroyed here, after the queue's lock is released.
  std::deque<CmEvent> dropped =
      events_->RemoveIf([id](const CmEvent& ev) { return ev.id == id; });
}

void CmQueue::MoveTo(CmId* id, CmQueue* to) {
  events_->MoveIf([id](const CmEvent& ev) { return ev.id == id; },
                  to->events_.get());
}

int TcpCmChannel::Create(std::unique_ptr<CmChannel>* out) {
  std::shared_ptr<CmQueue> q;
  int rc = CmQueue::Create(&q);
  if (rc != 0) return rc;
  auto ch = std::make_unique<TcpCmChannel>();
  ch->queue_ = std::move(q);
  *out = std::move(ch);
  return 0;
}

TcpCmChannel::~TcpCmChannel() {
  // Pending connect requests own new CmIds; destroying them here (outside
  // the queue lock) rejects those connections.
  std::deque<CmEvent> left = queue_->Close();
  left.clear();
}

}  // namespace rpma::prov::tcp
